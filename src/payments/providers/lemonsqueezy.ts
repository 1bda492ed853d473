import { randomInt, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { sha256Hex } from '../../common/crypto/crypto.js';
import type {
  Json,
  SamplePayment,
  Move,
  Moves,
  PaymentProvider,
  ProviderEvent,
  PurchaseStatus,
  Verdict,
  Verified,
} from './provider.js';
import {
  eventOf,
  ids,
  partialRefund,
  timeOf,
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
const STATUS: Record<string, PurchaseStatus> = {
  active: 'active',
  on_trial: 'trialing',
  past_due: 'past_due',
  unpaid: 'past_due',
  paused: 'paused',
  cancelled: 'active',
  expired: 'expired',
};

/** What a row reads: the object's status, its purchase and, for a refund, how much of it. */
interface Subject {
  status: unknown;
  purchase: Pick<Move, 'reference' | 'kind'>;
  /** Refunded in part (refunded_amount below total). */
  partial: boolean;
  /** The order id: a payment id of the purchase. */
  order: string | null;
}

const statusOf = (status: unknown): PurchaseStatus | null =>
  typeof status === 'string' && Object.hasOwn(STATUS, status) ? STATUS[status] : null;

const subscriptionMove =
  (type: string, verdictOf: (status: unknown) => Verdict, more: Partial<Move> = {}) =>
  ({ status, purchase }: Subject): Move => ({
    verdict: verdictOf(status),
    ...purchase,
    status: statusOf(status),
    ...more,
  });
const activeOr = (type: string) => (status: unknown) =>
  ACTIVE.has(status as string) ? PAID : withStatus(type, status);

/**
 * What each event type moves. An order is its own purchase until the subscription whose order_id
 * names it arrives; the subscription's id then names the same purchase (the order id is kept among
 * its payment ids). Refunds reach the purchase through the order id, or the subscription an invoice names.
 */
const MOVES: Moves<Subject> = {
  order_created: ({ status, purchase }) => ({
    verdict: status === 'paid' ? PAID : withStatus('order_created', status),
    ...purchase,
    status: 'paid',
  }),
  subscription_payment_success: ({ purchase }) => ({ verdict: PAID, ...purchase, status: 'active' }),
  subscription_created: subscriptionMove('subscription_created', activeOr('subscription_created')),
  subscription_resumed: subscriptionMove('subscription_resumed', activeOr('subscription_resumed'), {
    revives: true,
  }),
  subscription_updated: subscriptionMove('subscription_updated', (status) =>
    ACTIVE.has(status as string)
      ? PAID
      : LAPSED.has(status as string)
        ? UNPAID
        : withStatus('subscription_updated', status),
  ),
  subscription_cancelled: subscriptionMove(
    'subscription_cancelled',
    () => ({
      kind: 'ignored',
      detail:
        "subscription_cancelled: cancelled at the period's end, it stays paid until subscription_expired.",
    }),
    { notes: true, status: null },
  ),
  subscription_expired: subscriptionMove('subscription_expired', () => UNPAID, {
    status: 'expired',
    ends: true,
  }),
  subscription_paused: subscriptionMove('subscription_paused', () => UNPAID, { status: 'paused' }),
  order_refunded: ({ partial, order }) => ({
    verdict: partial ? partialRefund('order_refunded') : UNPAID,
    reference: null,
    refund: { paymentIds: ids(order), status: 'refunded' },
  }),
  subscription_payment_refunded: ({ partial, purchase }) => ({
    verdict: partial ? partialRefund('subscription_payment_refunded') : UNPAID,
    ...purchase,
    refund: { paymentIds: [], status: 'refunded' },
  }),
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
    const isOrder = data.type === 'orders';
    const order = isOrder ? str(data.id) : str(attributes.order_id);
    const purchase: Subject['purchase'] = isOrder
      ? { reference: str(data.id), kind: 'order' }
      : data.type === 'subscription-invoices'
        ? { reference: str(attributes.subscription_id), kind: 'subscription' }
        : { reference: str(data.id), kind: 'subscription' };
    const refunded = attributes.refunded_amount;
    const total = attributes.total;
    const partial =
      attributes.status === 'partial_refund' ||
      (typeof refunded === 'number' && typeof total === 'number' && refunded > 0 && refunded < total);
    const move = moveOf(MOVES, type, { status: attributes.status, purchase, partial, order });
    const item = isOrder ? obj(attributes.first_order_item) : attributes;
    const hasProduct = item.variant_id !== undefined || item.product_id !== undefined;
    return eventOf(sha256Hex(body), type, obj(meta.custom_data).licensegate_domain, move, {
      license: obj(meta.custom_data).licensegate_license,
      email: str(attributes.user_email),
      customerName: str(attributes.user_name),
      occurredAt: timeOf(attributes.updated_at),
      customerId: str(attributes.customer_id),
      productIds: hasProduct ? ids(item.variant_id, item.product_id) : null,
      // Subscription invoices have ids of their own numbering: only order ids are kept.
      paymentIds: data.type === 'subscription-invoices' ? [] : ids(order),
      cancelAtPeriodEnd:
        data.type === 'subscriptions'
          ? attributes.cancelled === true || attributes.status === 'cancelled'
          : null,
      currentPeriodEnd: timeOf(attributes.ends_at ?? attributes.renews_at),
    });
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

  /** order_created of a paid order in test mode, as Lemon Squeezy's webhook docs and its Order object have it. */
  samplePayment(now: Date, payment: SamplePayment): Json {
    const at = now.toISOString().replace(/\.\d{3}Z$/, '.000000Z');
    const id = String(randomInt(1, 2_000_000_000));
    return {
      meta: {
        test_mode: true,
        event_name: 'order_created',
        webhook_id: randomUUID(),
        custom_data: payment.metadata,
      },
      data: {
        type: 'orders',
        id,
        attributes: {
          store_id: 1,
          identifier: randomUUID(),
          order_number: randomInt(1, 2_000_000_000),
          currency: 'USD',
          subtotal: 4900,
          total: 4900,
          refunded_amount: 0,
          status: 'paid',
          status_formatted: 'Paid',
          refunded: false,
          ...(payment.product ? { first_order_item: { variant_id: payment.product } } : {}),
          created_at: at,
          updated_at: at,
          test_mode: true,
        },
        links: { self: `https://api.lemonsqueezy.com/v1/orders/${id}` },
      },
    };
  },
};
