import { randomUUID } from 'node:crypto';
import type {
  Json,
  Move,
  Moves,
  PaymentProvider,
  PurchaseStatus,
  SamplePayment,
  Verdict,
} from './provider.js';
import { ids, obj, PAID, partialRefund, str, timeOf, UNPAID, secretRule } from './provider.js';
import {
  readStandardEvent,
  signStandardWebhook,
  STANDARD_WEBHOOK_HEADERS,
  verifyStandardWebhook,
} from './standard.js';

const STATUS: Record<string, PurchaseStatus> = {
  active: 'active',
  trialing: 'trialing',
  past_due: 'past_due',
  unpaid: 'past_due',
  canceled: 'canceled',
  incomplete_expired: 'expired',
};
const statusOf = (value: unknown): PurchaseStatus | null =>
  typeof value === 'string' && Object.hasOwn(STATUS, value) ? STATUS[value] : null;

/** An order's purchase: its subscription when it has one, else the order itself. */
const ofOrder = (order: Json): Pick<Move, 'reference' | 'kind' | 'status'> =>
  str(order.subscription_id)
    ? { reference: str(order.subscription_id), kind: 'subscription', status: 'active' }
    : { reference: str(order.id), kind: 'order', status: 'paid' };
const ofSubscription =
  (verdict: Verdict, more: Partial<Move> = {}) =>
  (subscription: Json): Move => ({
    verdict,
    reference: str(subscription.id),
    status: statusOf(subscription.status),
    ...more,
  });

/** What each event type moves, read from the event's `data`. */
const MOVES: Moves<Json> = {
  'order.paid': (order) => ({ verdict: PAID, ...ofOrder(order) }),
  // Refunded in full only: refunded_amount below the order's total is a partial refund.
  'order.refunded': (order) => {
    const refunded = order.refunded_amount;
    const total = order.total_amount ?? order.amount;
    const partial =
      typeof refunded === 'number' && typeof total === 'number' && refunded > 0 && refunded < total;
    return {
      verdict: partial ? partialRefund('order.refunded') : UNPAID,
      reference: null,
      refund: { paymentIds: ids(order.id), status: 'refunded' },
    };
  },
  'subscription.active': ofSubscription(PAID),
  'subscription.uncanceled': ofSubscription(PAID, { revives: true }),
  'subscription.revoked': ofSubscription(UNPAID, { status: 'canceled', ends: true }),
  'subscription.canceled': ofSubscription(
    {
      kind: 'ignored',
      detail:
        "subscription.canceled: cancelled at the period's end, it stays paid until subscription.revoked.",
    },
    { notes: true, status: null },
  ),
};

/**
 * Polar (docs/payments.md#polar): Standard Webhooks with the endpoint's `polar_whs_…` secret, whose
 * UTF-8 bytes are the key (its SDK base64-encodes them for the standardwebhooks library).
 */
export const polar: PaymentProvider<'polar'> = {
  name: 'polar',
  secretProblem: secretRule('Polar'),
  signatureHeaders: STANDARD_WEBHOOK_HEADERS,
  verify: verifyStandardWebhook,

  read: (payload, _body, headerEventId) =>
    readStandardEvent(MOVES, payload, headerEventId, (data, type) => ({
      email: str(obj(data.customer).email) ?? str(obj(data.user).email),
      customerName: str(obj(data.customer).name),
      // Its data.modified_at is often null: the payload's timestamp is the event's time.
      occurredAt: timeOf(payload.timestamp),
      customerId: str(data.customer_id) ?? str(obj(data.customer).id),
      productIds:
        data.product_id !== undefined || data.product !== undefined
          ? ids(data.product_id ?? obj(data.product).id)
          : null,
      paymentIds: type.startsWith('order.') ? ids(data.id) : [],
      cancelAtPeriodEnd: typeof data.cancel_at_period_end === 'boolean' ? data.cancel_at_period_end : null,
      currentPeriodEnd: timeOf(data.current_period_end),
    })),
  sign: signStandardWebhook,

  /** customer.created, as Polar's webhook reference and its SDK's Customer schema have it. */
  sampleEvent(now: Date): Json {
    const at = now.toISOString();
    return {
      type: 'customer.created',
      timestamp: at,
      data: {
        id: randomUUID(),
        created_at: at,
        modified_at: null,
        metadata: {},
        external_id: null,
        email: 'customer@example.com',
        email_verified: false,
        name: 'Jane Doe',
        billing_address: null,
        tax_id: null,
        organization_id: randomUUID(),
        deleted_at: null,
        avatar_url: null,
      },
    };
  },

  /** order.paid of a one-time order (no subscription_id), as Polar's webhook reference has it. */
  samplePayment(now: Date, payment: SamplePayment): Json {
    const at = now.toISOString();
    return {
      type: 'order.paid',
      timestamp: at,
      data: {
        id: randomUUID(),
        created_at: at,
        modified_at: null,
        status: 'paid',
        paid: true,
        subtotal_amount: 4900,
        total_amount: 4900,
        refunded_amount: 0,
        currency: 'usd',
        billing_reason: 'purchase',
        subscription_id: null,
        metadata: payment.metadata,
        ...(payment.product ? { product_id: payment.product } : {}),
      },
    };
  },
};
