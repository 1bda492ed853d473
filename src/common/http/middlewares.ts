import type { NextFunction, Request, Response } from 'express';
import { isUtf8 } from 'node:buffer';
import typeis from 'type-is';
import { ApiError, ValidationFailed } from './errors.js';
import { closeIfBodyLingers, INVALID_TRANSFER_ENCODING, requestIdFrom } from './http-server.js';
import { BODY_TOO_LARGE, multipartTooLarge, OTHER_FIELDS_BYTES } from './body-limits.js';
import { unpairedSurrogates } from './unicode.js';

/*
 * The request middlewares setupApp mounts, in its order. Every one but outsideApi also runs for the
 * runtime fast path, on node's own request and response: they use only what node gives (headers,
 * setHeader) and helpers such as type-is, not Express's req.is or req.get.
 */

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Request id: echoed when the client sent a sane one, generated otherwise. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = requestIdFrom(req.headers);
  (req as { id?: string }).id = id;
  res.setHeader('X-Request-Id', id);
  next();
}

/** HTTP/1.1 requires one Host; node's own check answers outside the envelope, so it is made here instead. */
export function hostHeader(req: Request, _res: Response, next: NextFunction): void {
  if (req.headers.host === undefined && req.httpVersion === '1.1')
    return next(new ApiError(400, 'The Host header is required.'));
  // node keeps the first of several and drops the rest; a proxy in front may have read another (RFC 9112 3.2: 400).
  if (req.headers.host !== undefined && hostCount(req.rawHeaders) > 1)
    return next(new ApiError(400, 'The Host header must be sent once.'));
  next();
}

function hostCount(raw: string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') count++;
  return count;
}

/**
 * The endpoints that take a file (POST and PUT of injectables): only their routes read multipart.
 * Elsewhere a form would reach the route unread, and be answered with a 422 about fields it did send.
 */
const TAKES_FILES = /^\/api\/v1\/project\/[^/?#]+\/injectables(\/[^/?#]+)?\/?(\?|#|$)/i;
const takesFiles = (req: Request) => req.method !== 'PATCH' && TAKES_FILES.test(req.url ?? '');

/**
 * The endpoint payment providers post their events to (src/payments/): its body is read raw,
 * whatever its content type, by rawPaymentEvents, before this list's parsers, so that the provider's
 * signature is checked over the bytes it signed; the JSON checks below leave that body alone.
 */
export const PAYMENT_EVENTS = /^\/api\/v1\/payments\/[^/?#]+\/[^/?#]+\/?(\?|#|$)/i;

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/** Reads a payment event's body as bytes (`raw`: express.raw with the size bound) on its route only. */
export function rawPaymentEvents(raw: Middleware): Middleware {
  return (req, res, next) => (isPaymentEvent(req) ? raw(req, res, next) : next());
}

const isPaymentEvent = (req: Request) => req.method === 'POST' && PAYMENT_EVENTS.test(req.url ?? '');

/**
 * A Transfer-Encoding whose last coding is not chunked gives the body no length (RFC 9112 6.3: 400,
 * and the connection closed). node's parser refuses it, but only once the request listener has run:
 * a middleware that answers at once (the content type's 415) would win, and the client be told about
 * something else. This answers node's own message first; empty list elements are skipped, as node
 * skips them (an empty header leaves the body to its Content-Length). Among the body parsers, so a
 * runtime check without a body never runs it.
 */
export function transferEncoding(req: Request, _res: Response, next: NextFunction): void {
  const sent = req.headers['transfer-encoding'];
  if (sent === undefined) return next();
  const codings = sent.split(',').filter((coding) => coding.trim() !== '');
  const last = codings[codings.length - 1];
  if (last === undefined || last.trim().toLowerCase() === 'chunked') return next();
  next(new ApiError(400, INVALID_TRANSFER_ENCODING, null, null, { Connection: 'close' }));
}

/**
 * A body whose declared length is over what its route will read is refused at once, before a byte of
 * it is read, with the parser's own 413: the parsers would refuse it too, but only once they had read
 * it all, and would wait until the idle timeout for bytes a client declared and never sends. The
 * bounds are the parsers': a payment event's (rawPaymentEvents), a JSON body's (MAX_UPLOAD_BYTES, any
 * method), a multipart upload's where a route takes files (one payload and OTHER_FIELDS_BYTES). A body
 * no parser reads, and a compressed one (its parser bounds what it inflates), are left alone. The
 * body is then dropped as it comes, and the connection closed if it has not all come within a few
 * seconds (closeIfBodyLingers).
 */
export function declaredTooLarge(paymentEventBytes: number, maxUploadBytes: number): Middleware {
  return (req, res, next) => {
    const declared = req.headers['content-length'];
    if (declared === undefined) return next();
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return next();
    const length = Number(declared);
    let message: string | null = null;
    if (isPaymentEvent(req)) {
      if (length > paymentEventBytes) message = BODY_TOO_LARGE;
    } else if (typeis(req, ['application/json', 'application/*+json'])) {
      if (length > maxUploadBytes) message = BODY_TOO_LARGE;
    } else if (typeis(req, ['multipart/form-data']) && takesFiles(req)) {
      if (length > maxUploadBytes + OTHER_FIELDS_BYTES) message = multipartTooLarge(maxUploadBytes);
    }
    if (message === null) return next();
    res.once('finish', () => closeIfBodyLingers(req));
    next(new ApiError(413, message));
  };
}

/** JSON-first: a body must be JSON, or multipart where an endpoint takes files. */
export function contentType(req: Request, _res: Response, next: NextFunction): void {
  if (!BODY_METHODS.has(req.method) || Buffer.isBuffer(req.body)) return next();
  const hasBody =
    Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || typeis(req, ['application/json', 'application/*+json'])) return next();
  if (typeis(req, ['multipart/form-data'])) {
    if (takesFiles(req)) return next();
    return next(
      new ApiError(
        415,
        'Unsupported content type: send application/json (multipart/form-data only where a file is uploaded: POST and PUT of injectables).',
      ),
    );
  }
  next(
    new ApiError(
      415,
      'Unsupported content type: send application/json (or multipart/form-data where a file is uploaded).',
    ),
  );
}

/** A UTF-8 body must be UTF-8: decoding would quietly turn each bad byte into U+FFFD, and store that. */
export function utf8Only(_req: unknown, _res: unknown, body: Buffer, encoding: string | null): void {
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
      if (item !== null && typeof item === 'object')
        for (const child of Object.values(item)) next.push(child);
    }
    level = next;
  }
  return false;
}

/**
 * Every JSON body is an object: arrays and scalars are refused before any handler sees them, and so
 * is nesting deeper than any DTO goes (the validation pipe would recurse through it and overflow),
 * and a string with an unpaired surrogate (docs/api.md, "The envelope and errors").
 */
export function objectBody(req: Request, _res: Response, next: NextFunction): void {
  if (
    BODY_METHODS.has(req.method) &&
    req.body !== undefined &&
    !Buffer.isBuffer(req.body) &&
    typeis(req, ['application/json', 'application/*+json'])
  ) {
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
      return next(new ApiError(400, 'The request body must be a JSON object.'));
    }
    if (depthOver(req.body, MAX_BODY_DEPTH))
      return next(new ApiError(400, `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`));
    // Anywhere in the body, fields a route ignores included: what is not valid text is refused, not mended.
    const unpaired = unpairedSurrogates(req.body);
    if (unpaired) return next(new ValidationFailed(unpaired));
  }
  next();
}

/**
 * Paths outside the API's roots never reach Nest's router; answer them in the envelope too. The API
 * and its documentation are matched regardless of case, as Express routes (and every other path test
 * here): `/API/V1/` is the API. `/metrics` is matched exactly: it needs no key, and an operator's
 * proxy rule that keeps it private (`location = /metrics`) matches it exactly too.
 */
const SERVED = /^\/(api\/v1(\/|$)|api\/docs)/i;
/** What a person who opens the server's address in a browser is told: where to go. */
export const SERVER_ROOT_MESSAGE =
  'LicenseGate: the API is at /api/v1/, its documentation at /api/docs, and the console (when enabled) at /console/.';
export function outsideApi(req: Request, res: Response, next: NextFunction): void {
  if (SERVED.test(req.path) || req.path === '/metrics') return next();
  if (req.path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
    res.json({ status: 'ok', message: SERVER_ROOT_MESSAGE, data: null, errors: null });
    return;
  }
  next(new ApiError(404, `The route ${req.method} ${req.path} could not be found.`));
}
