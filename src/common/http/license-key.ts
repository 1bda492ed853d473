import type { Request } from 'express';
import { sha256Hex } from '../crypto/crypto.js';

/** The license key as sent, and its SHA-256 (how licenses are found and runtime calls are counted). */
export interface SentLicenseKey {
  key: string;
  hash: string;
}

/** The license key: X-LICENSE-KEY, else a `license` query or body parameter (docs/decisions.md#runtime-checks). */
function licenseKeyOf(req: Request): string | null {
  const header = req.headers['x-license-key'];
  const sent = Array.isArray(header) ? header[0] : header;
  if (typeof sent === 'string' && sent.trim() !== '') return sent.trim();
  // Only now the query and body: Express parses the query string on every read of req.query.
  for (const value of [req.query?.license, (req.body as { license?: unknown } | undefined)?.license]) {
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return null;
}

const MEMO = Symbol('licenseKey');

/** No license key is longer (a uuid is 36 characters); a longer one is refused unread. */
const MAX_LICENSE_KEY_CHARS = 64;
/** The hash of a key over MAX_LICENSE_KEY_CHARS: never computed (headers may be 16 KB), never a SHA-256. */
export const OVERSIZED_KEY = 'oversized';

/**
 * The request's license key and its hash, read and hashed once per request: the runtime throttle
 * (which runs first) and LicenseKeyGuard both use them. Kept on the request itself (a WeakMap would
 * cost every garbage collection an ephemeron per request in flight).
 */
export function licenseKey(req: Request): SentLicenseKey | null {
  const memo = req as Request & { [MEMO]?: SentLicenseKey | null };
  if (memo[MEMO] !== undefined) return memo[MEMO];
  const key = licenseKeyOf(req);
  const sent =
    key === null ? null : { key, hash: key.length > MAX_LICENSE_KEY_CHARS ? OVERSIZED_KEY : sha256Hex(key) };
  memo[MEMO] = sent;
  return sent;
}
