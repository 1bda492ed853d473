// The event types and audit actions the console offers, checked against openapi.json by the compiler:
// each list is the keys of a Record over the generated type, so a type the API adds or drops fails
// `npm run typecheck` until the console follows.
import type { Schemas } from './api';
import type { paths } from '../../generated/openapi';

type AuditQuery = NonNullable<paths['/api/v1/audit-log']['get']['parameters']['query']>;
export type AuditAction = NonNullable<AuditQuery['action']>;
export type ResourceType = NonNullable<AuditQuery['resource_type']>;
/** A project's webhook may be sent these (`webhook_events`; `*` is every one). */
export type EventType = Exclude<NonNullable<Schemas['UpdateProjectDto']['webhook_events']>[number], '*'>;

const EVENTS: Record<EventType, true> = {
  'project.created': true,
  'project.updated': true,
  'project.deleted': true,
  'project.paid': true,
  'project.unpaid': true,
  'project.locked': true,
  'project.unlocked': true,
  'domain.created': true,
  'domain.updated': true,
  'domain.deleted': true,
  'domain.paid': true,
  'domain.unpaid': true,
  'license.created': true,
  'license.updated': true,
  'license.deleted': true,
  'license.revoked': true,
  'license.reactivated': true,
  'license.paid': true,
  'license.unpaid': true,
  'license.usage_limit_reached': true,
  'license.deactivated': true,
  'license.domain_limit_reached': true,
  'license.activation_cap_reached': true,
  'license.expiring': true,
  'license.expired': true,
  'license.plan_changed': true,
  'license.quota_reached': true,
  'injectable.created': true,
  'injectable.updated': true,
  'injectable.deleted': true,
  'payment_connector.created': true,
  'payment_connector.updated': true,
  'payment_connector.deleted': true,
  'customer.created': true,
  'customer.updated': true,
  'customer.deleted': true,
  'plan.created': true,
  'plan.updated': true,
  'plan.deleted': true,
};
export const EVENT_TYPES = Object.keys(EVENTS) as EventType[];

/** Audit actions that are not webhook events. */
const AUDIT_ONLY: Record<Exclude<AuditAction, EventType>, true> = {
  'api_key.created': true,
  'api_key.revoked': true,
  'api_key.rolled': true,
  'webhook_delivery.retried': true,
  'portal_session.created': true,
  'portal_session.opened': true,
  'member.invited': true,
  'member.joined': true,
  'member.updated': true,
  'member.removed': true,
};
export const AUDIT_ACTIONS: AuditAction[] = [
  ...EVENT_TYPES,
  ...(Object.keys(AUDIT_ONLY) as Exclude<AuditAction, EventType>[]),
];

const RESOURCES: Record<ResourceType, true> = {
  project: true,
  domain: true,
  license: true,
  injectable: true,
  payment_connector: true,
  customer: true,
  plan: true,
  api_key: true,
  webhook_delivery: true,
  portal_session: true,
};
export const RESOURCE_TYPES = Object.keys(RESOURCES) as ResourceType[];
