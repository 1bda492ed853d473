import type {
  Json,
  SamplePayment,
  Move,
  Moves,
  PaymentProvider,
  ProviderEvent,
  PurchaseStatus,
  Refund,
  Verdict,
} from './provider.js';
import {
  eventOf,
  ids,
  list,
  partialRefund,
  shown,
  timeOf,
  moveOf,
  obj,
  PAID,
  randomId,
  str,
  timestampedHmac,
  UNPAID,
  withStatus,
  secretRule,
} from './provider.js';

const ACTIVE = new Set(['active', 'trialing']);
const STATUS = new Set<PurchaseStatus>(['active', 'trialing', 'past_due', 'paused', 'canceled']);
const statusOf = (value: unknown): PurchaseStatus | null =>
  STATUS.has(value as PurchaseStatus) ? (value as PurchaseStatus) : null;

/** A subscription event's purchase is the subscription itself. */
const ofSubscription =
  (verdict: Verdict, more: Partial<Move> = {}) =>
  (data: Json): Move => ({ verdict, reference: str(data.id), status: statusOf(data.status), ...more });

/**
 * An adjustment (a refund, a chargeback or its reversal) once approved: it names its transaction, a
 * payment id kept from the purchase's transaction.completed.
 */
const adjustment =
  (type: string) =>
  (data: Json): Move => {
    const refund = (status: Refund['status']): Refund => ({ paymentIds: ids(data.transaction_id), status });
    const action = data.action;
    if (action !== 'refund' && action !== 'chargeback' && action !== 'chargeback_reverse')
      return {
        verdict: {
          kind: 'ignored',
          detail: `${type} with action ${shown(action)} neither pays nor stops payment.`,
        },
        reference: null,
      };
    if (data.status !== 'approved')
      return {
        verdict: {
          kind: 'ignored',
          detail: `${type} with status ${shown(data.status)}: an adjustment moves nothing until it is approved.`,
        },
        reference: null,
        refund: refund(null),
      };
    if (action === 'chargeback_reverse') return { verdict: PAID, reference: null, refund: refund(null) };
    const partial = data.type === 'partial' || list(data.items).some((item) => item.type === 'partial');
    return {
      verdict: partial ? partialRefund(`${type} (${action})`) : UNPAID,
      reference: null,
      refund: refund(action === 'refund' ? 'refunded' : 'disputed'),
    };
  };

/** What each event type moves, read from the event's `data`. */
const MOVES: Moves<Json> = {
  'transaction.completed': (transaction) =>
    str(transaction.subscription_id)
      ? { verdict: PAID, reference: str(transaction.subscription_id), status: 'active' }
      : { verdict: PAID, reference: str(transaction.id), kind: 'order', status: 'paid' },
  'subscription.activated': ofSubscription(PAID),
  'subscription.resumed': ofSubscription(PAID, { revives: true }),
  'subscription.canceled': ofSubscription(UNPAID, { status: 'canceled', ends: true }),
  'subscription.past_due': ofSubscription(UNPAID, { status: 'past_due' }),
  'subscription.paused': ofSubscription(UNPAID, { status: 'paused' }),
  'subscription.updated': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : withStatus('subscription.updated', subscription.status),
    reference: str(subscription.id),
    status: statusOf(subscription.status),
  }),
  'adjustment.created': adjustment('adjustment.created'),
  'adjustment.updated': adjustment('adjustment.updated'),
};

/** Paddle Billing's ids: a prefix and 26 characters of Crockford's base32, lower case. */
const paddleId = (prefix: string) => randomId(prefix, 26, '0123456789abcdefghjkmnpqrstvwxyz');

/** Paddle (docs/payments.md#paddle): `Paddle-Signature: ts=<unix>;h1=<hex>`, the event id in `event_id`. */
export const paddle: PaymentProvider<'paddle'> = {
  name: 'paddle',
  secretProblem: secretRule('Paddle', 'pdl_ntfset_', 'the notification destination in Paddle'),

  ...timestampedHmac({
    header: 'Paddle-Signature',
    separator: ';',
    time: 'ts',
    signature: 'h1',
    joiner: ':',
  }),

  read(payload: Json): ProviderEvent | null {
    const id = str(payload.event_id);
    const type = str(payload.event_type) ?? '';
    if (!id) return null;
    const data = obj(payload.data);
    const move = moveOf(MOVES, type, data);
    const domain = obj(data.custom_data).licensegate_domain;
    const license = obj(data.custom_data).licensegate_license;
    const items = list(data.items);
    const isTransaction = type.startsWith('transaction.');
    return eventOf(id, type, domain, move, {
      license,
      email: str(obj(data.customer).email),
      customerName: str(obj(data.customer).name),
      occurredAt: timeOf(payload.occurred_at),
      customerId: str(data.customer_id) ?? str(obj(data.customer).id),
      productIds: items.length
        ? ids(
            ...items.flatMap((item) => [
              str(obj(item.price).id) ?? str(item.price_id),
              str(obj(item.price).product_id) ?? str(obj(item.product).id),
            ]),
          )
        : null,
      paymentIds: isTransaction ? ids(data.id) : [],
      cancelAtPeriodEnd: type.startsWith('subscription.')
        ? obj(data.scheduled_change).action === 'cancel'
        : null,
      currentPeriodEnd: timeOf(obj(data.current_billing_period).ends_at),
    });
  },

  /** customer.created, as Paddle's webhook reference and its Node SDK's fixtures have it. */
  sampleEvent(now: Date): Json {
    const at = now.toISOString();
    return {
      event_id: paddleId('evt_'),
      event_type: 'customer.created',
      occurred_at: at,
      notification_id: paddleId('ntf_'),
      data: {
        id: paddleId('ctm_'),
        name: 'Jo Brown',
        email: 'jo@example.com',
        locale: 'en',
        status: 'active',
        custom_data: null,
        created_at: at,
        updated_at: at,
        import_meta: null,
        marketing_consent: false,
      },
    };
  },

  /** transaction.completed of a one-time payment (no subscription_id), as Paddle's webhook reference has it. */
  samplePayment(now: Date, payment: SamplePayment): Json {
    const at = now.toISOString();
    return {
      event_id: paddleId('evt_'),
      event_type: 'transaction.completed',
      occurred_at: at,
      notification_id: paddleId('ntf_'),
      data: {
        id: paddleId('txn_'),
        status: 'completed',
        customer_id: null,
        subscription_id: null,
        origin: 'web',
        currency_code: 'USD',
        custom_data: payment.metadata,
        items: payment.product ? [{ price: { id: payment.product }, quantity: 1 }] : [],
        created_at: at,
        updated_at: at,
        billed_at: at,
      },
    };
  },
};
