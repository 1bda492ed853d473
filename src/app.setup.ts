import { INestApplication, Logger, RequestMethod } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import { Logger as PinoLogger } from 'nestjs-pino';
import { AppConfig } from './config/app-config.js';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor.js';
import { EnvelopeExceptionFilter, writeError } from './common/http/exception.filter.js';
import { crossOrigin } from './common/http/cors.js';
import { boundLargeAnswers, configureHttpServer } from './common/http/http-server.js';
import {
  contentType,
  hostHeader,
  objectBody,
  outsideApi,
  requestId,
  utf8Only,
} from './common/http/middlewares.js';
import { AppLogger, logsRuntimeRequests, runtimeRequestLog } from './common/logging/logging.js';
import { createValidationPipe } from './common/http/validation.js';
import { setupSwagger } from './common/openapi/document.js';
import { type Middleware, RuntimeFastPath } from './payments/runtime-fast-path.js';

/**
 * Everything main.ts and the e2e tests share: prefix, parsers, pipes, the envelope pair, docs.
 * The app must be created with `bodyParser: false` so that parse errors reach our handler.
 */
export function setupApp(
  app: INestApplication,
  options: { runtimeFastPath?: boolean } = {},
): INestApplication {
  const config = app.get(AppConfig);
  const express_ = app as NestExpressApplication;
  const logger = new Logger('Http');

  express_.disable('x-powered-by');
  // No ETag: answers are envelopes read by programs, not cached pages, and Express would hash every
  // body (SHA-1, on the runtime path too) and turn a matching If-None-Match into a body-less 304.
  express_.set('etag', false);
  // The client address: the first X-Forwarded-For address not trusted, from the right (docs/security.md).
  if (config.trustProxy !== false) express_.set('trust proxy', config.trustProxy);
  app.useLogger(new AppLogger(app.get(PinoLogger)));
  // Only these end the app gracefully (in-flight requests finish); Nest's default list includes
  // SIGUSR2, which operators send for a heap snapshot (README "Signals").
  app.enableShutdownHooks(['SIGTERM', 'SIGINT', 'SIGHUP']);
  configureHttpServer(app.getHttpServer(), config.env.HTTP_IDLE_TIMEOUT_MS, logger);

  // Every middleware but outsideApi also runs for RuntimeFastPath (common/http/middlewares.ts).
  const middlewares = [
    crossOrigin(config.env.CORS_ORIGINS),
    requestId,
    boundLargeAnswers(config.env.MAX_PENDING_ANSWER_BYTES, logger) as Middleware,
    hostHeader,
    outsideApi,
    contentType,
    // strict: false lets a JSON string, number or null parse, so that objectBody says what is wrong with it.
    express.json({
      limit: config.env.MAX_UPLOAD_BYTES,
      type: ['application/json', 'application/*+json'],
      verify: utf8Only,
      strict: false,
    }),
    objectBody,
  ];
  for (const middleware of middlewares) app.use(middleware);
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) =>
    writeError(err, req, res, logger),
  );

  app.setGlobalPrefix('api/v1', { exclude: [{ path: 'metrics', method: RequestMethod.GET }] });
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalInterceptors(new EnvelopeInterceptor(app.get(Reflector)));
  app.useGlobalFilters(new EnvelopeExceptionFilter());
  setupSwagger(app);
  // The same middlewares in the same order, but outsideApi (it reads Express's req.path, and the
  // runtime path is inside the API); then, like nestjs-pino's middleware, which Nest mounts after
  // these, the request line.
  if (options.runtimeFastPath !== false) {
    const served = middlewares.filter((middleware) => middleware !== outsideApi);
    if (logsRuntimeRequests(config.env)) served.push(runtimeRequestLog(config.env));
    RuntimeFastPath.install(app, served);
  }
  return app;
}
