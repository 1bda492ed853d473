import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { standardWebhookKey } from '../webhooks/signature.js';
import type { Provider } from './payment-connector.entity.js';

/** How far a signed timestamp may be from now, either way (docs/payments.md). */
export const TOLERANCE_SECONDS = 300;

/** A signature that holds, with the event id a header carries (Standard Webhooks' webhook-id). */
export type Verified = { ok: true; headerEventId?: string } | { ok: false; reason: string };

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

const hmac = (key: string | Buffer, ...parts: Array<string | Buffer>): Buffer => {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** Constant-time: only buffers of equal length are compared, and every candidate is. */
function anyEqual(expected: Buffer, candidates: Buffer[]): boolean {
  let found = false;
  for (const candidate of candidates)
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) found = true;
  return found;
}

const HEX = /^[0-9a-f]+$/i;
const hexes = (values: string[]) =>
  values.filter((v) => HEX.test(v) && v.length % 2 === 0).map((v) => Buffer.from(v, 'hex'));

/**
 * Within TOLERANCE_SECONDS of now, in whole seconds as the providers' own libraries count (Stripe's,
 * standardwebhooks): with a fractional now, an event signed exactly 300 s ago would be refused.
 */
function fresh(seconds: string | undefined, nowMs: number): string | null {
  if (seconds === undefined || !/^\d{1,12}$/.test(seconds))
    return 'the signed timestamp is missing or not a number';
  return Math.abs(Math.floor(nowMs / 1000) - Number(seconds)) > TOLERANCE_SECONDS
    ? `the signed timestamp is more than ${TOLERANCE_SECONDS} seconds from now`
    : null;
}

/** `k=v` pairs split by `separator`: every value of each key. */
function pairs(value: string, separator: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of value.split(separator)) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    out.set(key, [...(out.get(key) ?? []), part.slice(at + 1).trim()]);
  }
  return out;
}

/**
 * Checks the provider's signature over the raw body bytes, before anything is parsed (the table of
 * docs/payments.md): Stripe `t=,v1=` and Paddle `ts=;h1=` (several signatures allowed, HMAC-SHA256 of
 * the timestamp and the body), Lemon Squeezy the hex HMAC of the body, Polar and Standard Webhooks
 * `webhook-id`, `webhook-timestamp`, `webhook-signature`.
 */
export function verifySignature(
  provider: Provider,
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  nowMs: number,
): Verified {
  switch (provider) {
    case 'stripe': {
      const sent = header(headers, 'stripe-signature');
      if (!sent) return { ok: false, reason: 'the Stripe-Signature header is missing' };
      const fields = pairs(sent, ',');
      const t = fields.get('t')?.[0];
      const stale = fresh(t, nowMs);
      if (stale) return { ok: false, reason: stale };
      const expected = hmac(secret, `${t}.`, body);
      return anyEqual(expected, hexes(fields.get('v1') ?? []))
        ? { ok: true }
        : { ok: false, reason: 'no v1 signature matches' };
    }
    case 'paddle': {
      const sent = header(headers, 'paddle-signature');
      if (!sent) return { ok: false, reason: 'the Paddle-Signature header is missing' };
      const fields = pairs(sent, ';');
      const ts = fields.get('ts')?.[0];
      const stale = fresh(ts, nowMs);
      if (stale) return { ok: false, reason: stale };
      const expected = hmac(secret, `${ts}:`, body);
      return anyEqual(expected, hexes(fields.get('h1') ?? []))
        ? { ok: true }
        : { ok: false, reason: 'no h1 signature matches' };
    }
    case 'lemonsqueezy': {
      const sent = header(headers, 'x-signature');
      if (!sent) return { ok: false, reason: 'the X-Signature header is missing' };
      return anyEqual(hmac(secret, body), hexes([sent.trim()]))
        ? { ok: true }
        : { ok: false, reason: 'the signature does not match' };
    }
    case 'polar':
    case 'standard': {
      const id = header(headers, 'webhook-id');
      const timestamp = header(headers, 'webhook-timestamp');
      const sent = header(headers, 'webhook-signature');
      if (!id || !timestamp || !sent)
        return {
          ok: false,
          reason: 'a webhook-id, webhook-timestamp or webhook-signature header is missing',
        };
      const stale = fresh(timestamp, nowMs);
      if (stale) return { ok: false, reason: stale };
      const expected = hmac(standardWebhookKey(secret), `${id}.${timestamp}.`, body);
      const candidates = sent
        .split(' ')
        .filter((s) => s.startsWith('v1,'))
        .map((s) => Buffer.from(s.slice(3), 'base64'));
      return anyEqual(expected, candidates)
        ? { ok: true, headerEventId: id }
        : { ok: false, reason: 'no v1 signature matches' };
    }
  }
}
