import {
  type DynamicModule,
  type LoggerService,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  RequestMethod,
} from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DestinationStream, Logger as Pino } from 'pino';
import { pinoHttp, type HttpLogger, type Options } from 'pino-http';
import { lineRequest, lineResponse } from './request-serializers.js';

/**
 * Nest's logger and the request line on pino and pino-http directly (what nestjs-pino did; its
 * releases need Node 22.12). One pino-http instance per process, built by the first app: its logger is
 * the root every line derives from. While a request runs, lines go through the request's child logger,
 * which carries its request id (`reqId`).
 */
let http: HttpLogger | undefined;

/** A request's log context: its id, and the child logger bound to it once a line needs it. */
interface RequestLog {
  reqId: unknown;
  log?: Pino;
}
const requestLogger = new AsyncLocalStorage<RequestLog>();

/** The process's pino-http instance; the first call's options and destination win. */
export function httpLogger(options?: Options, destination?: DestinationStream): HttpLogger {
  http ??= destination ? pinoHttp(options, destination) : pinoHttp(options);
  return http;
}

/**
 * The logger every line goes through: the request's while one runs (made on its first line: most
 * requests write none but their request line), else the root.
 */
export function currentLogger(): Pino {
  const store = requestLogger.getStore();
  if (!store) return httpLogger().logger;
  return (store.log ??= httpLogger().logger.child({ reqId: store.reqId }));
}

/** Runs `next` with the request's id as its log context. */
export function inRequestLog(reqId: unknown, next: () => void): void {
  requestLogger.run({ reqId }, next);
}

const RUNTIME_CHECK = /^\/api\/v1\/project\/has-paid\/?(\?|$)/i;

/** A request line's level: error for a failure or a 5xx, debug for the runtime check, else info. */
export function requestLevel(
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
): 'error' | 'debug' | 'info' {
  if (err !== undefined || res.statusCode >= 500) return 'error';
  return RUNTIME_CHECK.test(req.url ?? '') ? 'debug' : 'info';
}

/**
 * The request line, as pino-http writes it ("request completed", "request aborted", or "request
 * errored" with `err` at error for a 5xx), written through the root logger once the answer is done.
 * pino-http itself would make two child loggers per request and serialise the request into one of
 * them before knowing whether the line is written: as much CPU as the rest of a management call
 * (docs/benchmarks.md).
 */
function requestLine(req: Request, res: Response, next: NextFunction): void {
  const started = Date.now();
  const done = (err?: unknown): void => {
    res.removeListener('close', done);
    res.removeListener('finish', done);
    res.removeListener('error', done);
    writeRequestLine(req, res, started, err);
  };
  res.on('close', done);
  res.on('finish', done);
  res.on('error', done);
  inRequestLog(req.id, next);
}

/**
 * `root` with the request line's own `req` and `res` serializers, which make the same fields with the
 * same redactions as pino-http's serializers and pino's redaction paths, in one step
 * (request-serializers.ts).
 */
export const requestLineLogger = (root: Pino): Pino =>
  root.child({}, { serializers: { req: lineRequest, res: lineResponse }, redact: [] });

let lines: { root: Pino; logger: Pino } | undefined;

function lineLogger(): Pino {
  const root = httpLogger().logger;
  if (lines?.root !== root) lines = { root, logger: requestLineLogger(root) };
  return lines.logger;
}

function writeRequestLine(req: Request, res: Response, started: number, err: unknown): void {
  const logger = lineLogger();
  const level = requestLevel(req, res, err);
  if (!logger.isLevelEnabled(level)) return;
  const responseTime = Date.now() - started;
  if (level === 'error') {
    const error = err ?? new Error(`failed with status code ${res.statusCode}`);
    logger.error({ reqId: req.id, req, res, err: error, responseTime }, 'request errored');
    return;
  }
  const message = !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted';
  logger[level]({ reqId: req.id, req, res, responseTime }, message);
}

/** Mounts the request line on every route when `mounted` (at levels that write it). */
@Module({})
export class RequestLogModule implements NestModule {
  private static mounted = false;

  static forRoot(params: [Options, DestinationStream], mounted: boolean): DynamicModule {
    httpLogger(...params);
    RequestLogModule.mounted = mounted;
    return { module: RequestLogModule };
  }

  configure(consumer: MiddlewareConsumer): void {
    // path-to-regexp v8 (Express 5) has no bare `*`; with the global prefix this is `/api/v1{/*splat}`.
    if (RequestLogModule.mounted)
      consumer.apply(requestLine).forRoutes({ path: '{/*splat}', method: RequestMethod.ALL });
  }
}

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * Nest's LoggerService on pino, as nestjs-pino mapped it: the last extra argument is the context
 * (`context`), an object message is merged into the line (an Error becomes `err`), and Nest's
 * exception handlers' `error(message, stack)` becomes an `err` with that stack.
 */
export class PinoNestLogger implements LoggerService {
  verbose(message: unknown, ...params: unknown[]): void {
    this.call('trace', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.call('debug', message, params);
  }
  log(message: unknown, ...params: unknown[]): void {
    this.call('info', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.call('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.call('error', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.call('fatal', message, params);
  }

  private call(level: Level, message: unknown, optional: unknown[]): void {
    const logger = currentLogger();
    const fields: Record<string, unknown> = {};
    let rest: unknown[] = [];
    if (optional.length > 0) {
      fields.context = optional[optional.length - 1];
      rest = optional.slice(0, -1);
    }
    if (typeof message === 'object' && message !== null) {
      if (message instanceof Error) fields.err = message;
      else Object.assign(fields, message);
      logger[level](fields, ...(rest as [string?]));
    } else if (
      level === 'error' &&
      typeof message === 'string' &&
      rest.length === 1 &&
      typeof rest[0] === 'string' &&
      /\n\s*at /.test(rest[0])
    ) {
      const err = new Error(message);
      err.stack = rest[0];
      logger[level]({ ...fields, err });
    } else {
      logger[level](fields, String(message), ...rest);
    }
  }
}
