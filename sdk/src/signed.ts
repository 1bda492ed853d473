/**
 * Signed answers and offline tokens (README.md, "Signed answers and offline mode"), checked with
 * WebCrypto only.
 *
 *   X-Service-Signature = "v1," + base64 Ed25519 over
 *     "LG1-ANSWER\n" + date + "\n" + nonce + "\n" + METHOD + " " + path?query + "\n"
 *     + hex(SHA-256(license key)) + "\n" + (X-Service-Domain or "") + "\n" + hex(SHA-256(body))
 *   token = "LG1." + base64url(payload JSON) + "." + base64url(Ed25519 over "LG1-TOKEN\n" + payload part)
 */
import { fromBase64, toBase64 } from './base64.js';
import { sha256Hex } from './crypto.js';
import { fromUtf8, KeyHandle, subtle, utf8 } from './webcrypto.js';

/** What an answer's signature covers, as the client sent and received it. */
export interface AnswerParts {
  date: string;
  nonce: string;
  method: string;
  /** path and query as sent, e.g. `/api/v1/project/has-paid?include=token` */
  target: string;
  licenseKey: string;
  /** X-Service-Domain as sent, or '' */
  domain: string;
  body: Uint8Array;
}

/** The exact text X-Service-Signature covers. */
export async function answerText(parts: AnswerParts): Promise<string> {
  const [keyHash, bodyHash] = await Promise.all([sha256Hex(utf8(parts.licenseKey)), sha256Hex(parts.body)]);
  return `LG1-ANSWER\n${parts.date}\n${parts.nonce}\n${parts.method} ${parts.target}\n${keyHash}\n${parts.domain}\n${bodyHash}`;
}

/**
 * Why an answer cannot be trusted, or null when its signature verifies and its date is within
 * `maxSkewSeconds` of `now` (ms).
 */
export async function answerProblem(
  signature: string | null,
  parts: AnswerParts,
  key: KeyHandle,
  maxSkewSeconds: number,
  now: number = Date.now(),
): Promise<string | null> {
  if (signature === null || parts.date === '') return 'the answer is not signed';
  if (!signature.startsWith('v1,')) return 'the answer is signed with an unknown scheme';
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(signature.slice(3));
  } catch {
    return "the answer's signature is not base64";
  }
  if (
    bytes.length !== 64 ||
    !(await subtle().verify({ name: 'Ed25519' }, key, bytes, utf8(await answerText(parts))))
  ) {
    return "the answer's signature does not verify (altered in transit, or signed by another key)";
  }
  const at = Date.parse(parts.date);
  if (Number.isNaN(at) || Math.abs(now - at) > maxSkewSeconds * 1000)
    return `the answer's date ${parts.date} is more than ${maxSkewSeconds} s from this clock`;
  return null;
}

/** A fresh nonce: 16 random bytes, base64url (22 characters). */
export function newNonce(): string {
  const c = (globalThis as unknown as { crypto?: { getRandomValues?(a: Uint8Array): Uint8Array } }).crypto;
  if (!c?.getRandomValues) throw new Error('@licensegate/sdk needs crypto.getRandomValues to sign requests.');
  return toBase64(c.getRandomValues(new Uint8Array(16)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** An offline token's payload, as the service signs it. */
export interface OfflineTokenPayload {
  project_id: number;
  license_id: number;
  key_sha256: string;
  domain: string | null;
  has_paid: true;
  is_test_license: boolean;
  /** For a license with a plan or entitlements of its own: the plan code and effective entitlements. */
  plan?: string | null;
  entitlements?: Record<string, boolean | number | string>;
  iat: number;
  exp: number;
}

/** The payload of `token` when its signature verifies with `key`; null otherwise (whatever the reason). */
export async function openOfflineToken(token: string, key: KeyHandle): Promise<OfflineTokenPayload | null> {
  if (typeof token !== 'string') return null;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== 'LG1') return null;
  let payload: unknown;
  try {
    const signature = fromBase64(parts[2]);
    if (
      signature.length !== 64 ||
      !(await subtle().verify({ name: 'Ed25519' }, key, signature, utf8(`LG1-TOKEN\n${parts[1]}`)))
    )
      return null;
    payload = JSON.parse(fromUtf8(fromBase64(parts[1])));
  } catch {
    return null;
  }
  const p = payload as Partial<OfflineTokenPayload> | null;
  if (
    !p ||
    typeof p !== 'object' ||
    p.has_paid !== true ||
    typeof p.exp !== 'number' ||
    typeof p.iat !== 'number' ||
    typeof p.key_sha256 !== 'string'
  )
    return null;
  return p as OfflineTokenPayload;
}

/**
 * A calling domain as the service normalises it: the host of a URL or `host:port`, lowercased,
 * without a trailing dot, IDN as punycode. Null for nothing usable.
 */
export function normalizeDomain(value: string | null | undefined): string | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  let host = value.trim();
  try {
    host = new URL(host.includes('://') ? host : `http://${host}`).hostname;
  } catch {
    return host.toLowerCase().replace(/\.$/, '');
  }
  return host.toLowerCase().replace(/\.$/, '') || null;
}
