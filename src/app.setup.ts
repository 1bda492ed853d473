import { INestApplication, Logger, RequestMethod } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import cors from 'cors';
import express, { NextFunction, Request, Response } from 'express';
import { isUtf8 } from 'node:buffer';
import typeis from 'type-is';
import { Logger as PinoLogger } from 'nestjs-pino';
import { AppConfig } from './config/app-config.js';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor.js';
import { EnvelopeExceptionFilter, writeError } from './common/http/exception.filter.js';
import { ApiError, ValidationFailed } from './common/http/errors.js';
import { boundLargeAnswers, configureHttpServer, requestIdFrom } from './common/http/http-server.js';
import { logsRuntimeRequests, runtimeRequestLog } from './common/logging/logging.js';
import { unpairedSurrogates } from './common/http/unicode.js';
import { createValidationPipe } from './common/http/validation.js';
import { setupSwagger } from './openapi.js';
import { type Middleware, RuntimeFastPath } from './payments/runtime-fast-path.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Request id: echoed when the client sent a sane one, generated otherwise. */
function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = requestIdFrom(req.headers);
  (req as { id?: string }).id = id;
  res.setHeader('X-Request-Id', id);
  next();
}

/** HTTP/1.1 requires Host; node's own check answers outside the envelope, so it is made here instead. */
function hostHeader(req: Request, _res: Response, next: NextFunction): void {
  if (req.headers.host === undefined && req.httpVersion === '1.1') return next(new ApiError(400, 'The Host header is required.'));
  next();
}

/** JSON-first: a body must be JSON, or multipart where an endpoint takes files. */
function contentType(req: Request, _res: Response, next: NextFunction): void {
  if (!BODY_METHODS.has(req.method)) return next();
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || typeis(req, ['application/json', 'application/*+json', 'multipart/form-data'])) return next();
  next(new ApiError(415, 'Unsupported content type: send application/json (or multipart/form-data where a file is uploaded).'));
}

/** A UTF-8 body must be UTF-8: decoding would quietly turn each bad byte into U+FFFD, and store that. */
function utf8Only(_req: unknown, _res: unknown, body: Buffer, encoding: string | null): void {
  if (encoding === 'utf-8' && !isUtf8(body)) throw new ApiError(400, 'The request body is not valid UTF-8.');
}

const MAX_BODY_DEPTH = 32;

/** How deep a parsed JSON value nests, counted without recursion (the value may nest thousands deep). */
function depthOver(value: unknown, limit: number): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > limit) return true;
    const next: unknown[] = [];
    for (const item of level) {
      if (item !== null && typeof item === 'object') for (const child of Object.values(item)) next.push(child);
    }
    level = next;
  }
  return false;
}

/**
 * Every JSON body is an object: arrays and scalars are refused before any handler sees them, and so
 * is nesting deeper than any DTO goes (the validation pipe would recurse through it and overflow),
 * and a string with an unpaired surrogate (README "API overview").
 */
function objectBody(req: Request, _res: Response, next: NextFunction): void {
  if (BODY_METHODS.has(req.method) && req.body !== undefined && typeis(req, ['application/json', 'application/*+json'])) {
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
      return next(new ApiError(400, 'The request body must be a JSON object.'));
    }
    if (depthOver(req.body, MAX_BODY_DEPTH)) return next(new ApiError(400, `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`));
    // Anywhere in the body, fields a route ignores included: what is not valid text is refused, not mended.
    const unpaired = unpairedSurrogates(req.body);
    if (unpaired) return next(new ValidationFailed(unpaired));
  }
  next();
}

/** Paths outside the API's roots never reach Nest's router; answer them in the envelope too. */
const SERVED = /^\/(api\/v1(\/|$)|api\/docs|metrics$)/;
function outsideApi(req: Request, _res: Response, next: NextFunction): void {
  if (SERVED.test(req.path)) return next();
  next(new ApiError(404, `The route ${req.method} ${req.path} could not be found.`));
}

/**
 * Everything main.ts and the e2e tests share: prefix, parsers, pipes, the envelope pair, docs.
 * The app must be created with `bodyParser: false` so that parse errors reach our handler.
 */
export function setupApp(app: INestApplication, options: { runtimeFastPath?: boolean } = {}): INestApplication {
  const config = app.get(AppConfig);
  const express_ = app as NestExpressApplication;
  const logger = new Logger('Http');

  express_.disable('x-powered-by');
  // No ETag: answers are envelopes read by programs, not cached pages, and Express would hash every
  // body (SHA-1, on the runtime path too) and turn a matching If-None-Match into a body-less 304.
  express_.set('etag', false);
  if (config.env.TRUST_PROXY) express_.set('trust proxy', true);
  app.useLogger(app.get(PinoLogger));
  // Only these end the app gracefully (in-flight requests finish); Nest's default list includes
  // SIGUSR2, which operators send for a heap snapshot (README "Signals").
  app.enableShutdownHooks(['SIGTERM', 'SIGINT', 'SIGHUP']);
  configureHttpServer(app.getHttpServer(), config.env.HTTP_IDLE_TIMEOUT_MS, logger);

  // SDKs run on customers' sites, so the API answers cross-origin calls (preflights included).
  // Credentials travel in headers, never cookies, so `*` is answered as `*`: the same headers for
  // every caller and no `Vary: Origin`. A list is matched and the allowed origin echoed.
  // (The same cors() middleware Nest's enableCors mounts, kept here so RuntimeFastPath runs it too.)
  const crossOrigin = cors({
    origin: config.env.CORS_ORIGINS === '*' ? '*' : config.env.CORS_ORIGINS.split(',').map((o) => o.trim()),
    methods: 'GET,HEAD,POST,PUT,PATCH,DELETE',
    allowedHeaders: 'Accept,Content-Type,X-API-KEY,X-LICENSE-KEY,X-Service-Domain,X-Request-Id',
    exposedHeaders: 'X-Request-Id,Retry-After',
    maxAge: 600,
  });
  // Every middleware but outsideApi also runs for RuntimeFastPath, on node's own request and response:
  // they use only what node gives (headers, setHeader) and helpers such as type-is, not req.is/req.get.
  const middlewares = [
    crossOrigin,
    requestId,
    boundLargeAnswers(config.env.MAX_PENDING_ANSWER_BYTES, logger) as Middleware,
    hostHeader,
    outsideApi,
    contentType,
    express.json({ limit: config.env.MAX_UPLOAD_BYTES, type: ['application/json', 'application/*+json'], verify: utf8Only }),
    objectBody,
  ];
  for (const middleware of middlewares) app.use(middleware);
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => writeError(err, req, res, logger));

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
