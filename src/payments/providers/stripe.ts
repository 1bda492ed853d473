import type { Json, Moves, PaymentProvider, ProviderEvent } from './provider.js';
import {
  moveOf,
  obj,
  PAID,
  randomId,
  shown,
  str,
  timestampedHmac,
  unixSeconds,
  UNPAID,
  withStatus,
  secretRule,
} from './provider.js';

const ACTIVE = new Set(['active', 'trialing']);
const LAPSED = new Set(['past_due', 'unpaid', 'canceled', 'incomplete_expired', 'paused']);

/** A Checkout Session's order: its subscription, so that the session and the invoices share it. */
const sessionReference = (session: Json) => str(session.subscription) ?? str(session.id);

/** What each event type moves, read from the event's `data.object`. */
const MOVES: Moves<Json> = {
  'checkout.session.completed': (session) => ({
    verdict:
      session.payment_status === 'paid'
        ? PAID
        : {
            kind: 'ignored',
            detail: `checkout.session.completed with payment_status ${shown(session.payment_status)}: paid only once the payment succeeds (checkout.session.async_payment_succeeded).`,
          },
    reference: sessionReference(session),
  }),
  'checkout.session.async_payment_succeeded': (session) => ({
    verdict: PAID,
    reference: sessionReference(session),
  }),
  'invoice.paid': (invoice) => ({
    verdict: PAID,
    reference:
      str(invoice.subscription) ??
      str(obj(obj(invoice.parent).subscription_details).subscription) ??
      str(invoice.id),
  }),
  'customer.subscription.created': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : withStatus('customer.subscription.created', subscription.status),
    reference: str(subscription.id),
  }),
  'customer.subscription.updated': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : LAPSED.has(subscription.status as string)
        ? UNPAID
        : withStatus('customer.subscription.updated', subscription.status),
    reference: str(subscription.id),
  }),
  'customer.subscription.deleted': (subscription) => ({ verdict: UNPAID, reference: str(subscription.id) }),
  // A charge names neither the session nor the subscription: it moves has_paid, no license.
  'charge.refunded': (charge) => ({
    verdict:
      charge.refunded === true ||
      (typeof charge.amount === 'number' &&
        typeof charge.amount_refunded === 'number' &&
        charge.amount_refunded >= charge.amount)
        ? UNPAID
        : {
            kind: 'ignored',
            detail: 'charge.refunded for part of the charge: only a full refund stops payment.',
          },
    reference: null,
  }),
  'charge.dispute.created': () => ({ verdict: UNPAID, reference: null }),
};

/** Stripe (docs/payments.md#stripe): `Stripe-Signature: t=<unix>,v1=<hex>`, the event id in `id`. */
export const stripe: PaymentProvider<'stripe'> = {
  name: 'stripe',
  secretProblem: secretRule(
    'Stripe',
    'whsec_',
    "the webhook endpoint in Stripe's dashboard, or what stripe listen prints",
  ),

  // Several v1 signatures while a secret is rolled; other schemes (v0) are not checked.
  ...timestampedHmac({ header: 'Stripe-Signature', separator: ',', time: 't', signature: 'v1', joiner: '.' }),

  read(payload: Json): ProviderEvent | null {
    const id = str(payload.id);
    const type = str(payload.type) ?? '';
    if (!id) return null;
    const object = obj(obj(payload.data).object);
    const { verdict, reference } = moveOf(MOVES, type, object);
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
  },

  /** customer.created, as the Stripe CLI's fixtures and the API reference's Customer object have it. */
  sampleEvent(now: Date): Json {
    const created = unixSeconds(now.getTime());
    const alphanumeric = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    return {
      id: randomId('evt_', 24, alphanumeric),
      object: 'event',
      api_version: '2024-06-20',
      created,
      data: {
        object: {
          id: randomId('cus_', 14, alphanumeric),
          object: 'customer',
          address: null,
          balance: 0,
          created,
          currency: null,
          default_source: null,
          delinquent: false,
          description: null,
          discount: null,
          email: 'jenny.rosen@example.com',
          invoice_prefix: randomId('', 8, '0123456789ABCDEF'),
          invoice_settings: { custom_fields: null, default_payment_method: null, footer: null },
          livemode: false,
          metadata: {},
          name: 'Jenny Rosen',
          phone: null,
          preferred_locales: [],
          shipping: null,
          tax_exempt: 'none',
          test_clock: null,
        },
      },
      livemode: false,
      pending_webhooks: 1,
      request: { id: randomId('req_', 14, alphanumeric), idempotency_key: null },
      type: 'customer.created',
    };
  },
};
