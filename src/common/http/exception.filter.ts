import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
  NotFoundException,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { EntityNotFoundError } from 'typeorm';
import { BODY_TOO_LARGE } from './body-limits.js';
import { Envelope, FieldErrors } from './envelope.js';
import { ApiError } from './errors.js';
import {
  databaseFailure,
  isCommitOutcomeUnknown,
  isDatabaseBusy,
  isDatabaseUnavailable,
  takenField,
} from '../../database/db-errors.js';

interface RouterLayer {
  route?: { path: string; methods: Record<string, boolean> };
  match(path: string): unknown;
}

/** Nest's own not-found handlers are catch-all routes (`*path`, or every method at once). */
type Route = { path: string; methods: Record<string, boolean> };
const isCatchAll = (route: Route): boolean =>
  String(route.path).includes('*') || Object.keys(route.methods).length > 8;

/**
 * Methods the app serves on this path, for 405 + Allow, read from Express's router (its layers are not
 * public API, and neither Nest nor Express offers the routes of a path). Kept because
 * test/e2e/foundation.e2e-spec.ts pins the 405 and its Allow header: an upgrade that changes the
 * router fails it loudly rather than quietly turning 405s into 404s.
 */
function allowedMethods(req: Request, path: string): string[] {
  // (RuntimeFastPath's requests are node's own: no req.app.)
  const stack: RouterLayer[] =
    (req.app as unknown as { router?: { stack: RouterLayer[] } } | undefined)?.router?.stack ?? [];
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || isCatchAll(layer.route)) continue;
    try {
      if (!layer.match(path)) continue;
    } catch {
      continue;
    }
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (on && method !== '_all') methods.add(method.toUpperCase());
    }
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}

const STATUS_MESSAGES: Record<number, string> = {
  400: 'Bad request.',
  401: 'Unauthenticated.',
  403: 'Forbidden.',
  404: 'Not found.',
  405: 'Method not allowed.',
  413: 'Payload too large.',
  415: 'Unsupported media type.',
  422: 'The given data was invalid.',
  429: 'Too many requests.',
};

export const DATABASE_UNAVAILABLE = 'The database is unavailable: try again in a moment.';
export const COMMIT_OUTCOME_UNKNOWN =
  'The database stopped answering while this change was being committed: it may or may not have been stored; check before sending it again.';

/** Sees every error a route answers, before it is written (the runtime refusals are counted there). */
export type AnsweredError = (exception: unknown, req: Request) => void;

/** Turns every error, ours or the framework's, into the error envelope. */
@Catch()
export class EnvelopeExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  constructor(private readonly answered: AnsweredError = () => undefined) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    this.answered(exception, req);
    writeError(exception, req, ctx.getResponse<Response>(), this.logger);
  }
}

/** Also used by the Express error handler behind the body parsers, which run before Nest's routing. */
export function writeError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  if (res.headersSent) return;
  const { status, body } = errorEnvelope(exception, req, res, logger);
  res.status(status).json(body);
}

/**
 * The status and error envelope for any error, ours or the framework's; headers that go with it
 * (Retry-After, Allow) are set on `res`. Also used by RuntimeFastPath, which writes it itself.
 */
export function errorEnvelope(
  exception: unknown,
  req: Request,
  res: Response,
  logger: Logger,
): { status: number; body: Envelope } {
  let status = HttpStatus.INTERNAL_SERVER_ERROR;
  let message = 'Internal server error.';
  let errors: FieldErrors | null = null;
  let data: Record<string, unknown> | null = null;

  if (exception instanceof ApiError) {
    status = exception.getStatus();
    message = exception.message;
    errors = exception.errors;
    data = exception.data;
    for (const [name, value] of Object.entries(exception.headers)) res.setHeader(name, value);
  } else if (exception instanceof NotFoundException && (!req.route || isCatchAll(req.route as Route))) {
    // Nest's own "no route" 404: a known path with another method is a 405.
    const path = (req.originalUrl ?? req.url).split('?')[0];
    const allow = allowedMethods(req, path);
    if (allow.length > 0) {
      status = HttpStatus.METHOD_NOT_ALLOWED;
      message = `The ${req.method} method is not supported for this route. Supported methods: ${allow.join(', ')}.`;
      res.setHeader('Allow', allow.join(', '));
    } else {
      status = HttpStatus.NOT_FOUND;
      message = `The route ${req.method} ${path} could not be found.`;
    }
  } else if (takenField(exception)) {
    // A unique value a racing write took between the service's check and this write.
    const taken = takenField(exception) as { field: string; message: string };
    status = HttpStatus.UNPROCESSABLE_ENTITY;
    message = taken.message;
    errors = { [taken.field]: [taken.message] };
  } else if (exception instanceof EntityNotFoundError) {
    // A row found at the start of a request and deleted by another before its write settled.
    status = HttpStatus.NOT_FOUND;
    message = 'Not found: it was deleted meanwhile.';
  } else if (isDatabaseBusy(exception)) {
    // Transient: the same request may well succeed in a moment, and nothing of it was stored.
    status = HttpStatus.SERVICE_UNAVAILABLE;
    message = 'The database is busy: try again in a moment.';
    res.setHeader('Retry-After', '1');
    logger.warn({ db: databaseFailure(exception), req_id: req.id }, 'Database busy');
  } else if (isDatabaseUnavailable(exception)) {
    // Unreachable, connection lost, or silent past the deadlines: nothing the request did wrong.
    status = HttpStatus.SERVICE_UNAVAILABLE;
    message = isCommitOutcomeUnknown(exception) ? COMMIT_OUTCOME_UNKNOWN : DATABASE_UNAVAILABLE;
    res.setHeader('Retry-After', '1');
    logger.warn({ db: databaseFailure(exception), req_id: req.id }, 'Database unavailable');
  } else if (
    exception instanceof HttpException &&
    exception.cause instanceof URIError &&
    exception.getStatus() === 400
  ) {
    // Express could not decode a path parameter; its own text ("Failed to decode param") names no cause.
    const sent = /'(.*)'$/.exec(exception.message)?.[1];
    message =
      sent === undefined
        ? 'The path contains an invalid percent-encoding.'
        : `The path contains an invalid percent-encoding: '${sent}'.`;
    status = HttpStatus.BAD_REQUEST;
  } else if (exception instanceof HttpException) {
    status = exception.getStatus();
    const body = exception.getResponse();
    const raw = typeof body === 'string' ? body : (body as { message?: unknown }).message;
    message = Array.isArray(raw)
      ? String(raw[0])
      : typeof raw === 'string'
        ? raw
        : (STATUS_MESSAGES[status] ?? exception.message);
  } else {
    const error = exception as { status?: number; statusCode?: number; type?: string; message?: string };
    const known = error?.status ?? error?.statusCode;
    if (typeof known === 'number' && known >= 400 && known < 500) {
      // body-parser, multer and friends: a client error with a status of its own.
      status = known;
      message = clientErrorMessage(error, known, req);
    } else {
      logger.error({ err: exception, req_id: req.id }, 'Unhandled error');
    }
  }

  return { status, body: { status: 'error', message, data, errors } };
}

function clientErrorMessage(
  error: { type?: string; message?: string; code?: string },
  status: number,
  req: Request,
): string {
  // body-parser passes zlib's own error on (Z_DATA_ERROR, ERR_BROTLI_…, ERR__ERROR_FORMAT_…) with no type.
  if (error.type === undefined && /^(Z_|ERR_BROTLI|ERR__ERROR_FORMAT|ERR_PADDING)/.test(error.code ?? '')) {
    return `The request body could not be decompressed: it is not valid ${String(
      req.headers['content-encoding'] ?? '',
    )
      .trim()
      .toLowerCase()} data (Content-Encoding).`;
  }
  switch (error.type) {
    case 'entity.parse.failed':
      return 'Malformed JSON in request body.';
    case 'entity.too.large':
      return BODY_TOO_LARGE;
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return 'Unsupported request body encoding.';
    default:
      return STATUS_MESSAGES[status] ?? 'Bad request.';
  }
}
