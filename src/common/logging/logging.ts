import { Injectable, Logger, LoggerService, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { destination, type DestinationStream } from 'pino';
import { pinoHttp, type HttpLogger, type Options } from 'pino-http';
import { httpLogger, inRequestLog, requestLevel } from './pino-nest.js';
import { REDACT_PATHS, safeRequest } from './request-serializers.js';
import type { AppConfig } from '../../config/app-config.js';
import { logLinesDropped, runtimeChecks } from '../../metrics/metrics.js';
import { PeriodicTask } from '../periodic-task.js';
import { JOBS } from '../jobs.js';

type Env = AppConfig['env'];

/** At these levels every routed request is logged with a line of its own (pino-http's "request completed"). */
export const logsRequests = (env: Env): boolean => ['trace', 'debug', 'info'].includes(env.LOG_LEVEL);

/**
 * The runtime check's own request lines are written at debug only: at info it is counted, and the
 * counts are written once a minute (RuntimeActivityLog). See docs/operations.md, "Logs".
 */
export const logsRuntimeRequests = (env: Env): boolean => ['trace', 'debug'].includes(env.LOG_LEVEL);

/**
 * Log lines waiting for stdout, at most. A destination that cannot keep up (a slow pipe, a stalled
 * collector) makes lines wait here; past this they are dropped and counted rather than held in the
 * heap (a has-paid call a line at 10k calls/s outgrew a 384 MB heap in under a minute).
 */
export const LOG_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * stdout, written asynchronously (a synchronous write would stall every request behind a slow
 * reader) and bounded by LOG_BUFFER_BYTES. pino writes one line per write, so a drop is one line.
 */
export function logDestination(fd = 1, maxLength = LOG_BUFFER_BYTES): DestinationStream {
  const stream = destination({ dest: fd, sync: false, maxLength });
  stream.on('drop', () => logLinesDropped.inc());
  return stream;
}

// One per process: the first app's pino-http instance is the root (pino-nest.ts), and each destination
// registers an exit hook that flushes it.
let stdout: DestinationStream | undefined;

/** Keys of a driver or query error that carry a statement or its values (key hashes, license keys). */
const STATEMENT_KEYS = new Set(['query', 'parameters', 'sql', 'values']);

/**
 * An error as logged: its message, codes and stack, never the SQL or its parameters. MySQL's
 * duplicate-entry message quotes the value; that is masked too.
 */
export function safeError(err: unknown, depth = 0): unknown {
  if (err === null || typeof err !== 'object' || depth > 3) return err;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err as Record<string, unknown>)) {
    if (STATEMENT_KEYS.has(key)) continue;
    if (typeof value === 'string' && (key === 'message' || key === 'sqlMessage' || key === 'stack'))
      out[key] = maskValues(value);
    else if (value !== null && typeof value === 'object' && !Array.isArray(value))
      out[key] = safeError(value, depth + 1);
    else out[key] = value;
  }
  return out;
}

const maskValues = (text: string) =>
  text.replace(/Duplicate entry '.*?' for key/gs, "Duplicate entry '[redacted]' for key");

/** pino-http's options: the request-line middleware (pino-nest.ts) and RuntimeFastPath's are built from them. */
export function requestLogOptions(env: Env): Options {
  return {
    level: env.LOG_LEVEL,
    genReqId: (req) => (req as unknown as Request & { id: string }).id,
    // req.log carries only the request id; the "request completed" line keeps method and url.
    quietReqLogger: true,
    autoLogging: logsRequests(env),
    customLogLevel: (req, res, err) => requestLevel(req, res, err ?? undefined),
    serializers: { req: safeRequest, err: safeError },
    redact: REDACT_PATHS,
  };
}

/** The options and the bounded destination, as RequestLogModule takes them. */
export const pinoHttpParams = (env: Env): [Options, DestinationStream] => [
  requestLogOptions(env),
  (stdout ??= logDestination()),
];

/**
 * The request line for calls RuntimeFastPath answers: pino-http with the same options, on the root
 * logger the routed requests' middleware writes through, and the call's logs bound to its request id
 * as theirs are. Built on the first call, when the app and its root logger are up.
 */
export function runtimeRequestLog(env: Env): (req: Request, res: Response, next: NextFunction) => void {
  let write: HttpLogger<IncomingMessage, ServerResponse> | undefined;
  return (req, res, next) => {
    write ??= pinoHttp({ ...requestLogOptions(env), logger: httpLogger().logger });
    write(req, res, () => inRequestLog(req.id, next));
  };
}

/**
 * Once a minute, at info, what the runtime check answered meanwhile (by outcome) and how many log
 * lines were dropped: what a line per call would have said, at one line a minute. Read from the
 * Prometheus counters, so the runtime path does nothing extra for it.
 */
@Injectable()
export class RuntimeActivityLog implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RuntimeActivity');
  private readonly task = new PeriodicTask({
    ...JOBS.runtimeSummary,
    logger: this.logger,
    run: () => this.write(),
  });
  private last = new Map<string, number>();

  onModuleInit(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /** What changed since the last call: runtime checks by outcome (paid, unpaid, refused_403, …) and dropped lines. */
  async sinceLast(): Promise<{ runtime_checks: Record<string, number>; log_lines_dropped: number }> {
    const now = new Map<string, number>();
    for (const { labels, value } of (await runtimeChecks.get()).values)
      now.set(String(labels.outcome), value);
    const dropped = (await logLinesDropped.get()).values[0]?.value ?? 0;
    const checks: Record<string, number> = {};
    for (const [outcome, value] of now) {
      const delta = value - (this.last.get(outcome) ?? 0);
      if (delta > 0) checks[outcome] = delta;
    }
    const summary = { runtime_checks: checks, log_lines_dropped: dropped - this.lastDropped };
    this.last = now;
    this.lastDropped = dropped;
    return summary;
  }

  private lastDropped = 0;

  async write(): Promise<void> {
    const summary = await this.sinceLast();
    if (Object.keys(summary.runtime_checks).length === 0 && summary.log_lines_dropped === 0) return;
    this.logger.log(summary, 'Runtime checks answered in the last minute');
  }
}

/** Nest's own start-up lines, written at debug: modules initialised, routes mapped, "successfully started". */
const START_UP_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RouterExplorer', 'NestApplication']);

/**
 * The app's logger (PinoNestLogger), with Nest's start-up chatter moved out of the way: at info,
 * start-up is one line, the one main.ts writes with where the API and its docs are. Nest's
 * RoutesResolver lines are dropped at every level: they name each controller under the global prefix
 * even where its routes are excluded from it (/api/v1/metrics for GET /metrics); RouterExplorer's
 * "Mapped {…}" lines (debug) say each route as served. Nest's error line for a port in use is dropped
 * too: main.ts says it in one line of its own.
 */
export class AppLogger implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = params.at(-1);
    if (context === 'RoutesResolver') return;
    if (typeof context === 'string' && START_UP_CONTEXTS.has(context)) this.inner.debug?.(message, ...params);
    else this.inner.log(message, ...params);
  }

  error(message: unknown, ...params: unknown[]): void {
    if (params.at(-1) === 'NestApplication' && /\bEADDRINUSE\b/.test(String(message))) return;
    this.inner.error(message, ...params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.inner.warn(message, ...params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.inner.debug?.(message, ...params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.inner.verbose?.(message, ...params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.inner.fatal?.(message, ...params);
  }
}
