import { randomUUID } from 'node:crypto';
import type { Json, Moves, PaymentProvider, Verdict } from './provider.js';
import { obj, PAID, str, UNPAID, secretRule } from './provider.js';
import {
  readStandardEvent,
  signStandardWebhook,
  STANDARD_WEBHOOK_HEADERS,
  verifyStandardWebhook,
} from './standard.js';

const ofOrder = (verdict: Verdict) => (order: Json) => ({
  verdict,
  reference: str(order.subscription_id) ?? str(order.id),
});
const ofSubscription = (verdict: Verdict) => (subscription: Json) => ({
  verdict,
  reference: str(subscription.id),
});

/** What each event type moves, read from the event's `data`. */
const MOVES: Moves<Json> = {
  'order.paid': ofOrder(PAID),
  'order.refunded': ofOrder(UNPAID),
  'subscription.active': ofSubscription(PAID),
  'subscription.uncanceled': ofSubscription(PAID),
  'subscription.revoked': ofSubscription(UNPAID),
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
    readStandardEvent(
      MOVES,
      payload,
      headerEventId,
      (data) => str(obj(data.customer).email) ?? str(obj(data.user).email),
    ),
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
};
