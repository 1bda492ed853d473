import type { Json, Moves, PaymentProvider, ProviderEvent, Verdict } from './provider.js';
import {
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

/** A subscription event's order is the subscription itself. */
const ofSubscription = (verdict: Verdict) => (data: Json) => ({ verdict, reference: str(data.id) });

/** What each event type moves, read from the event's `data`. */
const MOVES: Moves<Json> = {
  'transaction.completed': (transaction) => ({
    verdict: PAID,
    reference: str(transaction.subscription_id) ?? str(transaction.id),
  }),
  'subscription.activated': ofSubscription(PAID),
  'subscription.resumed': ofSubscription(PAID),
  'subscription.canceled': ofSubscription(UNPAID),
  'subscription.past_due': ofSubscription(UNPAID),
  'subscription.paused': ofSubscription(UNPAID),
  'subscription.updated': (subscription) => ({
    verdict: ACTIVE.has(subscription.status as string)
      ? PAID
      : withStatus('subscription.updated', subscription.status),
    reference: str(subscription.id),
  }),
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
    const { verdict, reference } = moveOf(MOVES, type, data);
    const domain = obj(data.custom_data).licensegate_domain;
    const email = str(obj(data.customer).email);
    return { id, type, verdict, domain, reference, email };
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
};
