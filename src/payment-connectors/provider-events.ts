import { sha256Hex } from '../common/crypto/crypto.js';
import type { Provider } from './payment-connector.entity.js';

/** What an event means for the gate: paid, unpaid, or nothing (with the reason). */
export type Verdict = { kind: 'paid' } | { kind: 'unpaid' } | { kind: 'ignored'; detail: string };

/** An event as the connector reads it (docs/payments.md, "What pays and what does not"). */
export interface ProviderEvent {
  id: string;
  type: string;
  verdict: Verdict;
  /** `licensegate_domain` from the provider's metadata, when set. */
  domain: unknown;
  /** The order or subscription the event is about, for licenses from orders (null: none). */
  reference: string | null;
  email: string | null;
}

/** A field of an object, whatever the input (payloads are the provider's, not ours). */
type Json = Record<string, unknown>;
const obj = (value: unknown): Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
const str = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null;

const PAID: Verdict = { kind: 'paid' };
const UNPAID: Verdict = { kind: 'unpaid' };
const notActedOn = (type: string): Verdict => ({
  kind: 'ignored',
  detail: `The event type ${type} is not one that moves has_paid.`,
});
const withStatus = (type: string, status: unknown): Verdict => ({
  kind: 'ignored',
  detail: `${type} with status ${shown(status)} neither pays nor stops payment.`,
});

/**
 * A value of the provider's payload as a detail quotes it: a string in JSON quotes (cut short), a
 * number or boolean as is, an array or object by its kind only. Never JSON.stringify on what may be
 * an array nested a hundred thousand deep: that overflows the stack.
 */
export function shown(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 255 ? `${value.slice(0, 255)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  return Array.isArray(value) ? 'an array' : 'an object';
}

/** Reads a verified, parsed event of `provider`; null when it carries no event id. */
export function readEvent(
  provider: Provider,
  payload: Json,
  body: Buffer,
  headerEventId: string | undefined,
): ProviderEvent | null {
  switch (provider) {
    case 'stripe':
      return stripe(payload);
    case 'paddle':
      return paddle(payload);
    case 'lemonsqueezy':
      return lemonSqueezy(payload, body);
    case 'polar':
      return polar(payload, headerEventId);
    case 'standard':
      return standard(payload, headerEventId);
  }
}

const STRIPE_ACTIVE = new Set(['active', 'trialing']);
const STRIPE_LAPSED = new Set(['past_due', 'unpaid', 'canceled', 'incomplete_expired', 'paused']);

function stripe(payload: Json): ProviderEvent | null {
  const id = str(payload.id);
  const type = str(payload.type) ?? '';
  if (!id) return null;
  const object = obj(obj(payload.data).object);
  const status = object.status;
  let verdict: Verdict;
  let reference: string | null = null;
  switch (type) {
    case 'checkout.session.completed':
      verdict =
        object.payment_status === 'paid'
          ? PAID
          : {
              kind: 'ignored',
              detail: `checkout.session.completed with payment_status ${shown(object.payment_status)}: paid only once the payment succeeds (checkout.session.async_payment_succeeded).`,
            };
      reference = str(object.subscription) ?? str(object.id);
      break;
    case 'checkout.session.async_payment_succeeded':
      verdict = PAID;
      reference = str(object.subscription) ?? str(object.id);
      break;
    case 'invoice.paid':
      verdict = PAID;
      reference =
        str(object.subscription) ??
        str(obj(obj(object.parent).subscription_details).subscription) ??
        str(object.id);
      break;
    case 'customer.subscription.created':
      verdict = STRIPE_ACTIVE.has(status as string) ? PAID : withStatus(type, status);
      reference = str(object.id);
      break;
    case 'customer.subscription.updated':
      verdict = STRIPE_ACTIVE.has(status as string)
        ? PAID
        : STRIPE_LAPSED.has(status as string)
          ? UNPAID
          : withStatus(type, status);
      reference = str(object.id);
      break;
    case 'customer.subscription.deleted':
      verdict = UNPAID;
      reference = str(object.id);
      break;
    case 'charge.refunded': {
      const full =
        object.refunded === true ||
        (typeof object.amount === 'number' &&
          typeof object.amount_refunded === 'number' &&
          object.amount_refunded >= object.amount);
      verdict = full
        ? UNPAID
        : {
            kind: 'ignored',
            detail: 'charge.refunded for part of the charge: only a full refund stops payment.',
          };
      break;
    }
    case 'charge.dispute.created':
      verdict = UNPAID;
      break;
    default:
      verdict = notActedOn(type);
  }
  // Invoices carry their subscription's metadata (subscription_details, or parent.subscription_details on newer API versions).
  const metadata = [
    object.metadata,
    obj(object.subscription_details).metadata,
    obj(obj(object.parent).subscription_details).metadata,
  ].map(obj);
  const domain = metadata.find((m) => m.licensegate_domain !== undefined)?.licensegate_domain;
  const email =
    str(obj(object.customer_details).email) ?? str(object.customer_email) ?? str(object.receipt_email);
  return { id, type, verdict, domain, reference, email };
}

const PADDLE_ACTIVE = new Set(['active', 'trialing']);

function paddle(payload: Json): ProviderEvent | null {
  const id = str(payload.event_id);
  const type = str(payload.event_type) ?? '';
  if (!id) return null;
  const data = obj(payload.data);
  let verdict: Verdict;
  let reference: string | null = null;
  switch (type) {
    case 'transaction.completed':
      verdict = PAID;
      reference = str(data.subscription_id) ?? str(data.id);
      break;
    case 'subscription.activated':
    case 'subscription.resumed':
    case 'subscription.canceled':
    case 'subscription.past_due':
    case 'subscription.paused':
      verdict = ['subscription.activated', 'subscription.resumed'].includes(type) ? PAID : UNPAID;
      reference = str(data.id);
      break;
    case 'subscription.updated':
      verdict = PADDLE_ACTIVE.has(data.status as string) ? PAID : withStatus(type, data.status);
      reference = str(data.id);
      break;
    default:
      verdict = notActedOn(type);
  }
  const domain = obj(data.custom_data).licensegate_domain;
  const email = str(obj(data.customer).email);
  return { id, type, verdict, domain, reference, email };
}

const LEMON_ACTIVE = new Set(['active', 'on_trial']);
const LEMON_LAPSED = new Set(['past_due', 'unpaid', 'expired', 'paused']);

/**
 * Lemon Squeezy's payloads carry no event id: the SHA-256 of the body is one. A subscription is
 * referred to by its order (attributes.order_id), so that the order_created and subscription_created
 * of one purchase issue one license; subscription_payment_success moves has_paid only (its invoice
 * names the subscription, not the order).
 */
function lemonSqueezy(payload: Json, body: Buffer): ProviderEvent {
  const meta = obj(payload.meta);
  const type = str(meta.event_name) ?? '';
  const data = obj(payload.data);
  const attributes = obj(data.attributes);
  const status = attributes.status;
  const isOrder = data.type === 'orders';
  const orderRef = isOrder ? str(data.id) : str(attributes.order_id);
  let verdict: Verdict;
  let reference: string | null = orderRef;
  switch (type) {
    case 'order_created':
      verdict = status === 'paid' ? PAID : withStatus(type, status);
      break;
    case 'subscription_payment_success':
      verdict = PAID;
      reference = null;
      break;
    case 'subscription_created':
    case 'subscription_resumed':
      verdict = LEMON_ACTIVE.has(status as string) ? PAID : withStatus(type, status);
      break;
    case 'subscription_updated':
      verdict = LEMON_ACTIVE.has(status as string)
        ? PAID
        : LEMON_LAPSED.has(status as string)
          ? UNPAID
          : withStatus(type, status);
      break;
    case 'subscription_expired':
    case 'subscription_paused':
    case 'order_refunded':
      verdict = UNPAID;
      break;
    default:
      verdict = notActedOn(type);
      reference = null;
  }
  return {
    id: sha256Hex(body),
    type,
    verdict,
    domain: obj(meta.custom_data).licensegate_domain,
    reference,
    email: str(attributes.user_email),
  };
}

function polar(payload: Json, headerEventId: string | undefined): ProviderEvent | null {
  if (!headerEventId) return null;
  const type = str(payload.type) ?? '';
  const data = obj(payload.data);
  let verdict: Verdict;
  let reference: string | null = null;
  switch (type) {
    case 'order.paid':
    case 'order.refunded':
      verdict = type === 'order.paid' ? PAID : UNPAID;
      reference = str(data.subscription_id) ?? str(data.id);
      break;
    case 'subscription.active':
    case 'subscription.uncanceled':
    case 'subscription.revoked':
      verdict = type === 'subscription.revoked' ? UNPAID : PAID;
      reference = str(data.id);
      break;
    default:
      verdict = notActedOn(type);
  }
  const email = str(obj(data.customer).email) ?? str(obj(data.user).email);
  return {
    id: headerEventId,
    type,
    verdict,
    domain: obj(data.metadata).licensegate_domain,
    reference,
    email,
  };
}

/**
 * Any sender that signs per Standard Webhooks: `{type, data: {metadata}}`; `data.reference` and
 * `data.customer_email`, when sent, play the part of an order for licenses from orders.
 */
function standard(payload: Json, headerEventId: string | undefined): ProviderEvent | null {
  if (!headerEventId) return null;
  const type = str(payload.type) ?? '';
  const data = obj(payload.data);
  const verdict: Verdict =
    type === 'payment.succeeded'
      ? PAID
      : type === 'payment.failed' || type === 'payment.refunded'
        ? UNPAID
        : notActedOn(type);
  return {
    id: headerEventId,
    type,
    verdict,
    domain: obj(data.metadata).licensegate_domain,
    reference: verdict.kind === 'ignored' ? null : str(data.reference),
    email: str(data.customer_email),
  };
}
