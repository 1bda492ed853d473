import cors from 'cors';
import type { IncomingMessage, ServerResponse } from 'node:http';

/*
 * SDKs run on customers' sites, so the API answers cross-origin calls (preflights included).
 * Credentials travel in headers, never cookies, so `*` is answered as `*`: the same headers for every
 * caller and no `Vary: Origin`. A list is matched and the allowed origin echoed. The OpenAPI
 * document states these same lists (common/openapi/document.ts).
 */

export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
export const CORS_ALLOWED_HEADERS = [
  'Accept',
  'Content-Type',
  'X-API-KEY',
  'X-LICENSE-KEY',
  'X-Service-Domain',
  'X-Service-Nonce',
  'X-Request-Id',
];
/** A browser SDK verifies signed answers (docs/decisions.md#signed-answers-and-offline-tokens) from the last two. */
export const CORS_EXPOSED_HEADERS = ['X-Request-Id', 'Retry-After', 'X-Service-Date', 'X-Service-Signature'];
/** Seconds a browser may keep a preflight's answer. */
export const CORS_MAX_AGE = 600;

/**
 * The same cors() middleware Nest's enableCors mounts, built here so that RuntimeFastPath runs it too.
 * With `*`, every call but a preflight gets the same two headers: they are set without cors()'s
 * per-call work (an options object and the header list, every call; docs/benchmarks.md).
 */
export function crossOrigin(origins: string) {
  const full = cors({
    origin: origins === '*' ? '*' : origins.split(',').map((o) => o.trim()),
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE,
  });
  if (origins !== '*') return full;
  const exposed = CORS_EXPOSED_HEADERS.join(',');
  return (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    if (req.method === 'OPTIONS') return full(req, res, next);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', exposed);
    next();
  };
}
