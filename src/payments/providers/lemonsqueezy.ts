import { randomInt, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { sha256Hex } from '../../common/crypto/crypto.js';
import type { Json, Moves, PaymentProvider, ProviderEvent, Verified } from './provider.js';
import {
  anyEqual,
  header,
  hexes,
  hmac,
  moveOf,
  obj,
  PAID,
  str,
  UNPAID,
  withStatus,
  secretRule,
} from './provider.js';

const ACTIVE = new Set(['active', 'on_trial']);
const LAPSED = new Set(['past_due', 'unpaid', 'expired', 'paused']);

/** What a row reads: the object's status, and the order it belongs to. */
interface Subject {
  status: unknown;
  order: string | null;
}

const unpaid = ({ order }: Subject) => ({ verdict: UNPAID, reference: order });
const activeOr = (type: string) => (subject: Subject) => ({
  verdict: ACTIVE.has(subject.status as string) ? PAID : withStatus(type, subject.status),
  reference: subject.order,
});

/**
 * What each event type moves. A subscription is referred to by its order (attributes.order_id), so
 * that the order_created and subscription_created of one purchase issue one license;
 * subscription_payment_success moves has_paid only (its invoice names the subscription, not the order).
 */
const MOVES: Moves<Subject> = {
  order_created: ({ status, order }) => ({
    verdict: status === 'paid' ? PAID : withStatus('order_created', status),
    reference: order,
  }),
  subscription_payment_success: () => ({ verdict: PAID, reference: null }),
  subscription_created: activeOr('subscription_created'),
  subscription_resumed: activeOr('subscription_resumed'),
  subscription_updated: ({ status, order }) => ({
    verdict: ACTIVE.has(status as string)
      ? PAID
      : LAPSED.has(status as string)
        ? UNPAID
        : withStatus('subscription_updated', status),
    reference: order,
  }),
  subscription_expired: unpaid,
  subscription_paused: unpaid,
  order_refunded: unpaid,
};

/**
 * Lemon Squeezy (docs/payments.md#lemon-squeezy): `X-Signature`, the hex HMAC of the body. It signs
 * no timestamp and its payloads carry no event id: the SHA-256 of the body is one.
 */
export const lemonSqueezy: PaymentProvider<'lemonsqueezy'> = {
  name: 'lemonsqueezy',
  secretProblem: secretRule('Lemon Squeezy'),
  signatureHeaders: [{ name: 'X-Signature', description: 'hex HMAC-SHA256 of the body' }],

  verify(secret: string, headers: IncomingHttpHeaders, body: Buffer): Verified {
    const sent = header(headers, 'x-signature');
    if (!sent) return { ok: false, reason: 'the X-Signature header is missing' };
    return anyEqual(hmac(secret, body), hexes([sent.trim()]))
      ? { ok: true }
      : { ok: false, reason: 'the signature does not match' };
  },

  read(payload: Json, body: Buffer): ProviderEvent {
    const meta = obj(payload.meta);
    const type = str(meta.event_name) ?? '';
    const data = obj(payload.data);
    const attributes = obj(data.attributes);
    const order = data.type === 'orders' ? str(data.id) : str(attributes.order_id);
    const { verdict, reference } = moveOf(MOVES, type, { status: attributes.status, order });
    return {
      id: sha256Hex(body),
      type,
      verdict,
      domain: obj(meta.custom_data).licensegate_domain,
      reference,
      email: str(attributes.user_email),
    };
  },

  sign(secret: string, body: string | Buffer): Record<string, string> {
    return { 'X-Signature': hmac(secret, body).toString('hex') };
  },

  /** license_key_created, as Lemon Squeezy's webhook docs and its License Key object have it. */
  sampleEvent(now: Date): Json {
    const at = now.toISOString().replace(/\.\d{3}Z$/, '.000000Z');
    const id = String(randomInt(1, 2_000_000_000));
    const order = randomInt(1, 2_000_000_000);
    const key = randomUUID().toUpperCase();
    return {
      meta: { test_mode: true, event_name: 'license_key_created', webhook_id: randomUUID() },
      data: {
        type: 'license-keys',
        id,
        attributes: {
          store_id: 1,
          customer_id: randomInt(1, 2_000_000_000),
          order_id: order,
          order_item_id: randomInt(1, 2_000_000_000),
          product_id: 1,
          user_name: 'Darlene Daugherty',
          user_email: 'darlene@example.com',
          key,
          key_short: `XXXX-${key.slice(-12)}`,
          activation_limit: 5,
          instances_count: 0,
          disabled: false,
          status: 'inactive',
          status_formatted: 'Inactive',
          expires_at: null,
          created_at: at,
          updated_at: at,
          test_mode: true,
        },
        relationships: {
          order: { links: { related: `https://api.lemonsqueezy.com/v1/license-keys/${id}/order` } },
        },
        links: { self: `https://api.lemonsqueezy.com/v1/license-keys/${id}` },
      },
    };
  },
};
