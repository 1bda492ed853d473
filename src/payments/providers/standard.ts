import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { standardWebhookKey, webhookSignature } from '../../webhooks/signature.js';
import type {
  EventFacts,
  Json,
  Moves,
  PaymentProvider,
  ProviderEvent,
  PurchaseKind,
  SamplePayment,
  SignatureHeader,
  Verified,
} from './provider.js';
import {
  anyEqual,
  eventOf,
  fresh,
  header,
  hmac,
  ids,
  moveOf,
  obj,
  PAID,
  partialRefund,
  str,
  timeOf,
  unixSeconds,
  UNPAID,
} from './provider.js';

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
  facts: (data: Json, type: string) => Partial<EventFacts>,
): ProviderEvent | null {
  if (!headerEventId) return null;
  const type = str(payload.type) ?? '';
  const data = obj(payload.data);
  return eventOf(headerEventId, type, obj(data.metadata).licensegate_domain, moveOf(moves, type, data), {
    ...facts(data, type),
    license: obj(data.metadata).licensegate_license,
  });
}

/** `data.kind` `subscription`, else an order. */
const kindOf = (data: Json): PurchaseKind => (data.kind === 'subscription' ? 'subscription' : 'order');

/** Our own three types: any sender names its other events as it likes. */
const MOVES: Moves<Json> = {
  'payment.succeeded': (data) => ({
    verdict: PAID,
    reference: str(data.reference),
    kind: kindOf(data),
    status: kindOf(data) === 'subscription' ? 'active' : 'paid',
  }),
  'payment.failed': (data) => ({
    verdict: UNPAID,
    reference: str(data.reference),
    kind: kindOf(data),
    status: 'past_due',
  }),
  // A refund names its purchase by data.reference; `partial: true` is a partial refund.
  'payment.refunded': (data) => ({
    verdict: data.partial === true ? partialRefund('payment.refunded') : UNPAID,
    reference: str(data.reference),
    kind: kindOf(data),
    refund: { paymentIds: ids(data.payment_id), status: 'refunded' },
  }),
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
    readStandardEvent(MOVES, payload, headerEventId, (data) => ({
      email: str(data.customer_email),
      customerName: str(data.customer_name),
      // The payload's timestamp (Standard Webhooks) or occurred_at; webhook-timestamp is the attempt's.
      occurredAt: timeOf(payload.timestamp) ?? timeOf(payload.occurred_at),
      customerId: str(data.customer_id),
      productIds:
        data.product_id !== undefined || data.product_ids !== undefined
          ? ids(data.product_id, ...(Array.isArray(data.product_ids) ? (data.product_ids as unknown[]) : []))
          : null,
      paymentIds: ids(data.payment_id),
    })),
  sign: signStandardWebhook,

  /** The example payload of the Standard Webhooks specification: `{type, timestamp, data}`. */
  sampleEvent(now: Date): Json {
    return {
      type: 'contact.created',
      timestamp: now.toISOString(),
      data: { id: randomUUID(), type: 'contact' },
    };
  },

  /** payment.succeeded of a one-time order: our own paying type. */
  samplePayment(now: Date, payment: SamplePayment): Json {
    return {
      type: 'payment.succeeded',
      timestamp: now.toISOString(),
      data: {
        reference: `test_${randomUUID()}`,
        kind: 'order',
        payment_id: `pay_${randomUUID()}`,
        metadata: payment.metadata,
        ...(payment.product ? { product_id: payment.product } : {}),
      },
    };
  },
};
