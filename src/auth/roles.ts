/** The roles of a membership, from most to least able (docs/security.md#roles). */
export const ROLES = ['owner', 'admin', 'developer', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** Whether `role` is `least` or above it. */
export const reaches = (role: Role, least: Role): boolean => ROLES.indexOf(role) <= ROLES.indexOf(least);

/**
 * Every management operation and the least role that may call it, as OpenAPI names it: the one table
 * RoleGuard reads and buildOpenApiDocument writes into the document as `x-required-role`. An
 * operation missing here is refused to every member but the owner (test/e2e/roles.e2e-spec.ts lists
 * the document's operations against it). API keys made by the CLI or the account's holder act as owner.
 */
export const ROUTE_ROLES: Readonly<Record<string, Role>> = {
  'GET /api/v1/analytics': 'viewer',
  'GET /api/v1/audit-log': 'viewer',
  'GET /api/v1/api-keys/current': 'viewer',
  'GET /api/v1/server': 'viewer',
  // Keys carry their maker's power: only those who may manage people manage them.
  'GET /api/v1/api-keys': 'admin',
  'POST /api/v1/api-keys': 'admin',
  'DELETE /api/v1/api-keys/{id}': 'admin',
  'POST /api/v1/api-keys/{id}/roll': 'admin',
  // Members: everyone reads who is in; admins invite, change and remove (the owner role: owners only).
  'GET /api/v1/members': 'viewer',
  'GET /api/v1/members/invitations': 'viewer',
  'POST /api/v1/members/invitations': 'admin',
  'DELETE /api/v1/members/invitations/{id}': 'admin',
  'PATCH /api/v1/members/{id}': 'admin',
  'DELETE /api/v1/members/{id}': 'admin',

  'GET /api/v1/project': 'viewer',
  'POST /api/v1/project': 'developer',
  'GET /api/v1/project/{project}': 'viewer',
  'PATCH /api/v1/project/{project}': 'developer',
  'PUT /api/v1/project/{project}': 'developer',
  'DELETE /api/v1/project/{project}': 'developer',
  'POST /api/v1/project/{project}/lock': 'developer',
  'POST /api/v1/project/{project}/unlock': 'developer',
  'GET /api/v1/project/{project}/signing-key': 'viewer',
  'GET /api/v1/project/{project}/has-paid': 'viewer',
  'GET /api/v1/project/{project}/analytics': 'viewer',
  'GET /api/v1/project/{project}/audit-log': 'viewer',

  'GET /api/v1/project/{project}/domains': 'viewer',
  'POST /api/v1/project/{project}/domains': 'developer',
  'GET /api/v1/project/{project}/domains/{domain}': 'viewer',
  'PATCH /api/v1/project/{project}/domains/{domain}': 'developer',
  'PUT /api/v1/project/{project}/domains/{domain}': 'developer',
  'DELETE /api/v1/project/{project}/domains/{domain}': 'developer',

  'GET /api/v1/project/{project}/licenses': 'viewer',
  'POST /api/v1/project/{project}/licenses': 'developer',
  'GET /api/v1/project/{project}/licenses/{license}': 'viewer',
  'PATCH /api/v1/project/{project}/licenses/{license}': 'developer',
  'PUT /api/v1/project/{project}/licenses/{license}': 'developer',
  'DELETE /api/v1/project/{project}/licenses/{license}': 'developer',
  'GET /api/v1/project/{project}/licenses/{license}/usage': 'viewer',
  'GET /api/v1/project/{project}/licenses/{license}/activations': 'viewer',
  // What support is for: a customer's license back on, off, or a slot freed.
  'POST /api/v1/project/{project}/licenses/{license}/revoke': 'support',
  'POST /api/v1/project/{project}/licenses/{license}/reactivate': 'support',
  'DELETE /api/v1/project/{project}/licenses/{license}/activations/{activation}': 'support',

  'GET /api/v1/project/{project}/injectables': 'viewer',
  'POST /api/v1/project/{project}/injectables': 'developer',
  'GET /api/v1/project/{project}/injectables/{injectable}': 'viewer',
  'PUT /api/v1/project/{project}/injectables/{injectable}': 'developer',
  'DELETE /api/v1/project/{project}/injectables/{injectable}': 'developer',

  'GET /api/v1/project/{project}/payment-connectors': 'viewer',
  'POST /api/v1/project/{project}/payment-connectors': 'developer',
  'GET /api/v1/project/{project}/payment-connectors/{connector}': 'viewer',
  'PATCH /api/v1/project/{project}/payment-connectors/{connector}': 'developer',
  'DELETE /api/v1/project/{project}/payment-connectors/{connector}': 'developer',
  'GET /api/v1/project/{project}/payment-connectors/{connector}/events': 'viewer',
  'GET /api/v1/project/{project}/payment-connectors/{connector}/events/{event}': 'viewer',
  'POST /api/v1/project/{project}/payment-connectors/{connector}/test-event': 'developer',
  'GET /api/v1/project/{project}/subscriptions': 'viewer',
  'GET /api/v1/project/{project}/subscriptions/{subscription}': 'viewer',

  'GET /api/v1/project/{project}/customers': 'viewer',
  'POST /api/v1/project/{project}/customers': 'developer',
  'GET /api/v1/project/{project}/customers/{customer}': 'viewer',
  // Support answers buyers: correcting an email or a name is theirs.
  'PATCH /api/v1/project/{project}/customers/{customer}': 'support',
  'DELETE /api/v1/project/{project}/customers/{customer}': 'developer',

  // Support opens a customer's portal for them.
  'POST /api/v1/project/{project}/portal-sessions': 'support',

  'GET /api/v1/project/{project}/plans': 'viewer',
  'POST /api/v1/project/{project}/plans': 'developer',
  'GET /api/v1/project/{project}/plans/{plan}': 'viewer',
  'PATCH /api/v1/project/{project}/plans/{plan}': 'developer',
  'DELETE /api/v1/project/{project}/plans/{plan}': 'developer',

  'GET /api/v1/project/{project}/webhook-deliveries': 'viewer',
  'POST /api/v1/project/{project}/webhook-deliveries/{delivery}/retry': 'developer',
};

/** The operation of a matched Express route: `POST /api/v1/project/{project}/lock`. */
export const operationOf = (method: string, routePath: string): string =>
  `${method.toUpperCase()} ${routePath.replace(/:(\w+)/g, '{$1}')}`;

/** The least role of an operation; unknown ones need the owner (fail closed). */
export const requiredRole = (operation: string): Role => ROUTE_ROLES[operation] ?? 'owner';

export const roleRefusal = (least: Role, role: Role) =>
  `This action needs the ${least} role or higher; your role is ${role}.`;
