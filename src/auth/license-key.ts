import type { Request } from 'express';
import { sha256Hex } from '../common/crypto.js';

/** The license key: X-LICENSE-KEY, else a `license` query or body parameter (SPEC 7). */
export function licenseKeyOf(req: Request): string | null {
  const header = req.headers['x-license-key'];
  const sent = Array.isArray(header) ? header[0] : header;
  if (typeof sent === 'string' && sent.trim() !== '') return sent.trim();
  // Only now the query and body: Express parses the query string on every read of req.query.
  for (const value of [req.query?.license, (req.body as { license?: unknown } | undefined)?.license]) {
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return null;
}

const HASH = Symbol('licenseKeyHash');

/**
 * SHA-256 of the request's license key, computed once per request: the runtime throttle counts by it
 * and the lookup finds the license by it. Kept on the request itself (a WeakMap would cost every
 * garbage collection an ephemeron per request in flight).
 */
export function licenseKeyHash(req: Request): string | null {
  const memo = req as Request & { [HASH]?: string | null };
  if (memo[HASH] !== undefined) return memo[HASH];
  const key = licenseKeyOf(req);
  const hash = key === null ? null : sha256Hex(key);
  memo[HASH] = hash;
  return hash;
}
