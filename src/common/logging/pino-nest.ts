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
import type { DestinationStream, Logger as Pino } from 'pino';
import { pinoHttp, type HttpLogger, type Options } from 'pino-http';

/**
 * Nest's logger and the request line on pino and pino-http directly (what nestjs-pino did; its
 * releases need Node 22.12). One pino-http instance per process, built by the first app: its logger is
 * the root every line derives from. While a request runs, lines go through the request's child logger,
 * which carries its request id (`reqId`).
 */
let http: HttpLogger | undefined;
const requestLogger = new AsyncLocalStorage<Pino>();

/** The process's pino-http instance; the first call's options and destination win. */
export function httpLogger(options?: Options, destination?: DestinationStream): HttpLogger {
  http ??= destination ? pinoHttp(options, destination) : pinoHttp(options);
  return http;
}

/** The logger every line goes through: the request's while one runs, else the root. */
export const currentLogger = (): Pino => requestLogger.getStore() ?? httpLogger().logger;

/** Runs `next` with the root's child bound to `reqId` as the request's logger. */
export function inRequestLog(reqId: unknown, next: () => void): void {
  requestLogger.run(httpLogger().logger.child({ reqId }), next);
}

/** The request line (pino-http's "request completed"), then the rest of the request in its log context. */
function requestLine(req: Request, res: Response, next: NextFunction): void {
  httpLogger()(req, res, () => requestLogger.run(req.log, next));
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
