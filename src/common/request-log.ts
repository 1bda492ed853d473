import type { NextFunction, Request, Response } from 'express';
import { PinoLogger } from 'nestjs-pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp, type HttpLogger, type Options } from 'pino-http';
import type { AppConfig } from '../config/app-config.js';

/** At these levels every request is logged with a line of its own (pino-http's "request completed"). */
export const logsRequests = (env: AppConfig['env']): boolean => ['trace', 'debug', 'info'].includes(env.LOG_LEVEL);

/** pino-http's options: nestjs-pino's request middleware and RuntimeFastPath's are built from them. */
export function requestLogOptions(env: AppConfig['env']): Options {
  return {
    level: env.LOG_LEVEL,
    genReqId: (req) => (req as unknown as Request & { id: string }).id,
    // req.log carries only the request id; the "request completed" line keeps method and url.
    quietReqLogger: true,
    autoLogging: logsRequests(env),
    redact: ['req.headers["x-api-key"]', 'req.headers["x-license-key"]', 'req.headers.authorization'],
  };
}

/**
 * The request line for calls RuntimeFastPath answers: pino-http with the same options, on the root
 * logger nestjs-pino's own middleware writes through, and the call's logs (PinoLogger) bound to its
 * request id as nestjs-pino binds them. Built on the first call, when the app and its root logger are up.
 */
export function runtimeRequestLog(env: AppConfig['env']): (req: Request, res: Response, next: NextFunction) => void {
  let log: { write: HttpLogger<IncomingMessage, ServerResponse>; context: PinoLogger } | undefined;
  return (req, res, next) => {
    // PinoLogger is transient-scoped in Nest; an instance of our own reaches the same root and context store.
    log ??= { context: new PinoLogger({ pinoHttp: requestLogOptions(env) }), write: pinoHttp({ ...requestLogOptions(env), logger: PinoLogger.root }) };
    const { write, context } = log;
    write(req, res, () => context.runInContext(next, { bindings: { reqId: req.id } }));
  };
}
