import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Response } from 'supertest';
import { AuditService } from '../../src/audit/audit.service.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { PortalLinkEntity } from '../../src/portal/portal.entity.js';
import { AuthService } from '../../src/auth/auth.service.js';
import { ProjectGenerations } from '../../src/common/cache/generations.js';
import { WebhookOutbox } from '../../src/webhooks/webhook-outbox.service.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeCustomer,
  makeLicense,
  makePlan,
  makeProject,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { makeConnector } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * The audit log (docs/decisions.md#audit-log): every management write of openapi.json leaves exactly
 * its rows, in the write's own transaction; a refused or rolled-back write leaves none; each key sees
 * its scope's rows only.
 */

type Json = Record<string, any>;
const DOC: Json = JSON.parse(readFileSync('openapi.json', 'utf8'));
const WRITE_METHODS = ['post', 'put', 'patch', 'delete'];
const USER_AGENT = 'audit-walk/1.0';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

/** Every write operation the API documents, as `METHOD /api/v1/path`. */
const WRITES = Object.entries(DOC.paths as Json)
  .flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => WRITE_METHODS.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  )
  .sort();

/** Writes that change nothing a user manages, and why they leave no audit row. */
const NOT_AUDITED: Record<string, string> = {
  'POST /api/v1/project/has-paid': 'the runtime check: it only counts usage and activations',
  'POST /api/v1/project/{project}/payment-connectors/{connector}/test-event':
    'without a body, an event of a type that moves nothing; a test payment is audited with the payment as actor (payment-test-event.e2e-spec.ts)',
  'POST /api/v1/auth/login': "signing in: a person's own session, no managed resource (sessions.e2e-spec.ts)",
  'POST /api/v1/auth/logout':
    "signing out: a person's own session, no managed resource (sessions.e2e-spec.ts)",
  'POST /api/v1/auth/password': "a person's own password, no managed resource (sessions.e2e-spec.ts)",
  'POST /api/v1/license/usage': 'metered usage: a count, like the runtime check (plans.e2e-spec.ts)',
  'POST /api/v1/auth/password-reset':
    "asking for a reset link: a person's own password, no managed resource (members.e2e-spec.ts)",
  'POST /api/v1/auth/password-reset/{token}':
    "a person's own password, set with a mailed link: no managed resource (members.e2e-spec.ts)",
  'POST /api/v1/auth/sso/start': 'starting a single sign-on: nothing is stored (sso.e2e-spec.ts)',
  'POST /api/v1/auth/sso/link':
    "signing in: a person's own SSO identity, no managed resource (sso.e2e-spec.ts)",
  'POST /api/v1/auth/setup':
    'the first user, made as the CLI users:create makes one: no project exists yet whose log it could go in (setup.e2e-spec.ts)',
};

/** Writes of a person joining with an invitation: audited with the actor "user", checked in members.e2e-spec.ts. */
const BY_INVITED_PERSON: Record<string, string> = {
  'POST /api/v1/auth/invitations/{token}/accept':
    'member.joined, by the person who joined: its row is checked in members.e2e-spec.ts',
  'POST /api/v1/auth/sso/callback':
    'member.joined when an invitation or an allowed domain admits the person: checked in sso.e2e-spec.ts',
};

/** A member of the walk's account with the role viewer: its membership id. */
async function walkMember({ t, send }: Walk): Promise<number> {
  const [owner] = expectSuccess((await send('GET', '/members')).res) as Json[];
  const [account] = await t.dataSource.query('SELECT id FROM accounts WHERE holder_user_id = ?', [
    owner.user_id,
  ]);
  const user = await t.app.get(AuthService).createUser({
    email: `walk-${randomBytes(4).toString('hex')}@example.test`,
    joins: { account_id: Number(account.id), role: 'viewer', project_ids: null },
  });
  const [row] = await t.dataSource.query('SELECT id FROM memberships WHERE user_id = ?', [user.id]);
  return Number(row.id);
}

/** Writes made with a license key, not an API key: audited with the actor "license", checked where their feature is tested. */
const BY_LICENSE_HOLDER: Record<string, string> = {
  'DELETE /api/v1/portal/licenses/{license}/activations/{activation}':
    'a buyer in the customer portal: its rows (actor "portal") are checked in portal.e2e-spec.ts',
  'POST /api/v1/license/deactivate':
    'self-service deactivation: its rows are checked in activations.e2e-spec.ts',
};

/** Writes a payment provider makes (its signature is the credential): audited with the actor "payment", checked in payment-connectors.e2e-spec.ts. */
const BY_PAYMENT_PROVIDER: Record<string, string> = {
  'POST /api/v1/payments/{provider}/{token}':
    "a provider's event: its rows are checked in payment-connectors.e2e-spec.ts",
};

/** The rows one write must leave: action, resource and the fields its `changes` must name. */
interface Row {
  action: string;
  resource_type: string;
  resource_id: number | null;
  project_id: number | null;
  changed: Record<string, [unknown, unknown] | 'any'>;
}

interface Walk {
  t: TestApp;
  key: string;
  /** Sends a request with a fresh X-Request-Id and the walk's User-Agent; returns the answer and the id. */
  send: (method: string, path: string, body?: object) => Promise<{ res: Response; requestId: string }>;
  /** The projects whose cache generation each request (by X-Request-Id) bumped, once per bump. */
  bumps: Map<string, number[]>;
}

/** How to make each write succeed, and the rows it must leave. Each entry makes its own fixtures. */
const STEPS: Record<string, (w: Walk) => Promise<{ res: Response; requestId: string; rows: Row[] }>> = {
  'POST /api/v1/members/invitations': async ({ send }) => {
    const email = `invited-${randomBytes(4).toString('hex')}@example.test`;
    const sent = await send('POST', '/members/invitations', { email, role: 'viewer' });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'member.invited',
          resource_type: 'member',
          resource_id: id,
          project_id: null,
          changed: { email: [null, email], role: [null, 'viewer'], expires_at: 'any' },
        },
      ],
    };
  },
  'DELETE /api/v1/members/invitations/{id}': async ({ send }) => {
    const email = `revoked-${randomBytes(4).toString('hex')}@example.test`;
    const id = expectSuccess(
      (await send('POST', '/members/invitations', { email, role: 'viewer' })).res,
      201,
    ).id;
    const sent = await send('DELETE', `/members/invitations/${id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'member.removed',
          resource_type: 'invitation',
          resource_id: id,
          project_id: null,
          changed: { revoked_at: 'any' },
        },
      ],
    };
  },
  'PATCH /api/v1/members/{id}': async (walk) => {
    const id = await walkMember(walk);
    const sent = await walk.send('PATCH', `/members/${id}`, { role: 'support' });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'member.updated',
          resource_type: 'member',
          resource_id: id,
          project_id: null,
          changed: { role: ['viewer', 'support'], version: [1, 2] },
        },
      ],
    };
  },
  'DELETE /api/v1/members/{id}': async (walk) => {
    const id = await walkMember(walk);
    const sent = await walk.send('DELETE', `/members/${id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'member.removed',
          resource_type: 'member',
          resource_id: id,
          project_id: null,
          changed: { role: ['viewer', null] },
        },
      ],
    };
  },
  'POST /api/v1/api-keys': async ({ send }) => {
    const sent = await send('POST', '/api-keys', { name: 'walk', read_only: true });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'api_key.created',
          resource_type: 'api_key',
          resource_id: id,
          project_id: null,
          changed: {
            name: [null, 'walk'],
            read_only: [null, true],
            key: [null, '[redacted]'],
            prefix: 'any',
          },
        },
      ],
    };
  },
  'DELETE /api/v1/api-keys/{id}': async ({ send }) => {
    const id = expectSuccess((await send('POST', '/api-keys', { name: 'to revoke' })).res, 201).id;
    const sent = await send('DELETE', `/api-keys/${id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'api_key.revoked',
          resource_type: 'api_key',
          resource_id: id,
          project_id: null,
          changed: { revoked_at: 'any' },
        },
      ],
    };
  },
  'POST /api/v1/api-keys/{id}/roll': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const id = expectSuccess(
      (await send('POST', '/api-keys', { name: 'to roll', project_id: project.id })).res,
      201,
    ).id;
    const sent = await send('POST', `/api-keys/${id}/roll`, { grace_seconds: 60 });
    const replacement = expectSuccess(sent.res, 201).id;
    const rows: Row[] = [
      {
        action: 'api_key.created',
        resource_type: 'api_key',
        resource_id: replacement,
        project_id: project.id,
        changed: { name: [null, 'to roll'], key: [null, '[redacted]'] },
      },
      {
        action: 'api_key.rolled',
        resource_type: 'api_key',
        resource_id: id,
        project_id: project.id,
        changed: { expires_at: 'any', rolled_at: 'any' },
      },
    ];
    return { ...sent, rows };
  },
  'POST /api/v1/project': async ({ send }) => {
    const sent = await send('POST', '/project', {
      name: 'Walk',
      webhook_secret: 'whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3QtbGVhaw==',
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'project.created',
          resource_type: 'project',
          resource_id: id,
          project_id: id,
          changed: { name: [null, 'Walk'], webhook_secret: [null, '[redacted]'] },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}': async ({ t, key, send }) => {
    const project = await makeProject(t, key, { description: 'before' });
    const sent = await send('PATCH', `/project/${project.id}`, {
      description: 'after',
      webhook_events: ['license.created'],
    });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'project.updated',
          resource_type: 'project',
          resource_id: project.id,
          project_id: project.id,
          changed: { description: ['before', 'after'], webhook_events: [['*'], ['license.created']] },
        },
      ],
    };
  },
  'PUT /api/v1/project/{project}': async ({ t, key, send }) => {
    const project = await makeProject(t, key, { has_paid: true, webhook_secret: 'old-secret-value' });
    const sent = await send('PUT', `/project/${project.id}`, { name: project.name });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'project.updated',
          resource_type: 'project',
          resource_id: project.id,
          project_id: project.id,
          changed: { has_paid: [true, false], webhook_secret: ['[redacted]', null] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('DELETE', `/project/${project.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'project.deleted',
          resource_type: 'project',
          resource_id: project.id,
          project_id: project.id,
          changed: { name: [project.name, null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/lock': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/lock`, { reason: 'unpaid invoice' });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'project.locked',
          resource_type: 'project',
          resource_id: project.id,
          project_id: project.id,
          changed: { locked_at: 'any', reason: [null, 'unpaid invoice'] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/unlock': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    expectSuccess(await t.http().post(`/api/v1/project/${project.id}/lock`).set('X-API-KEY', key));
    const sent = await send('POST', `/project/${project.id}/unlock`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'project.unlocked',
          resource_type: 'project',
          resource_id: project.id,
          project_id: project.id,
          changed: { locked_at: 'any' },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/domains': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/domains`, {
      domain: 'Shop.Example.com',
      has_paid: true,
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'domain.created',
          resource_type: 'domain',
          resource_id: id,
          project_id: project.id,
          changed: { domain: [null, 'shop.example.com'], has_paid: [null, true] },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}/domains/{domain}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const domain = await makeDomain(t, key, project.id);
    const sent = await send('PATCH', `/project/${project.id}/domains/${domain.id}`, { has_paid: true });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'domain.updated',
          resource_type: 'domain',
          resource_id: domain.id,
          project_id: project.id,
          changed: { has_paid: [false, true] },
        },
      ],
    };
  },
  'PUT /api/v1/project/{project}/domains/{domain}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const domain = await makeDomain(t, key, project.id, { is_active: false });
    const sent = await send('PUT', `/project/${project.id}/domains/${domain.id}`, { domain: domain.domain });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'domain.updated',
          resource_type: 'domain',
          resource_id: domain.id,
          project_id: project.id,
          changed: { is_active: [false, true] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/plans': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/plans`, {
      code: 'pro',
      name: 'Pro',
      entitlements: { seats: 5 },
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'plan.created',
          resource_type: 'plan',
          resource_id: id,
          project_id: project.id,
          changed: { code: [null, 'pro'], entitlements: [null, { seats: 5 }] },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}/plans/{plan}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const plan = await makePlan(t, key, project.id, { code: 'pro', name: 'Pro' });
    const sent = await send('PATCH', `/project/${project.id}/plans/${plan.id}`, { name: 'Pro+' });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'plan.updated',
          resource_type: 'plan',
          resource_id: plan.id,
          project_id: project.id,
          changed: { name: ['Pro', 'Pro+'] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/plans/{plan}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const plan = await makePlan(t, key, project.id, { code: 'pro', name: 'Pro' });
    const sent = await send('DELETE', `/project/${project.id}/plans/${plan.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'plan.deleted',
          resource_type: 'plan',
          resource_id: plan.id,
          project_id: project.id,
          changed: { code: ['pro', null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/payment-connectors': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/payment-connectors`, {
      provider: 'paddle',
      signing_secret: 'pdl_ntfset_walk_secret',
      grace_days: 5,
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'payment_connector.created',
          resource_type: 'payment_connector',
          resource_id: id,
          project_id: project.id,
          changed: {
            provider: [null, 'paddle'],
            grace_days: [null, 5],
            signing_secret: [null, '[redacted]'],
          },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}/payment-connectors/{connector}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe', {
      signing_secret: 'whsec_walk_of_enough_length',
    });
    const sent = await send('PATCH', `/project/${project.id}/payment-connectors/${connector.id}`, {
      grace_days: 0,
      signing_secret: 'whsec_walk_2_of_enough_length',
    });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'payment_connector.updated',
          resource_type: 'payment_connector',
          resource_id: connector.id,
          project_id: project.id,
          changed: { grace_days: [3, 0], signing_secret: ['[redacted]', '[redacted]'] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/payment-connectors/{connector}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'polar', {
      signing_secret: 'polar_whs_walk_of_enough_length',
    });
    const sent = await send('DELETE', `/project/${project.id}/payment-connectors/${connector.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'payment_connector.deleted',
          resource_type: 'payment_connector',
          resource_id: connector.id,
          project_id: project.id,
          changed: { provider: ['polar', null], signing_secret: ['[redacted]', null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/customers': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/customers`, { email: 'Walk@Example.com' });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'customer.created',
          resource_type: 'customer',
          resource_id: id,
          project_id: project.id,
          changed: { email: [null, 'walk@example.com'] },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}/customers/{customer}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const customer = await makeCustomer(t, key, project.id, { email: 'walk@example.com' });
    const sent = await send('PATCH', `/project/${project.id}/customers/${customer.id}`, { name: 'Walker' });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'customer.updated',
          resource_type: 'customer',
          resource_id: customer.id,
          project_id: project.id,
          changed: { name: [null, 'Walker'] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/customers/{customer}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const customer = await makeCustomer(t, key, project.id, { email: 'walk@example.com' });
    const sent = await send('DELETE', `/project/${project.id}/customers/${customer.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'customer.deleted',
          resource_type: 'customer',
          resource_id: customer.id,
          project_id: project.id,
          changed: { email: ['walk@example.com', null] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/domains/{domain}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const domain = await makeDomain(t, key, project.id);
    const sent = await send('DELETE', `/project/${project.id}/domains/${domain.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'domain.deleted',
          resource_type: 'domain',
          resource_id: domain.id,
          project_id: project.id,
          changed: { domain: [domain.domain, null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/licenses': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/licenses`, {
      title: 'Walk license',
      max_domains: 3,
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'license.created',
          resource_type: 'license',
          resource_id: id,
          project_id: project.id,
          changed: { title: [null, 'Walk license'], max_domains: [null, 3], uuid: [null, '[redacted]'] },
        },
      ],
    };
  },
  'PATCH /api/v1/project/{project}/licenses/{license}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id, { max_domains: 1 });
    const sent = await send('PATCH', `/project/${project.id}/licenses/${license.id}`, { max_domains: 5 });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.updated',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { max_domains: [1, 5] },
        },
      ],
    };
  },
  'PUT /api/v1/project/{project}/licenses/{license}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    const sent = await send('PUT', `/project/${project.id}/licenses/${license.id}`, { title: license.title });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.updated',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { allow_configs: [true, false] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/licenses/{license}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id);
    const sent = await send('DELETE', `/project/${project.id}/licenses/${license.id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.deleted',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { title: [license.title, null], uuid: ['[redacted]', null] },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/licenses/{license}/activations/{activation}': async ({
    t,
    key,
    send,
  }) => {
    const project = await makeProject(t, key);
    const domain = await makeDomain(t, key, project.id);
    const license = await makeLicense(t, key, project.id);
    expectSuccess(
      await t
        .http()
        .post('/api/v1/project/has-paid')
        .set('X-LICENSE-KEY', license.uuid)
        .set('X-Service-Domain', domain.domain),
    );
    const [activation] = expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${project.id}/licenses/${license.id}/activations`)
        .set('X-API-KEY', key),
    ).data;
    const sent = await send(
      'DELETE',
      `/project/${project.id}/licenses/${license.id}/activations/${activation.id}`,
    );
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.deactivated',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { activation: [{ id: activation.id, domain: domain.domain, host: '' }, null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/portal-sessions': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const customer = await t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: project.id, email: 'walk@example.test', name: null });
    const sent = await send('POST', `/project/${project.id}/portal-sessions`, {
      customer_id: customer.id,
      return_url: 'https://app.example.com/',
    });
    expectSuccess(sent.res, 201);
    const link = await t.dataSource
      .getRepository(PortalLinkEntity)
      .findOneByOrFail({ project_id: project.id });
    return {
      ...sent,
      rows: [
        {
          action: 'portal_session.created',
          resource_type: 'portal_session',
          resource_id: link.id,
          project_id: project.id,
          changed: { customer_id: [null, customer.id], return_url: [null, 'https://app.example.com/'] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/licenses/{license}/revoke': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id);
    const sent = await send('POST', `/project/${project.id}/licenses/${license.id}/revoke`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.revoked',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { revoked_at: 'any' },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/licenses/{license}/reactivate': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id);
    expectSuccess(
      await t
        .http()
        .post(`/api/v1/project/${project.id}/licenses/${license.id}/revoke`)
        .set('X-API-KEY', key),
    );
    const sent = await send('POST', `/project/${project.id}/licenses/${license.id}/reactivate`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'license.reactivated',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          changed: { revoked_at: 'any' },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/injectables': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const sent = await send('POST', `/project/${project.id}/injectables`, {
      slug: 'walk',
      content: 'PAYLOAD-MUST-NOT-LEAK',
      secret: 'injectable-secret-must-not-leak',
    });
    const id = expectSuccess(sent.res, 201).id;
    return {
      ...sent,
      rows: [
        {
          action: 'injectable.created',
          resource_type: 'injectable',
          resource_id: id,
          project_id: project.id,
          changed: { slug: [null, 'walk'], secret: [null, '[redacted]'], content_hash: 'any' },
        },
      ],
    };
  },
  'PUT /api/v1/project/{project}/injectables/{injectable}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const created = await t
      .http()
      .post(`/api/v1/project/${project.id}/injectables`)
      .set('X-API-KEY', key)
      .send({ slug: 'walk', content: 'one', secret: 'first-secret' });
    const id = expectSuccess(created, 201).id;
    const sent = await send('PUT', `/project/${project.id}/injectables/${id}`, {
      title: 'Walk',
      content: 'PAYLOAD-MUST-NOT-LEAK',
      secret: 'injectable-secret-must-not-leak',
    });
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'injectable.updated',
          resource_type: 'injectable',
          resource_id: id,
          project_id: project.id,
          changed: {
            title: [null, 'Walk'],
            secret: ['[redacted]', '[redacted]'],
            content_hash: 'any',
            signature: 'any',
          },
        },
      ],
    };
  },
  'DELETE /api/v1/project/{project}/injectables/{injectable}': async ({ t, key, send }) => {
    const project = await makeProject(t, key);
    const created = await t
      .http()
      .post(`/api/v1/project/${project.id}/injectables`)
      .set('X-API-KEY', key)
      .send({ slug: 'gone', content: 'x', secret: 's3cret-s3cret' });
    const id = expectSuccess(created, 201).id;
    const sent = await send('DELETE', `/project/${project.id}/injectables/${id}`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'injectable.deleted',
          resource_type: 'injectable',
          resource_id: id,
          project_id: project.id,
          changed: { slug: ['gone', null] },
        },
      ],
    };
  },
  'POST /api/v1/project/{project}/webhook-deliveries/{delivery}/retry': async ({ t, key, send }) => {
    // The dispatcher is off: project.created waits in the outbox, as if its retries had run out.
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const delivery = expectSuccess(
      await t.http().get(`/api/v1/project/${project.id}/webhook-deliveries`).set('X-API-KEY', key),
    ).data[0];
    await t.dataSource.query("UPDATE webhook_deliveries SET status = 'failed' WHERE id = ?", [delivery.id]);
    const sent = await send('POST', `/project/${project.id}/webhook-deliveries/${delivery.id}/retry`);
    expectSuccess(sent.res);
    return {
      ...sent,
      rows: [
        {
          action: 'webhook_delivery.retried',
          resource_type: 'webhook_delivery',
          resource_id: delivery.id,
          project_id: project.id,
          changed: { status: ['failed', 'pending'] },
        },
      ],
    };
  },
};

/** Secrets and payloads the walk sends; none may appear in the log. */
const NEVER_LOGGED = [
  'whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3QtbGVhaw==',
  'old-secret-value',
  'PAYLOAD-MUST-NOT-LEAK',
  'injectable-secret-must-not-leak',
  'first-secret',
  'pdl_ntfset_walk_secret',
  'whsec_walk_2_of_enough_length',
  'polar_whs_walk_of_enough_length',
];

async function auditCount(t: TestApp): Promise<number> {
  const [row] = await t.dataSource.query('SELECT COUNT(*) AS n FROM audit_events');
  return Number(row.n);
}

describe('audit log', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
  });
  afterAll(async () => t.close());

  describe('every write operation of openapi.json', () => {
    let walk: Walk;
    let keyRow: { id: number; prefix: string; user_id: number };
    const secrets: string[] = [...NEVER_LOGGED];

    beforeAll(async () => {
      const { user, key } = await makeAccount(t.app);
      const listed = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key));
      keyRow = { id: listed[0].id, prefix: listed[0].prefix, user_id: user.id };
      secrets.push(key);
      const bump = jest.spyOn(t.app.get(ProjectGenerations), 'bump');
      walk = {
        t,
        key,
        bumps: new Map(),
        send: async (method, path, body) => {
          const requestId = `walk-${randomBytes(6).toString('hex')}`;
          const req = t
            .http()
            [method.toLowerCase() as 'post'](`/api/v1${path}`)
            .set('X-API-KEY', key)
            .set('X-Request-Id', requestId)
            .set('User-Agent', USER_AGENT);
          const before = bump.mock.calls.length;
          const res = body === undefined ? await req : await req.send(body);
          walk.bumps.set(
            requestId,
            bump.mock.calls.slice(before).map(([project]) => project),
          );
          if (typeof res.body?.data?.key === 'string') secrets.push(res.body.data.key);
          if (typeof res.body?.data?.uuid === 'string') secrets.push(res.body.data.uuid);
          return { res, requestId };
        },
      };
    });

    it('has a step for every write, or says why it is not audited', () => {
      expect(
        [
          ...Object.keys(STEPS),
          ...Object.keys(NOT_AUDITED),
          ...Object.keys(BY_LICENSE_HOLDER),
          ...Object.keys(BY_PAYMENT_PROVIDER),
          ...Object.keys(BY_INVITED_PERSON),
        ].sort(),
      ).toEqual(WRITES);
    });

    it.each(Object.keys(STEPS))(
      '%s leaves its audit rows, with the actor, the request and what changed',
      async (operation) => {
        const { res, requestId, rows } = await STEPS[operation](walk);
        expect(res.headers['x-request-id']).toBe(requestId);
        // A write in a project makes its cached reads stale with one bump (one Redis publish), after its commit.
        const inProject = /^\/api\/v1\/project\/(\d+)/.exec(
          (res as unknown as { req: { path: string } }).req.path,
        )?.[1];
        expect({ operation, bumps: walk.bumps.get(requestId) }).toEqual({
          operation,
          bumps: inProject ? [Number(inProject)] : [],
        });
        const log = expectSuccess(
          await t.http().get('/api/v1/audit-log?per_page=50').set('X-API-KEY', walk.key),
        ).data as Json[];
        const mine = log.filter((row) => row.request_id === requestId).reverse();
        expect(
          mine.map((row) => ({
            action: row.action,
            resource_type: row.resource_type,
            resource_id: row.resource_id,
            project_id: row.project_id,
          })),
        ).toEqual(rows.map(({ changed: _changed, ...row }) => row));
        mine.forEach((row, i) => {
          expect(Object.keys(row).sort()).toEqual([
            'action',
            'actor',
            'changes',
            'created_at',
            'id',
            'ip',
            'project_id',
            'request_id',
            'resource_id',
            'resource_type',
            'user_agent',
          ]);
          expect(row.actor).toEqual({
            type: 'api_key',
            api_key_id: keyRow.id,
            api_key_prefix: keyRow.prefix,
            user_id: keyRow.user_id,
          });
          expect({ ip: row.ip, user_agent: row.user_agent }).toEqual({
            ip: '127.0.0.1',
            user_agent: USER_AGENT,
          });
          expect(row.created_at).toMatch(TIMESTAMP);
          for (const [field, change] of Object.entries(rows[i].changed)) {
            expect({
              field,
              recorded: Array.isArray(row.changes[field]) && row.changes[field].length === 2,
            }).toEqual({ field, recorded: true });
            if (change !== 'any') expect({ field, change: row.changes[field] }).toEqual({ field, change });
          }
          for (const [field, [before, after]] of Object.entries(
            row.changes as Record<string, [unknown, unknown]>,
          )) {
            // (A secret replaced by another reads "[redacted]" on both sides.)
            if (before !== '[redacted]')
              expect({ field, same: JSON.stringify(before) === JSON.stringify(after) }).toEqual({
                field,
                same: false,
              });
          }
        });
      },
    );

    it('never records a secret, a key or a payload, and never the bookkeeping columns', async () => {
      const log = expectSuccess(
        await t.http().get('/api/v1/audit-log?per_page=50').set('X-API-KEY', walk.key),
      ).data as Json[];
      expect(log.length).toBeGreaterThan(20);
      const text = JSON.stringify(log);
      for (const secret of secrets)
        expect({ secret, logged: text.includes(secret) }).toEqual({ secret, logged: false });
      for (const row of log) {
        for (const field of [
          'content',
          'encrypted_content',
          'file_path',
          'key_hash',
          'uuid_hash',
          'signing_private_key',
          'user_id',
          'created_at',
          'updated_at',
          'id',
        ]) {
          expect({ action: row.action, field, recorded: field in row.changes }).toEqual({
            action: row.action,
            field,
            recorded: false,
          });
        }
      }
    });
  });

  describe('only what was written', () => {
    it('a refused write leaves no row: validation, a locked project, no such thing, another owner, a conflict, a rule checked inside the transaction', async () => {
      const { key } = await makeAccount(t.app);
      const stranger = (await makeAccount(t.app)).key;
      const project = await makeProject(t, key);
      const domain = await makeDomain(t, key, project.id);
      const license = await makeLicense(t, key, project.id, { domain_id: domain.id });
      const revokedKeyId = expectSuccess(
        await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'r' }),
        201,
      ).id;
      expectSuccess(await t.http().delete(`/api/v1/api-keys/${revokedKeyId}`).set('X-API-KEY', key));
      const locked = await makeProject(t, key);
      expectSuccess(await t.http().post(`/api/v1/project/${locked.id}/lock`).set('X-API-KEY', key));
      const before = await auditCount(t);

      expectError(
        await t.http().post('/api/v1/project').set('X-API-KEY', key).send({ name: 'x', slug: 'not a slug' }),
        422,
      );
      expectError(
        await t
          .http()
          .patch(`/api/v1/project/${project.id}`)
          .set('X-API-KEY', key)
          .send({ webhook_events: ['license.created', 'nope'] }),
        422,
      );
      expectError(
        await t
          .http()
          .post(`/api/v1/project/${locked.id}/domains`)
          .set('X-API-KEY', key)
          .send({ domain: 'locked.example.com' }),
        403,
      );
      expectError(
        await t.http().delete(`/api/v1/project/${project.id}/licenses/999999`).set('X-API-KEY', key),
        404,
      );
      expectError(
        await t
          .http()
          .patch(`/api/v1/project/${project.id}`)
          .set('X-API-KEY', stranger)
          .send({ name: 'mine' }),
        403,
      );
      expectError(await t.http().post(`/api/v1/api-keys/${revokedKeyId}/roll`).set('X-API-KEY', key), 409);
      // Refused inside the unit of work, after it read the row: a license is pinned to the domain.
      expectError(
        await t.http().delete(`/api/v1/project/${project.id}/domains/${domain.id}`).set('X-API-KEY', key),
        422,
      );
      expect(await auditCount(t)).toBe(before);
      expectSuccess(
        await t.http().get(`/api/v1/project/${project.id}/licenses/${license.id}`).set('X-API-KEY', key),
      );
    });

    it('a write that rolls back after its audit row was written leaves neither the change nor the row', async () => {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      const license = await makeLicense(t, key, project.id, { max_domains: 1 });
      const outbox = t.app.get(WebhookOutbox);
      const record = outbox.record.bind(outbox);
      const before = await auditCount(t);
      // The outbox rows are written after the audit row, in the same transaction: fail there.
      outbox.record = async () => {
        throw new Error('the outbox insert failed');
      };
      try {
        const res = await t
          .http()
          .patch(`/api/v1/project/${project.id}/licenses/${license.id}`)
          .set('X-API-KEY', key)
          .send({ max_domains: 9 });
        expectError(res, 500);
      } finally {
        outbox.record = record;
      }
      expect(await auditCount(t)).toBe(before);
      const [row] = await t.dataSource.query('SELECT max_domains FROM licenses WHERE id = ?', [license.id]);
      expect(Number(row.max_domains)).toBe(1);
    });

    it('a write that changed nothing is still recorded, with no changes', async () => {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      const license = await makeLicense(t, key, project.id);
      expectSuccess(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/licenses/${license.id}/revoke`)
          .set('X-API-KEY', key),
      );
      expectSuccess(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/licenses/${license.id}/revoke`)
          .set('X-API-KEY', key)
          .set('X-Request-Id', 'revoke-again'),
      );
      const log = expectSuccess(
        await t
          .http()
          .get(`/api/v1/project/${project.id}/audit-log?action=license.revoked`)
          .set('X-API-KEY', key),
      ).data;
      expect(log.map((row: Json) => [row.request_id === 'revoke-again', Object.keys(row.changes)])).toEqual([
        [true, []],
        [false, ['revoked_at']],
      ]);
    });
  });

  describe('large values', () => {
    it('records a write of the largest project, before and after, within what a TEXT column holds (MySQL: 65535 bytes)', async () => {
      const { key } = await makeAccount(t.app);
      // Every text at its limit, in three-byte characters or six-byte JSON escapes: each side alone fits, both together do not.
      const euros = (n: number) => '€'.repeat(n);
      const largest = (c: string) => ({
        description: `${'\u0001'.repeat(999)}${c}`, // six bytes each as JSON
        default_redirect_url: `https://redirect.example/${c.repeat(2000)}`,
        logo_url: `https://logo.example/${c.repeat(2000)}`,
        webhook_url: `http://127.0.0.1:9/${c.repeat(2000)}`,
        meta: { a: `${euros(5458)}${c === '€' ? 'ab' : 'ba'}` }, // 16384 bytes of JSON
      });
      const project = await makeProject(t, key, largest('€'));
      const updated = expectSuccess(
        await t
          .http()
          .patch(`/api/v1/project/${project.id}`)
          .set('X-API-KEY', key)
          .send({ name: 'Renamed', ...largest('₤') }),
      );
      expect(updated.meta).toEqual(largest('₤').meta);
      const [row] = expectSuccess(
        await t
          .http()
          .get(`/api/v1/project/${project.id}/audit-log?action=project.updated`)
          .set('X-API-KEY', key),
      ).data;
      expect(row.changes.name).toEqual([project.name, 'Renamed']);
      // The largest value gives way first, then the next, until the row fits; the rest stays as it was.
      expect(row.changes.meta).toEqual([
        '[omitted: 16384 bytes, too large for the audit log]',
        '[omitted: 16384 bytes, too large for the audit log]',
      ]);
      expect(row.changes.description).toEqual([largest('€').description, largest('₤').description]);
      expect(row.changes.webhook_url).toEqual([largest('€').webhook_url, largest('₤').webhook_url]);
      const [stored] = await t.dataSource.query('SELECT changes FROM audit_events WHERE id = ?', [row.id]);
      expect(Buffer.byteLength(stored.changes)).toBeLessThanOrEqual(65_535);
    });
  });

  describe('who sees which rows', () => {
    let owner: { key: string; userId: number };
    let one: Record<string, any>;
    let two: Record<string, any>;
    let scopedOne: string;

    beforeAll(async () => {
      const account = await makeAccount(t.app);
      owner = { key: account.key, userId: account.user.id };
      one = await makeProject(t, owner.key);
      two = await makeProject(t, owner.key);
      await makeLicense(t, owner.key, one.id);
      await makeLicense(t, owner.key, two.id);
      scopedOne = await makeApiKey(t.app, account.user, { project_id: one.id });
    });

    const projects = (rows: Json[]) => [...new Set(rows.map((row) => row.project_id))].sort();

    it("a global key reads its owner's rows, across projects and of API keys", async () => {
      const rows = expectSuccess(
        await t.http().get('/api/v1/audit-log?per_page=50').set('X-API-KEY', owner.key),
      ).data;
      expect(projects(rows)).toEqual([one.id, two.id, null].sort());
      // The scoped key was made with the CLI.
      const made = rows.find((row: Json) => row.action === 'api_key.created' && row.project_id === one.id);
      expect(made.actor).toEqual({ type: 'cli', api_key_id: null, api_key_prefix: null, user_id: null });
      expect({ request_id: made.request_id, ip: made.ip, user_agent: made.user_agent }).toEqual({
        request_id: null,
        ip: null,
        user_agent: null,
      });
    });

    it("a scoped key reads its project's rows only, and is refused another project's log", async () => {
      const rows = expectSuccess(
        await t.http().get('/api/v1/audit-log?per_page=50').set('X-API-KEY', scopedOne),
      ).data;
      expect(projects(rows)).toEqual([one.id]);
      expect(rows.map((row: Json) => row.action).sort()).toEqual([
        'api_key.created',
        'license.created',
        'project.created',
      ]);
      expect(
        expectSuccess(await t.http().get(`/api/v1/project/${one.id}/audit-log`).set('X-API-KEY', scopedOne))
          .data,
      ).toEqual(rows);
      expect(
        expectError(
          await t.http().get(`/api/v1/project/${two.id}/audit-log`).set('X-API-KEY', scopedOne),
          403,
        ).message,
      ).toBe('This API key is scoped to another project.');
    });

    it("another owner's global key never sees them", async () => {
      const other = await makeAccount(t.app);
      const rows = expectSuccess(
        await t.http().get('/api/v1/audit-log?per_page=50').set('X-API-KEY', other.key),
      ).data;
      expect(rows.filter((row: Json) => [one.id, two.id].includes(row.project_id))).toEqual([]);
      expect(
        rows.every((row: Json) => row.actor.user_id === null || row.actor.user_id === other.user.id),
      ).toBe(true);
      expect(
        expectError(
          await t.http().get(`/api/v1/project/${one.id}/audit-log`).set('X-API-KEY', other.key),
          403,
        ).message,
      ).toBe('This API key does not belong to the owner of this project.');
    });

    it("keeps a deleted project's rows in the account's log, and answers 404 for its own log", async () => {
      const gone = await makeProject(t, owner.key);
      expectSuccess(await t.http().delete(`/api/v1/project/${gone.id}`).set('X-API-KEY', owner.key));
      const rows = expectSuccess(
        await t
          .http()
          .get(`/api/v1/audit-log?resource_type=project&resource_id=${gone.id}`)
          .set('X-API-KEY', owner.key),
      ).data;
      expect(rows.map((row: Json) => row.action)).toEqual(['project.deleted', 'project.created']);
      expectError(
        await t.http().get(`/api/v1/project/${gone.id}/audit-log`).set('X-API-KEY', owner.key),
        404,
      );
      expectError(await t.http().get('/api/v1/project/999999/audit-log').set('X-API-KEY', owner.key), 404);
    });
  });

  describe('filters and pages', () => {
    let key: string;
    let project: Record<string, any>;
    let licenses: number[];

    beforeAll(async () => {
      key = (await makeAccount(t.app)).key;
      project = await makeProject(t, key);
      licenses = [];
      for (let i = 0; i < 7; i++) licenses.push((await makeLicense(t, key, project.id)).id);
      expectSuccess(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/licenses/${licenses[2]}/revoke`)
          .set('X-API-KEY', key),
      );
    });

    const list = async (query: string) =>
      expectSuccess(
        await t.http().get(`/api/v1/project/${project.id}/audit-log${query}`).set('X-API-KEY', key),
      );

    it('latest first, 20 a page by default, a cursor to walk the rest without a duplicate or a gap', async () => {
      const all = await list('?per_page=50');
      expect(all.data.map((row: Json) => row.action)).toEqual([
        'license.revoked',
        ...Array(7).fill('license.created'),
        'project.created',
      ]);
      const ids = all.data.map((row: Json) => row.id);
      expect([...ids].sort((a: number, b: number) => b - a)).toEqual(ids);
      const walked: number[] = [];
      let page = await list('?per_page=4');
      walked.push(...page.data.map((row: Json) => row.id));
      while (page.next_cursor) {
        page = await list(`?per_page=4&cursor=${encodeURIComponent(page.next_cursor)}`);
        walked.push(...page.data.map((row: Json) => row.id));
      }
      expect(walked).toEqual(ids);
      expect((await list('')).next_cursor).toBeNull();
    });

    it('filters by action, resource_type, resource_id, since and until', async () => {
      expect((await list('?action=license.revoked')).data.map((row: Json) => row.resource_id)).toEqual([
        licenses[2],
      ]);
      expect((await list('?resource_type=license')).data).toHaveLength(8);
      expect(
        (await list(`?resource_type=license&resource_id=${licenses[2]}`)).data.map((row: Json) => row.action),
      ).toEqual(['license.revoked', 'license.created']);
      expect((await list('?since=2999-01-01')).data).toEqual([]);
      expect((await list('?until=2000-01-01T00:00:00Z')).data).toEqual([]);
      const newest = (await list('?per_page=1')).data[0];
      // Both bounds are inclusive, to the second.
      expect(
        (
          await list(`?since=${newest.created_at}&until=${newest.created_at}&action=license.revoked`)
        ).data.map((row: Json) => row.id),
      ).toEqual([newest.id]);
      expect(
        (
          await list(
            `?since=${encodeURIComponent(newest.created_at.replace('Z', '+00:00'))}&action=license.revoked`,
          )
        ).data,
      ).toHaveLength(1);
    });

    it('answers 422 naming the parameter for a bad filter, page size or cursor', async () => {
      const bad = async (query: string, field: string, message: string) => {
        const res = await t
          .http()
          .get(`/api/v1/project/${project.id}/audit-log${query}`)
          .set('X-API-KEY', key);
        expect({ query, errors: expectError(res, 422, [field]).errors }).toEqual({
          query,
          errors: { [field]: [message] },
        });
      };
      await bad('?since=yesterday', 'since', 'The since field must be an ISO-8601 date or date-time.');
      await bad('?until=2026-13-45', 'until', 'The until field must be an ISO-8601 date or date-time.');
      // Days a month does not have are not read as the next month's (2026-02-30 is not March 2).
      await bad('?since=2026-02-30', 'since', 'The since field must be an ISO-8601 date or date-time.');
      await bad(
        '?until=2026-04-31T10:00:00Z',
        'until',
        'The until field must be an ISO-8601 date or date-time.',
      );
      await bad('?since=2026-02-29', 'since', 'The since field must be an ISO-8601 date or date-time.');
      await bad(
        '?since=2026-01-01T24:30:00Z',
        'since',
        'The since field must be an ISO-8601 date or date-time.',
      );
      for (const query of [
        'since=2028-02-29&until=2028-02-29T23:59:59%2B01:00',
        'since=0001-01-01',
        'since=0050-12-31T23:59:59Z',
      ]) {
        expectSuccess(
          await t.http().get(`/api/v1/project/${project.id}/audit-log?${query}`).set('X-API-KEY', key),
        );
      }
      await bad(
        '?action=license.exploded',
        'action',
        'The selected action is invalid: use a webhook event name, api_key.created, api_key.revoked, api_key.rolled or webhook_delivery.retried.',
      );
      await bad(
        '?resource_type=user',
        'resource_type',
        'The selected resource type is invalid: use one of project, domain, license, injectable, api_key, webhook_delivery, payment_connector, customer, portal_session, plan.',
      );
      await bad('?resource_id=abc', 'resource_id', 'The resource id field must be an integer.');
      await bad('?per_page=51', 'per_page', 'The per page field must be between 1 and 50.');
      await bad('?cursor=tampered', 'cursor', 'The cursor is invalid.');
      // A cursor belongs to its filters.
      const page = await list('?per_page=2&resource_type=license');
      await bad(
        `?per_page=2&resource_type=project&cursor=${encodeURIComponent(page.next_cursor)}`,
        'cursor',
        'The cursor is invalid.',
      );
    });
  });

  describe('retention', () => {
    it('prunes rows older than AUDIT_RETENTION_DAYS (default 365) and keeps the rest', async () => {
      const { key, user } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      const day = 86_400_000;
      const at = (daysAgo: number) =>
        new Date(Date.now() - daysAgo * day).toISOString().slice(0, 19).replace('T', ' ');
      for (const [action, daysAgo] of [
        ['license.created', 400],
        ['license.updated', 366],
        ['license.deleted', 364],
      ] as const) {
        await t.dataSource.query(
          "INSERT INTO audit_events (owner_id, project_id, action, resource_type, resource_id, actor_type, changes, created_at) VALUES (?, ?, ?, 'license', 1, 'cli', '{}', ?)",
          [user.id, project.id, action, at(daysAgo)],
        );
      }
      expect(t.config.env.AUDIT_RETENTION_DAYS).toBe(365);
      expect(await t.app.get(AuditService).prune()).toBe(2);
      const rows = expectSuccess(
        await t.http().get(`/api/v1/project/${project.id}/audit-log`).set('X-API-KEY', key),
      ).data;
      expect(rows.map((row: Json) => row.action)).toEqual(['license.deleted', 'project.created']);
      expect(await t.app.get(AuditService).prune()).toBe(0);
    });
  });

  describe('webhook subscriptions', () => {
    const outbox = async (projectId: number) =>
      (
        await t.dataSource.query<Array<{ type: string }>>(
          'SELECT type FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
          [projectId],
        )
      ).map((row) => row.type);

    it('writes every event by default, only the subscribed ones with webhook_events, none with webhook_enabled false', async () => {
      const { key } = await makeAccount(t.app);
      const everything = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
      expect({ events: everything.webhook_events, enabled: everything.webhook_enabled }).toEqual({
        events: ['*'],
        enabled: true,
      });
      const picky = await makeProject(t, key, {
        webhook_url: 'http://127.0.0.1:9/hook',
        webhook_events: ['license.created', 'license.revoked', 'license.created'],
      });
      expect(picky.webhook_events).toEqual(['license.created', 'license.revoked']);
      const muted = await makeProject(t, key, {
        webhook_url: 'http://127.0.0.1:9/hook',
        webhook_enabled: false,
      });
      for (const project of [everything, picky, muted]) {
        await makeDomain(t, key, project.id);
        const license = await makeLicense(t, key, project.id);
        expectSuccess(
          await t
            .http()
            .post(`/api/v1/project/${project.id}/licenses/${license.id}/revoke`)
            .set('X-API-KEY', key),
        );
      }
      expect(await outbox(everything.id)).toEqual([
        'project.created',
        'domain.created',
        'license.created',
        'license.revoked',
      ]);
      expect(await outbox(picky.id)).toEqual(['license.created', 'license.revoked']);
      expect(await outbox(muted.id)).toEqual([]);

      // Subscribing again takes effect with the next write; null restores every event.
      const updated = expectSuccess(
        await t
          .http()
          .patch(`/api/v1/project/${muted.id}`)
          .set('X-API-KEY', key)
          .send({ webhook_enabled: true, webhook_events: ['domain.created'] }),
      );
      expect({ events: updated.webhook_events, enabled: updated.webhook_enabled }).toEqual({
        events: ['domain.created'],
        enabled: true,
      });
      await makeDomain(t, key, muted.id);
      await makeLicense(t, key, muted.id);
      expect(await outbox(muted.id)).toEqual(['domain.created']);
      expect(
        expectSuccess(
          await t
            .http()
            .patch(`/api/v1/project/${muted.id}`)
            .set('X-API-KEY', key)
            .send({ webhook_events: null }),
        ).webhook_events,
      ).toEqual(['*']);
      // PUT returns omitted fields to their defaults.
      expectSuccess(
        await t
          .http()
          .patch(`/api/v1/project/${picky.id}`)
          .set('X-API-KEY', key)
          .send({ webhook_enabled: false }),
      );
      const replaced = expectSuccess(
        await t
          .http()
          .put(`/api/v1/project/${picky.id}`)
          .set('X-API-KEY', key)
          .send({ name: picky.name, webhook_url: 'http://127.0.0.1:9/hook' }),
      );
      expect({ events: replaced.webhook_events, enabled: replaced.webhook_enabled }).toEqual({
        events: ['*'],
        enabled: true,
      });
    });

    it('answers 422 naming every unknown event type', async () => {
      const { key } = await makeAccount(t.app);
      const refuse = async (webhook_events: unknown, message: string) => {
        const res = await t
          .http()
          .post('/api/v1/project')
          .set('X-API-KEY', key)
          .send({ name: `p ${uniqueToken()}`, webhook_events });
        expect({ sent: webhook_events, errors: expectError(res, 422, ['webhook_events']).errors }).toEqual({
          sent: webhook_events,
          errors: { webhook_events: [message] },
        });
      };
      await refuse(
        ['license.created', 'license.exploded', 'project.renamed', 'license.exploded'],
        'The webhook events field contains unknown event types: license.exploded, project.renamed.',
      );
      await refuse(
        ['*', 'license.created'],
        'The webhook events field must be ["*"] alone, or a list of event types without "*".',
      );
      await refuse('license.created', 'The webhook events field must be an array of event types, or ["*"].');
      await refuse([42], 'The webhook events field contains unknown event types: 42.');
      const enabled = await t
        .http()
        .post('/api/v1/project')
        .set('X-API-KEY', key)
        .send({ name: `p ${uniqueToken()}`, webhook_enabled: 'yes' });
      expect(expectError(enabled, 422, ['webhook_enabled']).errors).toEqual({
        webhook_enabled: ['The webhook enabled field must be true or false.'],
      });
    });
  });
});
