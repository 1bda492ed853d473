import { INestApplication, Logger, RequestMethod } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import typeis from 'type-is';
import { AppConfig } from './config/app-config.js';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor.js';
import { EnvelopeExceptionFilter, writeError } from './common/http/exception.filter.js';
import { crossOrigin } from './common/http/cors.js';
import type { Server } from 'node:http';
import { boundLargeAnswers, configureHttpServer } from './common/http/http-server.js';
import {
  contentType,
  declaredTooLarge,
  hostHeader,
  objectBody,
  outsideApi,
  rawPaymentEvents,
  requestId,
  transferEncoding,
  utf8Only,
} from './common/http/middlewares.js';
import { AppLogger, logsRuntimeRequests, runtimeRequestLog } from './common/logging/logging.js';
import { serveConsole } from './console/console.js';
import { servePortal } from './portal/portal-pages.js';
import { PortalService } from './portal/portal.service.js';
import { AuthFailures } from './common/throttling/auth-failures.js';
import { PinoNestLogger } from './common/logging/pino-nest.js';
import { createValidationPipe } from './common/http/validation.js';
import { setupSwagger } from './common/openapi/document.js';
import { type Middleware, RuntimeFastPath } from './gate/runtime-fast-path.js';
import { RuntimeAnswerCounting } from './gate/answer-counting.js';
import { RuntimeCalls } from './gate/runtime-call.js';
import { RuntimeRefusal } from './common/http/errors.js';
import { MAX_PAYMENT_EVENT_BYTES } from './payments/payment-webhooks.controller.js';

/**
 * `all` run one after the other as one middleware, as Express would run them mounted one by one: an
 * error (passed on or thrown) skips the rest and goes to Express's error handling, and a middleware
 * that answers ends the chain. A request without a body (neither Content-Length nor
 * Transfer-Encoding: type-is's test, which the body parsers make first) runs `withoutBody`, `all`
 * but the body parsers, which would each pass it on untouched.
 */
function inOrder(all: Middleware[], withoutBody: Middleware[]): Middleware {
  return (req, res, next) => {
    const middlewares = typeis.hasBody(req) ? all : withoutBody;
    let i = 0;
    const step = (error?: unknown): void => {
      if (error) return next(error);
      const middleware = middlewares[i++];
      if (!middleware) return next();
      try {
        middleware(req, res, step);
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
}

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
  app.useLogger(new AppLogger(new PinoNestLogger()));
  // Only these end the app gracefully (in-flight requests finish); Nest's default list includes
  // SIGUSR2, which operators send for a heap snapshot (docs/operations.md, "Signals").
  app.enableShutdownHooks(['SIGTERM', 'SIGINT', 'SIGHUP']);
  configureHttpServer(app.getHttpServer() as Server, config.env.HTTP_IDLE_TIMEOUT_MS, logger);

  // Every middleware but the console and outsideApi also runs for RuntimeFastPath
  // (common/http/middlewares.ts). The console answers its own paths before outsideApi refuses them,
  // and before Nest's guards: its files are not throttled (docs/console.md).
  const consoleFiles = config.env.CONSOLE_ENABLED ? serveConsole(new Logger('Console')) : null;
  // The customer portal's pages and links (/portal/…), likewise before outsideApi and the body parsers.
  const portalPages = servePortal(app.get(PortalService), app.get(AuthFailures), new Logger('Portal'));
  // What reads request bodies: skipped by RuntimeFastPath for a call that sends none.
  const bodyParsers = [
    // A body with no length (Transfer-Encoding not ending in chunked): 400, and the connection closed.
    transferEncoding,
    // A declared length over the route's bound: 413 at once, not once the parser has drained the body.
    declaredTooLarge(MAX_PAYMENT_EVENT_BYTES, config.env.MAX_UPLOAD_BYTES),
    // Before any parser: a payment provider's event is read as bytes, whatever its type (its signature covers them).
    rawPaymentEvents(express.raw({ type: () => true, limit: MAX_PAYMENT_EVENT_BYTES })),
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
  const middlewares = [
    crossOrigin(config.env.CORS_ORIGINS),
    requestId,
    boundLargeAnswers(config.env.MAX_PENDING_ANSWER_BYTES, logger) as Middleware,
    hostHeader,
    ...(consoleFiles ? [consoleFiles] : []),
    portalPages,
    outsideApi,
    ...bodyParsers,
  ];
  // One Express layer for the lot: the router's walk from layer to layer costs more than most of them.
  app.use(
    inOrder(
      middlewares,
      middlewares.filter((middleware) => !bodyParsers.includes(middleware)),
    ),
  );
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) =>
    writeError(err, req, res, logger),
  );

  app.setGlobalPrefix('api/v1', { exclude: [{ path: 'metrics', method: RequestMethod.GET }] });
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalInterceptors(new EnvelopeInterceptor(app.get(Reflector)));
  // Runtime refusals are counted where they become answers, on both paths (gate/answer-counting.ts).
  const answers = app.get(RuntimeAnswerCounting);
  const calls = app.get(RuntimeCalls);
  const answeredError = (error: unknown, req: Request) => {
    if (error instanceof RuntimeRefusal) answers.refused(error, calls.caller(req));
  };
  app.useGlobalFilters(new EnvelopeExceptionFilter(answeredError));
  setupSwagger(app);
  // The same middlewares in the same order, but the console and outsideApi (they read Express's req.path, and the
  // runtime path is inside the API); then, like the request-line middleware (RequestLogModule), which Nest mounts after
  // these, the request line.
  if (options.runtimeFastPath !== false) {
    const served = middlewares.filter(
      (middleware) => middleware !== outsideApi && middleware !== consoleFiles && middleware !== portalPages,
    );
    if (logsRuntimeRequests(config.env)) served.push(runtimeRequestLog(config.env));
    const withoutBody = served.filter((middleware) => !bodyParsers.includes(middleware));
    RuntimeFastPath.install(app, { all: served, withoutBody }, answeredError);
  }
  return app;
}
