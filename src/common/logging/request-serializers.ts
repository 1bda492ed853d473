import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * What a request line says of the request and the answer, and what it never says: a license key
 * (header, `license` query parameter, a URL's or a Referer's query), an API key, an Authorization
 * header, a payment provider's signature, a payment connector's endpoint token.
 */

/** Request headers written as `[Redacted]`. */
export const REDACTED_HEADERS = [
  'x-api-key',
  'x-license-key',
  'authorization',
  // The payment providers' signatures: no business of whoever reads the logs.
  'stripe-signature',
  'paddle-signature',
  'x-signature',
  'webhook-signature',
];

/** pino's redaction paths for the same headers (and a body's `license`, should a body ever be logged). */
export const REDACT_PATHS = [...REDACTED_HEADERS.map((name) => `req.headers["${name}"]`), 'req.body.license'];

/** What pino's redaction writes in place of a redacted value. */
const CENSOR = '[Redacted]';

/** `license` parameters (the key) in a URL's query replaced by `[redacted]`. */
export function redactLicenseInUrl(url: string | undefined): string | undefined {
  if (url === undefined) return url;
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const raw = eq < 0 ? part : part.slice(0, eq);
      let name = raw;
      try {
        name = decodeURIComponent(raw.replace(/\+/g, ' '));
      } catch {
        // a malformed escape is still a name: compare it as sent
      }
      return /^license(\[|$)/i.test(name.trim()) ? `${raw}=[redacted]` : part;
    })
    .join('&');
  return `${url.slice(0, q + 1)}${query}`;
}

export type SerializedRequest = {
  id?: unknown;
  method?: string;
  url?: string;
  query?: Record<string, unknown>;
  params?: Record<string, unknown>;
  headers?: Record<string, unknown>;
  remoteAddress?: string;
  remotePort?: number;
};

/** A payment connector's endpoint: its last segment is the connector's token (docs/payments.md). */
const PAYMENT_ENDPOINT = /^(\/api\/v1\/payments\/[^/?#]*\/)[^/?#]+/i;

const LICENSE = /^license$/i;

/** `query` with a `license` parameter's value replaced, or `query` itself when it has none. */
function safeQuery(query: Record<string, unknown>): Record<string, unknown> {
  if (!Object.keys(query).some((k) => LICENSE.test(k))) return query;
  return Object.fromEntries(Object.entries(query).map(([k, v]) => [k, LICENSE.test(k) ? '[redacted]' : v]));
}

/**
 * The request as pino-http serialises it (pino-std-serializers' `req`), minus every place a license
 * key can travel in, and a payment connector's endpoint token (the path parameters carry it too: left
 * out there). The serializer pino-http wraps; the redacted headers are pino's redaction's (REDACT_PATHS).
 */
export function safeRequest(req: SerializedRequest): SerializedRequest {
  const out: SerializedRequest = { ...req, url: redactLicenseInUrl(req.url) };
  if (out.url !== undefined && PAYMENT_ENDPOINT.test(out.url)) {
    out.url = out.url.replace(PAYMENT_ENDPOINT, '$1[redacted]');
    delete out.params;
  }
  if (req.query && typeof req.query === 'object') out.query = safeQuery(req.query);
  if (req.headers && typeof req.headers.referer === 'string')
    out.headers = { ...req.headers, referer: redactLicenseInUrl(req.headers.referer) };
  return out;
}

/** Express's request, or node's where RuntimeFastPath answers. */
type LoggedRequest = IncomingMessage & {
  id?: unknown;
  originalUrl?: string;
  path?: string;
  query?: Record<string, unknown>;
  params?: Record<string, unknown>;
};

/**
 * The request line's `req` in one step, redactions included: the same fields in the same order as
 * pino-std-serializers' `req` followed by safeRequest and pino's redaction (REDACT_PATHS), hence the
 * same bytes (src/common/logging/logging.spec.ts compares them), at a fraction of the cost
 * (docs/benchmarks.md, "The management path against a stock Nest app").
 */
export function lineRequest(req: LoggedRequest): SerializedRequest {
  let url = redactLicenseInUrl(
    req.originalUrl ? req.originalUrl : typeof req.path === 'string' ? req.path : req.url,
  );
  let params = req.params || undefined;
  if (url !== undefined && PAYMENT_ENDPOINT.test(url)) {
    url = url.replace(PAYMENT_ENDPOINT, '$1[redacted]');
    params = undefined;
  }
  // Express parses the query string on every read of req.query: read once.
  const query = req.query;
  let headers: Record<string, unknown> = req.headers;
  if (typeof headers.referer === 'string')
    headers = { ...headers, referer: redactLicenseInUrl(headers.referer) };
  for (const name of REDACTED_HEADERS)
    if (headers[name] !== undefined) {
      if (headers === req.headers) headers = { ...headers };
      headers[name] = CENSOR;
    }
  const socket = req.socket;
  // Undefined fields are left out of the line, as pino-std-serializers leaves out a falsy query or params.
  return {
    id: req.id || undefined,
    method: req.method,
    url,
    query: query ? (typeof query === 'object' ? safeQuery(query) : query) : undefined,
    params,
    headers,
    remoteAddress: socket?.remoteAddress,
    remotePort: socket?.remotePort,
  };
}

/** The request line's `res`, as pino-std-serializers' `res`. */
export function lineResponse(res: ServerResponse): { statusCode: number | null; headers: unknown } {
  return { statusCode: res.headersSent ? res.statusCode : null, headers: res.getHeaders() };
}
