import { INestApplication, Logger, ValidationPipe } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import type { Express, NextFunction, Request, Response } from 'express';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import parseurl from 'parseurl';
import proxyaddr from 'proxy-addr';
import { andThen } from '../common/maybe-promise.js';
import { type LicensedRequest, LicenseKeyGuard } from './license-key.guard.js';
import { EnvelopeInterceptor, successEnvelope } from '../common/http/envelope.interceptor.js';
import type { Envelope } from '../common/http/envelope.js';
import {
  type AnsweredError,
  EnvelopeExceptionFilter,
  errorEnvelope,
} from '../common/http/exception.filter.js';
import { ThrottleGuard } from '../common/throttling/throttle.guard.js';
import { RecordUsageDto } from '../plans/dto/usage.dto.js';
import { HasPaidController } from './has-paid.controller.js';
import { LicenseUsageController } from './license-usage.controller.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { RuntimeCalls } from './runtime-call.js';

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/** The app's middlewares in their order (`all`), and the same without the body parsers (`withoutBody`). */
export interface RuntimeMiddlewares {
  all: Middleware[];
  withoutBody: Middleware[];
}

/**
 * No body, as the body parsers would see it: neither Transfer-Encoding nor Content-Length, or a
 * Content-Length of 0 with no Content-Type or Content-Encoding for them to check (what fetch and
 * browsers send for a POST without a body).
 */
function hasNoBody(req: IncomingMessage): boolean {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined) return false;
  const length = headers['content-length'];
  return (
    length === undefined ||
    (length === '0' && headers['content-type'] === undefined && headers['content-encoding'] === undefined)
  );
}

const PATH = '/api/v1/project/has-paid';
/**
 * The Nest route this one answers for: its ThrottleAs class counts the call (ThrottleGuard plans by
 * handler), so both are counted by one allowance.
 */
// eslint-disable-next-line @typescript-eslint/unbound-method -- only a key for the throttler's plan, never called
const ROUTE = HasPaidController.prototype.hasPaid;

const USAGE_PATH = '/api/v1/license/usage';
// eslint-disable-next-line @typescript-eslint/unbound-method -- a key for the throttler's plan; called bound
const USAGE_ROUTE = LicenseUsageController.prototype.record;

/** What the route's code reads of a request: Express defines these as getters, this path sets them. */
type RuntimeRequest = IncomingMessage & { ip?: string; query?: unknown; body?: unknown };

/**
 * `POST /api/v1/project/has-paid`, the call SDKs make thousands of times a second, as a plain
 * `node:http` handler ahead of Express (docs/architecture.md#how-the-runtime-check-is-served).
 *
 * Measured here, Express's per-request work (swapping in its request and response prototypes, the
 * router walking every layer, res.json) costs more than the whole check: a one-route Express app
 * does under half the requests of the same handler on node:http. This handler runs the app's
 * middlewares in their order (app.setup.ts: CORS, request id, the large-answer budget, Host, and for a
 * call with a body its length, content type, JSON body, object body), counts the call
 * (ThrottleGuard), finds the license (LicenseKeyGuard.find), asks the gate and answers its verdict
 * (RuntimeAnswers.hasPaid, as HasPaidController.hasPaid does), and writes the success envelope or
 * the exception filter's envelope for every error. Express's `req.ip` and `req.query` are computed
 * once with Express's own trust and query-parser settings.
 *
 * `POST /api/v1/license/usage` is served alike (recordUsage), for the same reason.
 *
 * Every other request, and these under another spelling of their path (trailing slash, other case),
 * go to Express. `install` refuses to start when the app has a global guard, interceptor, filter or
 * hook this handler does not run, so the two cannot drift apart unnoticed.
 */
export class RuntimeFastPath {
  private readonly logger = new Logger('Exceptions');
  private readonly trust: (addr: string, i: number) => boolean;
  private readonly parseQuery: (query: string | null) => unknown;

  private constructor(
    express: Express,
    private readonly middlewares: RuntimeMiddlewares,
    private readonly throttle: ThrottleGuard,
    private readonly licenses: LicenseKeyGuard,
    private readonly payments: RuntimeAnswers,
    private readonly calls: RuntimeCalls,
    private readonly usage: LicenseUsageController,
    private readonly validation: ValidationPipe,
    private readonly answered: AnsweredError,
  ) {
    this.trust = express.get('trust proxy fn') as typeof this.trust;
    const parseQuery = express.get('query parser fn') as ((query: string | null) => unknown) | undefined;
    this.parseQuery = parseQuery ?? (() => ({}));
  }

  /** Serves the runtime check ahead of Express on `app`'s HTTP server. */
  static install(app: INestApplication, middlewares: RuntimeMiddlewares, answered: AnsweredError): void {
    const { throttle, validation } = assertGlobalEnhancers(app);
    const route = new RuntimeFastPath(
      app.getHttpAdapter().getInstance() as Express,
      middlewares,
      throttle,
      app.get(LicenseKeyGuard),
      app.get(RuntimeAnswers),
      app.get(RuntimeCalls),
      app.get(LicenseUsageController),
      validation,
      answered,
    );
    const server = app.getHttpServer() as Server;
    const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
    if (listeners.length !== 1)
      throw new Error(`RuntimeFastPath: expected one request listener, found ${listeners.length}.`);
    const [routed] = listeners;
    server.removeListener('request', routed);
    const hasPaid = (req: RuntimeRequest, res: ServerResponse) => route.hasPaid(req, res);
    const usage = (req: RuntimeRequest, res: ServerResponse) => route.recordUsage(req, res);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.method !== 'POST') routed(req, res);
      else if (isPath(req.url, PATH)) route.serve(req, res, hasPaid);
      else if (isPath(req.url, USAGE_PATH)) route.serve(req, res, usage);
      else routed(req, res);
    });
  }

  private serve(
    req: RuntimeRequest,
    res: ServerResponse,
    handle: (req: RuntimeRequest, res: ServerResponse) => void,
  ): void {
    try {
      req.ip = proxyaddr(req, this.trust);
      // What Express's req.query parses: parseurl's query (after the first `?`, and before a `#`:
      // a URL with a fragment goes through url.parse, which leaves the fragment out).
      const query = parseurl(req)?.query;
      req.query = this.parseQuery(typeof query === 'string' ? query : null);
    } catch (error) {
      return this.fail(error, req, res);
    }
    // A call without a body (the SDKs send none) skips the body parsers, which would find nothing to
    // parse: without them it is answered in the same turn of the event loop it arrived in.
    const middlewares = hasNoBody(req) ? this.middlewares.withoutBody : this.middlewares.all;
    let index = 0;
    const next = (error?: unknown): void => {
      if (error) return this.fail(error, req, res); // as Express: a falsy error is none
      const middleware = middlewares[index++];
      if (middleware === undefined) return handle(req, res);
      try {
        middleware(req as Request, res as Response, next);
      } catch (thrown) {
        this.fail(thrown, req, res);
      }
    };
    next();
  }

  /**
   * Counts the call, finds the license, answers the gate's verdict, in Nest's order (the global guard,
   * the route's guard, the handler): each step's answer is used at once when it gives one (a warm
   * license: no promise at all), awaited when it gives a promise (common/maybe-promise.ts).
   */
  private hasPaid(req: RuntimeRequest, res: ServerResponse): void {
    this.answer(req, res, () =>
      andThen(this.throttle.count(req, res, ROUTE, HasPaidController), () =>
        andThen(this.licenses.find(req, res), (entry) =>
          this.payments.hasPaid(entry, (allowConfigs) => this.calls.hasPaid(req as Request, allowConfigs)),
        ),
      ),
    );
  }

  /**
   * `POST /api/v1/license/usage` in Nest's order: the global guard, the route's guard (which hands
   * the license over in `req.runtime`), the global ValidationPipe on the body, the handler
   * (LicenseUsageController.record, the same method the routed call runs). Measured, Express and
   * Nest's per-request machinery cost more than the count's unit of work itself.
   */
  private recordUsage(req: RuntimeRequest, res: ServerResponse): void {
    this.answer(req, res, () =>
      andThen(this.throttle.count(req, res, USAGE_ROUTE, LicenseUsageController), () =>
        andThen(this.licenses.find(req, res), async (entry) => {
          (req as LicensedRequest).runtime = entry;
          const body = (await this.validation.transform(req.body, {
            type: 'body',
            metatype: RecordUsageDto,
          })) as RecordUsageDto;
          return this.usage.record(req as LicensedRequest, body);
        }),
      ),
    );
  }

  /** Writes what `work` answers, at once when it answers at once, or the error envelope. */
  private answer(req: RuntimeRequest, res: ServerResponse, work: () => unknown): void {
    try {
      const answer = work();
      if (answer instanceof Promise)
        answer.then(
          (result) => this.respond(req, res, result),
          (error: unknown) => this.fail(error, req, res),
        );
      else this.respond(req, res, answer);
    } catch (error) {
      this.fail(error, req, res);
    }
  }

  private respond(req: RuntimeRequest, res: ServerResponse, result: unknown): void {
    try {
      send(res, 200, successEnvelope(result));
    } catch (error) {
      this.fail(error, req, res);
    }
  }

  /**
   * The error envelope. Nothing sits above this handler to catch what writing it throws (Express's
   * final handler does so for routed calls), so a failure here answers a plain 500 instead of leaving
   * the call hanging and the rejection unhandled.
   */
  private fail(error: unknown, req: RuntimeRequest, res: ServerResponse): void {
    if (res.headersSent) return;
    try {
      this.answered(error, req as Request);
      const { status, body } = errorEnvelope(error, req as Request, res as Response, this.logger);
      send(res, status, body);
    } catch (writing) {
      this.logger.error({ err: writing, req_id: (req as Request).id }, 'Could not write the error answer');
      if (res.headersSent) return void res.destroy();
      for (const name of res.getHeaderNames())
        if (name !== 'x-request-id' && !name.startsWith('access-control-')) res.removeHeader(name);
      send(res, 500, { status: 'error', message: 'Internal server error.', data: null, errors: null });
    }
  }
}

/** What Express's res.status(status).json(body) writes for a POST. */
function send(res: ServerResponse, status: number, body: Envelope): void {
  if (res.headersSent) return;
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

function isPath(url: string | undefined, path: string): boolean {
  if (url === undefined || !url.startsWith(path)) return false;
  return url.length === path.length || url.charCodeAt(path.length) === 63; /* ? */
}

/**
 * The app's global enhancers must be the ones this handler stands in for (the throttle guard, the
 * envelope, the envelope filter); returns the global ThrottleGuard. Reads ApplicationConfig's getters
 * (exported by @nestjs/core, not documented): test/e2e/runtime-fast-path.e2e-spec.ts pins that setupApp
 * refuses to start when the app gains what this handler does not run, so an upgrade that moves them
 * fails loudly, at start. The route's own decorators are HasPaidController's, read by nothing here:
 * the parity suite compares every answer of both routes.
 */
function assertGlobalEnhancers(app: INestApplication): {
  throttle: ThrottleGuard;
  validation: ValidationPipe;
} {
  const config = app.get(ApplicationConfig);
  const problems: string[] = [];
  // A singleton APP_GUARD is held as an instance among the global guards.
  const globalGuards = config.getGlobalGuards();
  if (globalGuards.length !== 1 || !(globalGuards[0] instanceof ThrottleGuard))
    problems.push('global guards other than ThrottleGuard');
  const interceptors = config.getGlobalInterceptors();
  if (interceptors.length !== 1 || !(interceptors[0] instanceof EnvelopeInterceptor))
    problems.push('global interceptors other than the envelope');
  const filters = config.getGlobalFilters();
  if (filters.length !== 1 || !(filters[0] instanceof EnvelopeExceptionFilter))
    problems.push('global filters other than the envelope filter');
  const pipes = config.getGlobalPipes();
  if (pipes.length !== 1 || !(pipes[0] instanceof ValidationPipe))
    problems.push('global pipes other than the ValidationPipe');
  for (const kind of ['Guards', 'Interceptors', 'Pipes', 'Filters'] as const) {
    if (config[`getGlobalRequest${kind}`]().length > 0)
      problems.push(`request-scoped global ${kind.toLowerCase()}`);
  }
  if (config.getGlobalPreRequestHooks().length > 0) problems.push('pre-request hooks');
  if (problems.length > 0)
    throw new Error(`RuntimeFastPath cannot answer ${PATH}: it does not run ${problems.join(', ')}.`);
  return { throttle: globalGuards[0] as ThrottleGuard, validation: pipes[0] as ValidationPipe };
}
