import { REDACTED } from '../audit/audit-log.service.js';

/**
 * Keys whose values are personal data, at any depth of an event's body: any containing email, name,
 * address or phone, and `ip` as a word of the key (`ip`, `client_ip`, `ipAddress`) so that
 * `subscription` or `description` stay readable.
 */
const PERSONAL = /email|name|address|phone|(?:^|[^a-z])ip(?:[^a-z]|$)/i;
const CAMEL_IP = /[a-z]I[Pp](?:[^a-z]|$)/;

/** At most this many bytes of an event's body are stored; a larger one is stored as TRUNCATED. */
export const PAYLOAD_MAX_BYTES = 64 * 1024;
export const TRUNCATED = { truncated: true } as const;

/** Levels of nesting kept; a value deeper than this is stored as DEEP (a signed body may nest 100,000 deep). */
const MAX_DEPTH = 64;
export const DEEP = '[too deep]';

function redact(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return DEEP;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [
      key,
      (PERSONAL.test(key) || CAMEL_IP.test(key)) && v !== null ? REDACTED : redact(v, depth + 1),
    ]),
  );
}

/**
 * What the event log stores of an accepted event's body (`bytes` long, `payload` parsed): the JSON with
 * the value of every key naming personal data (email, name, address, phone, ip) replaced by
 * "[redacted]", at any depth; a body larger than PAYLOAD_MAX_BYTES, as received or once redacted, is
 * stored as `{"truncated": true}`, and a value nested deeper than MAX_DEPTH as "[too deep]". Headers
 * (the signature) are never stored.
 */
export function storedPayload(payload: unknown, bytes: number): string {
  if (bytes > PAYLOAD_MAX_BYTES) return JSON.stringify(TRUNCATED);
  const text = JSON.stringify(redact(payload, 0));
  return Buffer.byteLength(text, 'utf8') > PAYLOAD_MAX_BYTES ? JSON.stringify(TRUNCATED) : text;
}

/** The stored payload as the API answers it: the object, or null (rows from before it was stored). */
export function readPayload(stored: string | null | undefined): Record<string, unknown> | null {
  if (!stored) return null;
  try {
    return JSON.parse(stored) as Record<string, unknown>;
  } catch {
    return null;
  }
}
