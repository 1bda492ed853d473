import type {
  Json,
  SamplePayment,
  Move,
  Moves,
  PaymentProvider,
  ProviderEvent,
  PurchaseStatus,
  Refund,
} from './provider.js';
import {
  eventOf,
  idOf,
  ids,
  list,
  timeOf,
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
const STATUS: Record<string, PurchaseStatus> = {
  active: 'active',
  trialing: 'trialing',
  past_due: 'past_due',
  unpaid: 'past_due',
  canceled: 'canceled',
  incomplete_expired: 'expired',
  paused: 'paused',
};
const statusOf = (value: unknown): PurchaseStatus | null =>
  typeof value === 'string' && Object.hasOwn(STATUS, value) ? STATUS[value] : null;

/**
 * A Checkout Session's or an invoice's purchase: its subscription when it has one (the session, the
 * invoices and the subscription's own events share it), else the session or invoice itself, an order.
 */
function purchaseOf(object: Json): Pick<Move, 'reference' | 'kind' | 'status'> {
  const subscription =
    idOf(object.subscription) ?? str(obj(obj(object.parent).subscription_details).subscription);
  return subscription
    ? { reference: subscription, kind: 'subscription', status: 'active' }
    : { reference: str(object.id), kind: 'order', status: 'paid' };
}

const refundOf = (object: Json, status: Refund['status']): Refund => ({
  paymentIds: ids(object.id, idOf(object.payment_intent), idOf(object.invoice), idOf(object.charge)),
  status,
});

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
    ...purchaseOf(session),
  }),
  'checkout.session.async_payment_succeeded': (session) => ({ verdict: PAID, ...purchaseOf(session) }),
  'invoice.paid': (invoice) => ({ verdict: PAID, ...purchaseOf(invoice) }),
  'customer.subscription.created': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : withStatus('customer.subscription.created', subscription.status),
    reference: str(subscription.id),
    status: statusOf(subscription.status),
  }),
  'customer.subscription.updated': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : LAPSED.has(subscription.status as string)
        ? UNPAID
        : withStatus('customer.subscription.updated', subscription.status),
    reference: str(subscription.id),
    status: statusOf(subscription.status),
  }),
  'customer.subscription.deleted': (subscription) => ({
    verdict: UNPAID,
    reference: str(subscription.id),
    status: 'canceled',
    ends: true,
  }),
  // A charge names neither the session nor the subscription: its payment ids lead to them.
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
    refund: refundOf(charge, 'refunded'),
  }),
  'charge.dispute.created': (dispute) => ({
    verdict: UNPAID,
    reference: null,
    refund: {
      ...refundOf(dispute, 'disputed'),
      paymentIds: ids(idOf(dispute.charge), idOf(dispute.payment_intent)),
    },
  }),
  'charge.dispute.closed': (dispute) => ({
    verdict:
      dispute.status === 'won'
        ? PAID
        : {
            kind: 'ignored',
            detail: `charge.dispute.closed with status ${shown(dispute.status)}: only a dispute won pays again.`,
          },
    reference: null,
    refund: { status: null, paymentIds: ids(idOf(dispute.charge), idOf(dispute.payment_intent)) },
  }),
};

/** What a Stripe object was sold as: a subscription's current items, a session's licensegate_product or payment link. */
function productsOf(type: string, object: Json): string[] | null {
  if (type.startsWith('customer.subscription.'))
    return ids(
      ...list(obj(object.items).data).flatMap((item) => [idOf(item.price), idOf(obj(item.price).product)]),
    );
  if (type.startsWith('checkout.session.')) {
    const found = ids(obj(object.metadata).licensegate_product, idOf(object.payment_link));
    return found.length > 0 ? found : null;
  }
  // Invoices name their subscription's products only in their lines, which carry proration: the purchase's are kept.
  return null;
}

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
    const move = moveOf(MOVES, type, object);
    // Invoices carry their subscription's metadata (subscription_details, or parent.subscription_details on newer API versions).
    const metadata = [
      object.metadata,
      obj(object.subscription_details).metadata,
      obj(obj(object.parent).subscription_details).metadata,
    ].map(obj);
    const domain = metadata.find((m) => m.licensegate_domain !== undefined)?.licensegate_domain;
    const license = metadata.find((m) => m.licensegate_license !== undefined)?.licensegate_license;
    const email =
      str(obj(object.customer_details).email) ?? str(object.customer_email) ?? str(object.receipt_email);
    const firstItem = list(obj(object.items).data)[0] ?? {};
    return eventOf(id, type, domain, move, {
      license,
      email,
      occurredAt: timeOf(payload.created),
      customerId: idOf(object.customer),
      customerName: str(obj(object.customer_details).name),
      productIds: productsOf(type, object),
      paymentIds: ids(
        type.startsWith('invoice.') ? object.id : null,
        idOf(object.payment_intent),
        idOf(object.invoice),
        idOf(object.charge),
        idOf(object.latest_invoice),
      ),
      cancelAtPeriodEnd:
        typeof object.cancel_at_period_end === 'boolean' ? object.cancel_at_period_end : null,
      currentPeriodEnd: timeOf(object.current_period_end ?? firstItem.current_period_end),
    });
  },

  /** customer.created, as the Stripe CLI's fixtures and the API reference's Customer object have it. */
  sampleEvent(now: Date): Json {
    const created = unixSeconds(now.getTime());
    return sampleEnvelope(created, 'customer.created', randomId('req_', 14, ALPHANUMERIC), {
      id: randomId('cus_', 14, ALPHANUMERIC),
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
    });
  },

  /** checkout.session.completed of a one-time payment, paid, in test mode (livemode false). */
  samplePayment(now: Date, payment: SamplePayment): Json {
    const created = unixSeconds(now.getTime());
    return sampleEnvelope(created, 'checkout.session.completed', null, {
      id: randomId('cs_test_', 58, ALPHANUMERIC),
      object: 'checkout.session',
      amount_subtotal: 4900,
      amount_total: 4900,
      created,
      currency: 'usd',
      customer: null,
      livemode: false,
      metadata: {
        ...payment.metadata,
        ...(payment.product ? { licensegate_product: payment.product } : {}),
      },
      mode: 'payment',
      payment_intent: randomId('pi_', 24, ALPHANUMERIC),
      payment_link: null,
      payment_status: 'paid',
      status: 'complete',
    });
  },
};

const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A test-mode Event around `object`, as Stripe wraps every event it sends. */
function sampleEnvelope(created: number, type: string, requestId: string | null, object: Json): Json {
  return {
    id: randomId('evt_', 24, ALPHANUMERIC),
    object: 'event',
    api_version: '2024-06-20',
    created,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: requestId, idempotency_key: null },
    type,
  };
}
