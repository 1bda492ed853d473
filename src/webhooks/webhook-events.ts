/** Every event a project's webhook may be sent (docs/decisions.md#webhooks); what `webhook_events` subscribes to. */
export const WEBHOOK_EVENTS = [
  'project.created',
  'project.updated',
  'project.deleted',
  'project.paid',
  'project.unpaid',
  'project.locked',
  'project.unlocked',
  'domain.created',
  'domain.updated',
  'domain.deleted',
  'domain.paid',
  'domain.unpaid',
  'license.created',
  'license.updated',
  'license.deleted',
  'license.revoked',
  'license.reactivated',
  'license.paid',
  'license.unpaid',
  'license.usage_limit_reached',
  'license.deactivated',
  'license.domain_limit_reached',
  'license.activation_cap_reached',
  'license.expiring',
  'license.expired',
  'license.plan_changed',
  'license.quota_reached',
  'injectable.created',
  'injectable.updated',
  'injectable.deleted',
  'payment_connector.created',
  'payment_connector.updated',
  'payment_connector.deleted',
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'plan.created',
  'plan.updated',
  'plan.deleted',
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** `webhook_events` that subscribe to every event, the default. */
export const ALL_EVENTS = '*';

/** Whether a project subscribed to `events` (null: never set, i.e. the default) is sent `type`. */
export function subscribes(events: readonly string[] | null | undefined, type: string): boolean {
  return !events || events.includes(ALL_EVENTS) || events.includes(type);
}
