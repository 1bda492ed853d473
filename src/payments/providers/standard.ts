import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { standardWebhookKey, webhookSignature } from '../../webhooks/signature.js';
import type { Json, Moves, PaymentProvider, ProviderEvent, SignatureHeader, Verified } from './provider.js';
import { anyEqual, fresh, header, hmac, moveOf, obj, PAID, str, unixSeconds, UNPAID } from './provider.js';

/** The headers of Standard Webhooks, which Polar signs with too. */
export const STANDARD_WEBHOOK_HEADERS: readonly SignatureHeader[] = [
  { name: 'webhook-id', description: 'the event id (Standard Webhooks)' },
  { name: 'webhook-timestamp', description: 'unix seconds' },
  { name: 'webhook-signature', description: 'v1,<base64>' },
];

/**
 * Standard Webhooks: HMAC-SHA256 of `id.timestamp.body` with the key of standardWebhookKey(), several
 * space-separated `v1,<base64>` allowed; the webhook-id is the event id.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  nowMs: number,
): Verified {
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

/** The three headers a Standard Webhooks sender sends; the id is `msg_` and random unless given. */
export function signStandardWebhook(
  secret: string,
  body: string | Buffer,
  nowMs: number,
  eventId = `msg_${randomBytes(12).toString('hex')}`,
): Record<string, string> {
  const timestamp = unixSeconds(nowMs);
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': webhookSignature(secret, eventId, timestamp, body),
  };
}

/**
 * A verified Standard Webhooks event, `{type, data}` with the webhook-id as its id, whose verdict is
 * `moves`' row of its type and whose domain is `data.metadata.licensegate_domain` (Polar's and ours).
 */
export function readStandardEvent(
  moves: Moves<Json>,
  payload: Json,
  headerEventId: string | undefined,
  email: (data: Json) => string | null,
): ProviderEvent | null {
  if (!headerEventId) return null;
  const type = str(payload.type) ?? '';
  const data = obj(payload.data);
  const { verdict, reference } = moveOf(moves, type, data);
  return {
    id: headerEventId,
    type,
    verdict,
    domain: obj(data.metadata).licensegate_domain,
    reference,
    email: email(data),
  };
}

/** Our own three types: any sender names its other events as it likes. */
const MOVES: Moves<Json> = {
  'payment.succeeded': (data) => ({ verdict: PAID, reference: str(data.reference) }),
  'payment.failed': (data) => ({ verdict: UNPAID, reference: str(data.reference) }),
  'payment.refunded': (data) => ({ verdict: UNPAID, reference: str(data.reference) }),
};

/**
 * Any sender that signs per Standard Webhooks (docs/payments.md#any-other-sender-standard-webhooks):
 * `{type, data: {metadata}}`; `data.reference` and `data.customer_email`, when sent, play the part
 * of an order for licenses from orders.
 */
export const STANDARD_SECRET_INVALID =
  'The signing secret field must be a Standard Webhooks secret: whsec_ followed by base64 (24 to 64 bytes).';

/** A Standard Webhooks secret: whsec_ and the base64 of 24 to 64 random bytes. */
function isStandardSecret(secret: string): boolean {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) return false;
  const bytes = Buffer.from(secret.slice(6), 'base64').length;
  return bytes >= 24 && bytes <= 64;
}

export const standard: PaymentProvider<'standard'> = {
  name: 'standard',
  secretProblem: (secret) => (isStandardSecret(secret) ? null : STANDARD_SECRET_INVALID),
  signatureHeaders: STANDARD_WEBHOOK_HEADERS,
  verify: verifyStandardWebhook,
  read: (payload, _body, headerEventId) =>
    readStandardEvent(MOVES, payload, headerEventId, (data) => str(data.customer_email)),
  sign: signStandardWebhook,

  /** The example payload of the Standard Webhooks specification: `{type, timestamp, data}`. */
  sampleEvent(now: Date): Json {
    return {
      type: 'contact.created',
      timestamp: now.toISOString(),
      data: { id: randomUUID(), type: 'contact' },
    };
  },
};
