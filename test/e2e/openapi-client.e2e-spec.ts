import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SubscriptionEntity } from '../../src/payments/subscription.entity.js';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnalyticsCounts } from '../../src/analytics/analytics-counts.service.js';
import type { components } from '../../generated/openapi.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
  uniqueToken,
} from '../factories/index.js';
import { createApiClient, schemaProblems } from '../utils/openapi-client.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * The generated client types (generated/openapi.d.ts, from openapi.json) against the running
 * app: tsc checks the calls and the fields read below, and every answer is checked against the schema
 * openapi.json gives for its operation and status.
 */

type Json = Record<string, any>;
const DOC: Json = JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8'));

const exercised = new Set<string>();

/** The answer matches the documented response of `method path` for its status (which must be documented). */
function expectDocumented(method: string, path: string, res: { status: number; body: unknown }) {
  exercised.add(`${method.toUpperCase()} ${path}`);
  const response = DOC.paths[path]?.[method]?.responses?.[String(res.status)];
  expect({
    operation: `${method.toUpperCase()} ${path}`,
    status: res.status,
    documented: Boolean(response),
  }).toEqual({
    operation: `${method.toUpperCase()} ${path}`,
    status: res.status,
    documented: true,
  });
  const problems = schemaProblems(DOC, response.content['application/json'].schema, res.body);
  expect({ operation: `${method.toUpperCase()} ${path} ${res.status}`, problems }).toEqual({
    operation: `${method.toUpperCase()} ${path} ${res.status}`,
    problems: [],
  });
}

describe('typed client generated from openapi.json', () => {
  let t: TestApp;
  let key: string;
  let api: ReturnType<typeof createApiClient>;

  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    ({ key } = await makeAccount(t.app));
    api = createApiClient(t.url, { apiKey: key });
  });
  afterAll(async () => t.close());

  it('GET /api/v1/project/{project} answers the typed Project', async () => {
    const project = await makeProject(t, key, { description: 'typed', meta: { plan: 'pro' } });
    const res = await api('get', '/api/v1/project/{project}', { params: { path: { project: project.id } } });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${res.body.message}`);

    const status: 'success' = res.body.status;
    const name: string = res.body.data.name;
    const description: string | null = res.body.data.description;
    const lockedAt: string | null = res.body.data.locked_at;
    const hasPaid: boolean = res.body.data.has_paid;
    const meta: Record<string, unknown> = res.body.data.meta;
    // @ts-expect-error user_id is hidden: not part of the documented Project
    void res.body.data.user_id;

    expect({ status, name, description, lockedAt, hasPaid, meta }).toEqual({
      status: 'success',
      name: project.name,
      description: 'typed',
      lockedAt: null,
      hasPaid: false,
      meta: { plan: 'pro' },
    });
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expectDocumented('get', '/api/v1/project/{project}', res);
  });

  it('types errors, cursor pages and request bodies', async () => {
    const missing = await api('get', '/api/v1/project/{project}', { params: { path: { project: 999_999 } } });
    if (missing.ok) throw new Error('expected a 404');
    const message: string = missing.body.message;
    expect({ status: missing.status, message }).toEqual({ status: 404, message: 'Project not found.' });
    expectDocumented('get', '/api/v1/project/{project}', missing);

    await makeProject(t, key);
    const page = await api('get', '/api/v1/project', { params: { query: { per_page: 1 } } });
    if (!page.ok) throw new Error(`HTTP ${page.status}`);
    const items: Array<components['schemas']['Project']> = page.body.data.data;
    const next: string | null = page.body.data.next_cursor;
    expect(items).toHaveLength(1);
    expect(typeof next).toBe('string');
    expectDocumented('get', '/api/v1/project', page);

    const invalid = await api('post', '/api/v1/project', { params: {}, body: { name: '' } });
    if (invalid.ok) throw new Error('expected a 422');
    expect(invalid.status).toBe(422);
    expectDocumented('post', '/api/v1/project', invalid);

    // Compile-time only: a body field of the wrong type does not type-check.
    const typeOnly = () =>
      api('post', '/api/v1/project', {
        params: {},
        body: {
          // @ts-expect-error name is a string
          name: 42,
        },
      });
    expect(typeof typeOnly).toBe('function');
  });

  it('signs in, reads itself, changes its password and signs out with the typed client', async () => {
    const email = `typed-${uniqueToken()}@example.test`;
    await makeUser(t.app, { email, password: 'correct horse battery' });
    const anonymous = createApiClient(t.url);
    const wrong = await anonymous('post', '/api/v1/auth/login', {
      params: {},
      body: { email, password: 'not the password' },
    });
    expectDocumented('post', '/api/v1/auth/login', wrong);
    const login = await anonymous('post', '/api/v1/auth/login', {
      params: {},
      body: { email, password: 'correct horse battery' },
    });
    expectDocumented('post', '/api/v1/auth/login', login);
    if (!login.ok) throw new Error(`HTTP ${login.status}`);
    const csrf: string = login.body.data.csrf_token;
    const cookie = String(login.headers.get('set-cookie')).split(';')[0];
    const session = createApiClient(t.url, { session: { cookie, csrf } });
    const me = await session('get', '/api/v1/auth/me', { params: {} });
    expectDocumented('get', '/api/v1/auth/me', me);
    if (!me.ok) throw new Error(`HTTP ${me.status}`);
    const role: 'owner' | 'admin' | 'developer' | 'support' | 'viewer' = me.body.data.memberships[0].role;
    expect(role).toBe('owner');
    expectDocumented(
      'post',
      '/api/v1/auth/password',
      await session('post', '/api/v1/auth/password', {
        params: {},
        body: { current_password: 'correct horse battery', new_password: 'a new and longer passphrase' },
      }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/logout',
      await session('post', '/api/v1/auth/logout', { params: {} }),
    );
    expectDocumented('get', '/api/v1/auth/me', await session('get', '/api/v1/auth/me', { params: {} }));
  });

  it('opens the customer portal and walks it with the typed client', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const domain = await makeDomain(t, key, project.id);
    const license = await makeLicense(t, key, project.id);
    const customer = await t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: project.id, email: 'typed@example.test', name: 'Typed' });
    await t.dataSource.getRepository(LicenseEntity).update({ id: license.id }, { customer_id: customer.id });
    const used = await t
      .http()
      .post('/api/v1/project/has-paid')
      .set('X-LICENSE-KEY', license.uuid)
      .set('X-Service-Domain', domain.domain);
    expect(used.status).toBe(200);
    const link = await api('post', '/api/v1/project/{project}/portal-sessions', {
      params: { path: { project: project.id } },
      body: { customer_id: customer.id, return_url: 'https://app.example.com/' },
    });
    expectDocumented('post', '/api/v1/project/{project}/portal-sessions', link);
    if (!link.ok) throw new Error(`HTTP ${link.status}`);
    const url: string = link.body.data.url;
    const opened = await t.http().post(new URL(url).pathname);
    expect(opened.status).toBe(303);
    const cookie = (opened.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    const reader = createApiClient(t.url, { session: { cookie, csrf: '' } });
    const session = await reader('get', '/api/v1/portal/session', { params: {} });
    expectDocumented('get', '/api/v1/portal/session', session);
    if (!session.ok) throw new Error(`HTTP ${session.status}`);
    const state: 'paid' | 'grace' | 'unpaid' = session.body.data.licenses[0].payment.state;
    expect(state).toBe('paid');
    const portal = createApiClient(t.url, { session: { cookie, csrf: session.body.data.csrf_token } });
    const licensePath = { path: { license: license.id } };
    expectDocumented(
      'get',
      '/api/v1/portal/licenses',
      await portal('get', '/api/v1/portal/licenses', { params: {} }),
    );
    const one = await portal('get', '/api/v1/portal/licenses/{license}', { params: licensePath });
    expectDocumented('get', '/api/v1/portal/licenses/{license}', one);
    if (!one.ok) throw new Error(`HTTP ${one.status}`);
    expectDocumented(
      'get',
      '/api/v1/portal/licenses/{license}/token',
      await portal('get', '/api/v1/portal/licenses/{license}/token', { params: licensePath }),
    );
    const freed = await portal('delete', '/api/v1/portal/licenses/{license}/activations/{activation}', {
      params: { path: { license: license.id, activation: one.body.data.activations[0].id } },
    });
    expectDocumented('delete', '/api/v1/portal/licenses/{license}/activations/{activation}', freed);
    if (!freed.ok) throw new Error(`HTTP ${freed.status}`);
    const left: number = freed.body.data.left_today;
    expect(left).toBe(2);
    expectDocumented(
      'get',
      '/api/v1/portal/licenses/{license}',
      await portal('get', '/api/v1/portal/licenses/{license}', {
        params: { path: { license: 2_147_000_000 } },
      }),
    );
  });

  it('plans, licenses on them and metered usage answer their documented schemas', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const path = { path: { project: project.id as number } };
    const created = await api('post', '/api/v1/project/{project}/plans', {
      params: path,
      body: { code: 'pro', name: 'Pro', entitlements: { sso: true, seats: 5, 'meter.ai_credits': 2 } },
    });
    expectDocumented('post', '/api/v1/project/{project}/plans', created);
    if (!created.ok) throw new Error(`HTTP ${created.status}`);
    expectDocumented(
      'post',
      '/api/v1/project/{project}/plans',
      await api('post', '/api/v1/project/{project}/plans', {
        params: path,
        body: { code: 'pro', name: 'Again' },
      }),
    );
    const planPath = { path: { ...path.path, plan: created.body.data.id } };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/plans',
      await api('get', '/api/v1/project/{project}/plans', { params: path }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/plans/{plan}',
      await api('get', '/api/v1/project/{project}/plans/{plan}', { params: planPath }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}/plans/{plan}',
      await api('patch', '/api/v1/project/{project}/plans/{plan}', {
        params: planPath,
        body: { name: 'Pro+' },
      }),
    );
    const license = await api('post', '/api/v1/project/{project}/licenses', {
      params: path,
      body: { title: 'On a plan', plan_id: created.body.data.id, entitlements: { seats: 9 } },
    });
    expectDocumented('post', '/api/v1/project/{project}/licenses', license);
    if (!license.ok) throw new Error(`HTTP ${license.status}`);
    const runtime = createApiClient(t.url, { licenseKey: license.body.data.uuid });
    const answer = await runtime('post', '/api/v1/project/has-paid', {
      params: { query: { action: 'check_project' } },
    });
    expectDocumented('post', '/api/v1/project/has-paid', answer);
    for (const amount of [2, 1])
      expectDocumented(
        'post',
        '/api/v1/license/usage',
        await runtime('post', '/api/v1/license/usage', {
          params: {},
          body: { meter: 'meter.ai_credits', amount, idempotency_key: `walk-${amount}` },
        }),
      );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/licenses/{license}/usage',
      await api('get', '/api/v1/project/{project}/licenses/{license}/usage', {
        params: { path: { ...path.path, license: license.body.data.id } },
      }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/plans/{plan}',
      await api('delete', '/api/v1/project/{project}/plans/{plan}', { params: planPath }),
    );
  });

  it('invites, joins, changes and removes a member, and resets a password, with the typed client', async () => {
    const anonymous = createApiClient(t.url);
    expectDocumented(
      'get',
      '/api/v1/auth/config',
      await anonymous('get', '/api/v1/auth/config', { params: {} }),
    );
    // This service has users: no first account to make, and a setup is refused.
    expectDocumented(
      'get',
      '/api/v1/auth/setup',
      await anonymous('get', '/api/v1/auth/setup', { params: {} }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/setup',
      await anonymous('post', '/api/v1/auth/setup', {
        params: {},
        body: {
          code: 'A'.repeat(43),
          email: `setup-${uniqueToken()}@example.test`,
          password: 'correct horse battery',
        },
      }),
    );
    const email = `joiner-${uniqueToken()}@example.test`;
    const invited = await api('post', '/api/v1/members/invitations', {
      params: {},
      body: { email, role: 'developer' },
    });
    expectDocumented('post', '/api/v1/members/invitations', invited);
    if (!invited.ok) throw new Error(`HTTP ${invited.status}`);
    const url: string = invited.body.data.invitation_url;
    expectDocumented(
      'get',
      '/api/v1/members/invitations',
      await api('get', '/api/v1/members/invitations', { params: {} }),
    );
    const accepted = await anonymous('post', '/api/v1/auth/invitations/{token}/accept', {
      params: { path: { token: url.split('/').pop()! } },
      body: { password: 'correct horse battery' },
    });
    expectDocumented('post', '/api/v1/auth/invitations/{token}/accept', accepted);
    const listed = await api('get', '/api/v1/members', { params: {} });
    expectDocumented('get', '/api/v1/members', listed);
    if (!listed.ok) throw new Error(`HTTP ${listed.status}`);
    const joined = listed.body.data.find((m) => m.email === email)!;
    expectDocumented(
      'patch',
      '/api/v1/members/{id}',
      await api('patch', '/api/v1/members/{id}', {
        params: { path: { id: joined.id } },
        body: { role: 'viewer' },
      }),
    );
    expectDocumented(
      'delete',
      '/api/v1/members/{id}',
      await api('delete', '/api/v1/members/{id}', { params: { path: { id: joined.id } } }),
    );
    const other = await api('post', '/api/v1/members/invitations', {
      params: {},
      body: { email: `other-${uniqueToken()}@example.test`, role: 'viewer' },
    });
    if (!other.ok) throw new Error(`HTTP ${other.status}`);
    expectDocumented(
      'delete',
      '/api/v1/members/invitations/{id}',
      await api('delete', '/api/v1/members/invitations/{id}', {
        params: { path: { id: other.body.data.id } },
      }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/password-reset',
      await anonymous('post', '/api/v1/auth/password-reset', { params: {}, body: { email } }),
    );
    // This app has no OIDC_ISSUER: single sign-on says so; a link without an SSO sign-in is refused.
    expectDocumented(
      'post',
      '/api/v1/auth/sso/start',
      await anonymous('post', '/api/v1/auth/sso/start', { params: {} }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/sso/callback',
      await anonymous('post', '/api/v1/auth/sso/callback', {
        params: {},
        body: { query: '?code=x&state=y' },
      }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/sso/link',
      await anonymous('post', '/api/v1/auth/sso/link', {
        params: {},
        body: { password: 'correct horse battery' },
      }),
    );
    expectDocumented(
      'post',
      '/api/v1/auth/password-reset/{token}',
      await anonymous('post', '/api/v1/auth/password-reset/{token}', {
        params: { path: { token: 'A'.repeat(43) } },
        body: { password: 'a new and longer passphrase' },
      }),
    );
  });

  it('every answer of a full walk through the API matches its documented schema', async () => {
    const anonymous = createApiClient(t.url);
    const created = await api('post', '/api/v1/project', {
      params: {},
      body: {
        name: `Walk ${uniqueToken()}`,
        webhook_url: 'http://127.0.0.1:9/hook',
        default_redirect_url: 'https://example.com/pay',
      },
    });
    expectDocumented('post', '/api/v1/project', created);
    if (!created.ok) throw new Error(`HTTP ${created.status}`);
    // The create answer has no locked_at.
    expect('locked_at' in created.body.data).toBe(false);
    const project = { path: { project: created.body.data.id } };

    expectDocumented('get', '/api/v1/project', await api('get', '/api/v1/project', { params: {} }));
    expectDocumented(
      'patch',
      '/api/v1/project/{project}',
      await api('patch', '/api/v1/project/{project}', { params: project, body: { description: 'd' } }),
    );
    expectDocumented(
      'put',
      '/api/v1/project/{project}',
      await api('put', '/api/v1/project/{project}', {
        params: project,
        body: {
          name: created.body.data.name,
          webhook_url: 'http://127.0.0.1:9/hook',
          default_redirect_url: 'https://example.com/pay',
        },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/signing-key',
      await api('get', '/api/v1/project/{project}/signing-key', { params: project }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}',
      await anonymous('get', '/api/v1/project/{project}', { params: project }),
    );

    // Domains
    const domain = await api('post', '/api/v1/project/{project}/domains', {
      params: project,
      body: { domain: 'shop.example.com', has_paid: true },
    });
    expectDocumented('post', '/api/v1/project/{project}/domains', domain);
    if (!domain.ok) throw new Error(`HTTP ${domain.status}`);
    const domainPath = { path: { ...project.path, domain: domain.body.data.id } };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/domains',
      await api('get', '/api/v1/project/{project}/domains', { params: project }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/domains/{domain}',
      await api('get', '/api/v1/project/{project}/domains/{domain}', { params: domainPath }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}/domains/{domain}',
      await api('patch', '/api/v1/project/{project}/domains/{domain}', {
        params: domainPath,
        body: { is_primary: true },
      }),
    );
    expectDocumented(
      'put',
      '/api/v1/project/{project}/domains/{domain}',
      await api('put', '/api/v1/project/{project}/domains/{domain}', {
        params: domainPath,
        body: { domain: 'shop.example.com', has_paid: true },
      }),
    );
    expectDocumented(
      'post',
      '/api/v1/project/{project}/domains',
      await api('post', '/api/v1/project/{project}/domains', {
        params: project,
        body: { domain: 'http://bad.example.com/x' },
      }),
    );

    // Licenses
    const license = await api('post', '/api/v1/project/{project}/licenses', {
      params: project,
      body: { title: 'Main', max_domains: 2, allowed_countries: 'DE, FR' },
    });
    expectDocumented('post', '/api/v1/project/{project}/licenses', license);
    if (!license.ok) throw new Error(`HTTP ${license.status}`);
    const uuid: string = license.body.data.uuid;
    const licensePath = { path: { ...project.path, license: license.body.data.id } };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/licenses',
      await api('get', '/api/v1/project/{project}/licenses', { params: project }),
    );
    const found = await api('get', '/api/v1/project/{project}/licenses', {
      params: { ...project, query: { q: uuid.slice(0, 8), status: 'active' } },
    });
    expectDocumented('get', '/api/v1/project/{project}/licenses', found);
    if (!found.ok) throw new Error(`HTTP ${found.status}`);
    expect(found.body.data.data.map((l: { uuid: string }) => l.uuid)).toEqual([uuid]);
    expectDocumented(
      'get',
      '/api/v1/project/{project}/licenses',
      await api('get', '/api/v1/project/{project}/licenses', {
        params: { ...project, query: { status: 'paid' as 'active' } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/licenses/{license}',
      await api('get', '/api/v1/project/{project}/licenses/{license}', { params: licensePath }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}/licenses/{license}',
      await api('patch', '/api/v1/project/{project}/licenses/{license}', {
        params: licensePath,
        body: { allowed_countries: null },
      }),
    );
    expectDocumented(
      'put',
      '/api/v1/project/{project}/licenses/{license}',
      await api('put', '/api/v1/project/{project}/licenses/{license}', {
        params: licensePath,
        body: { title: 'Main', max_domains: 2 },
      }),
    );

    // Payment connectors, and an event signed as Stripe signs it.
    const connector = await api('post', '/api/v1/project/{project}/payment-connectors', {
      params: project,
      body: {
        provider: 'stripe',
        signing_secret: 'whsec_walk_of_enough_length',
        license_template: { max_domains: 1 },
      },
    });
    expectDocumented('post', '/api/v1/project/{project}/payment-connectors', connector);
    if (!connector.ok) throw new Error(`HTTP ${connector.status}`);
    const connectorPath = { path: { ...project.path, connector: connector.body.data.id } };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/payment-connectors',
      await api('get', '/api/v1/project/{project}/payment-connectors', { params: project }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}/payment-connectors/{connector}',
      await api('patch', '/api/v1/project/{project}/payment-connectors/{connector}', {
        params: connectorPath,
        body: { grace_days: 0 },
      }),
    );
    const [, , , , provider, token] = new URL(connector.body.data.endpoint_url).pathname.split('/');
    // An event type that moves nothing, so the walk's runtime answers below stay as they are.
    const event = {
      id: 'evt_walk',
      type: 'customer.created',
      data: { object: { id: 'cus_walk', metadata: {} } },
    };
    const ts = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', 'whsec_walk')
      .update(`${ts}.${JSON.stringify(event)}`)
      .digest('hex');
    for (const signature of [`t=${ts},v1=${v1}`, 't=1,v1=00'])
      expectDocumented(
        'post',
        '/api/v1/payments/{provider}/{token}',
        await anonymous('post', '/api/v1/payments/{provider}/{token}', {
          params: {
            path: { provider: provider as 'stripe', token },
            header: { 'Stripe-Signature': signature },
          },
          body: event,
        }),
      );
    expectDocumented(
      'post',
      '/api/v1/project/{project}/payment-connectors/{connector}/test-event',
      await api('post', '/api/v1/project/{project}/payment-connectors/{connector}/test-event', {
        params: connectorPath,
      }),
    );
    const eventLog = await api('get', '/api/v1/project/{project}/payment-connectors/{connector}/events', {
      params: connectorPath,
    });
    expectDocumented('get', '/api/v1/project/{project}/payment-connectors/{connector}/events', eventLog);
    if (!eventLog.ok) throw new Error(`HTTP ${eventLog.status}`);
    for (const event of [eventLog.body.data.data[0].id, 999999])
      expectDocumented(
        'get',
        '/api/v1/project/{project}/payment-connectors/{connector}/events/{event}',
        await api('get', '/api/v1/project/{project}/payment-connectors/{connector}/events/{event}', {
          params: { path: { ...connectorPath.path, event } },
        }),
      );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/payment-connectors/{connector}',
      await api('get', '/api/v1/project/{project}/payment-connectors/{connector}', { params: connectorPath }),
    );

    // Customers, and a purchase as the connector's events leave it (the API only reads purchases).
    const customer = await api('post', '/api/v1/project/{project}/customers', {
      params: project,
      body: { email: 'Buyer@Example.com', name: 'Buyer' },
    });
    expectDocumented('post', '/api/v1/project/{project}/customers', customer);
    if (!customer.ok) throw new Error(`HTTP ${customer.status}`);
    const customerPath = { path: { ...project.path, customer: customer.body.data.id } };
    const inserted = await t.dataSource.getRepository(SubscriptionEntity).insert({
      project_id: project.path.project,
      connector_id: connector.body.data.id,
      provider: 'stripe',
      kind: 'subscription',
      reference: 'sub_walk',
      status: 'active',
      customer_id: customer.body.data.id,
      license_id: license.body.data.id,
      target_kind: 'license',
      target_id: license.body.data.id,
      product_ids: ['price_walk'],
      current_period_end: new Date('2027-01-01T00:00:00Z'),
    });
    const subscriptionPath = {
      path: { ...project.path, subscription: inserted.identifiers[0].id as number },
    };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/customers',
      await api('get', '/api/v1/project/{project}/customers', {
        params: { ...project, query: { email: 'buyer@example.com' } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/customers',
      await api('get', '/api/v1/project/{project}/customers', {
        params: { ...project, query: { per_page: 51 } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/customers/{customer}',
      await api('get', '/api/v1/project/{project}/customers/{customer}', { params: customerPath }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}/customers/{customer}',
      await api('patch', '/api/v1/project/{project}/customers/{customer}', {
        params: customerPath,
        body: { name: null },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/subscriptions',
      await api('get', '/api/v1/project/{project}/subscriptions', {
        params: { ...project, query: { status: 'active', customer_id: customer.body.data.id } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/subscriptions/{subscription}',
      await api('get', '/api/v1/project/{project}/subscriptions/{subscription}', {
        params: subscriptionPath,
      }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/customers/{customer}',
      await api('delete', '/api/v1/project/{project}/customers/{customer}', { params: customerPath }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/payment-connectors/{connector}',
      await api('delete', '/api/v1/project/{project}/payment-connectors/{connector}', {
        params: connectorPath,
      }),
    );

    // Runtime: the license key, the calling domain, a refusal with redirect_url.
    const runtime = createApiClient(t.url, { licenseKey: uuid });
    const paid = await runtime('post', '/api/v1/project/has-paid', {
      params: { header: { 'X-Service-Domain': 'www.shop.example.com' } },
    });
    expectDocumented('post', '/api/v1/project/has-paid', paid);
    if (!paid.ok) throw new Error(`HTTP ${paid.status}: ${paid.body.message}`);
    const hasPaid: boolean = paid.body.data.has_paid;
    expect(hasPaid).toBe(true);
    const unpaid = await runtime('post', '/api/v1/project/has-paid', {
      params: { query: { action: 'check_project' } },
    });
    expectDocumented('post', '/api/v1/project/has-paid', unpaid);
    if (!unpaid.ok) throw new Error(`HTTP ${unpaid.status}`);
    expect(unpaid.body.data).toEqual({
      has_paid: false,
      redirect_url: 'https://example.com/pay',
      is_test_license: false,
    });
    const unknownDomain = await runtime('post', '/api/v1/project/has-paid', {
      params: { query: { domain: 'elsewhere.example.org' } },
    });
    expectDocumented('post', '/api/v1/project/has-paid', unknownDomain);
    expect(unknownDomain.status).toBe(403);
    expectDocumented(
      'post',
      '/api/v1/project/has-paid',
      await anonymous('post', '/api/v1/project/has-paid', { params: {} }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/has-paid',
      await api('get', '/api/v1/project/{project}/has-paid', {
        params: { ...project, query: { domain: 'shop.example.com', include: 'injectables' } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/has-paid',
      await api('get', '/api/v1/project/{project}/has-paid', {
        params: { ...project, query: { domain: 'nowhere.example.org' } },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/licenses/{license}/usage',
      await api('get', '/api/v1/project/{project}/licenses/{license}/usage', { params: licensePath }),
    );

    // Activations: listed, one deleted by the vendor, one deactivated by the license holder.
    const activations = await api('get', '/api/v1/project/{project}/licenses/{license}/activations', {
      params: { ...licensePath, query: { per_page: 1 } },
    });
    expectDocumented('get', '/api/v1/project/{project}/licenses/{license}/activations', activations);
    if (!activations.ok) throw new Error(`HTTP ${activations.status}`);
    const [first] = activations.body.data.data;
    expect([first.domain, first.host]).toEqual(['shop.example.com', '']);
    const activationPath = { path: { ...licensePath.path, activation: first.id } };
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/licenses/{license}/activations/{activation}',
      await api('delete', '/api/v1/project/{project}/licenses/{license}/activations/{activation}', {
        params: activationPath,
      }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/licenses/{license}/activations/{activation}',
      await api('delete', '/api/v1/project/{project}/licenses/{license}/activations/{activation}', {
        params: activationPath,
      }),
    );
    const deactivated = await runtime('post', '/api/v1/license/deactivate', {
      params: { header: { 'X-Service-Domain': 'www.shop.example.com' } },
    });
    expectDocumented('post', '/api/v1/license/deactivate', deactivated);
    if (!deactivated.ok) throw new Error(`HTTP ${deactivated.status}`);
    const count: number = deactivated.body.data.deactivated;
    expect(count).toBe(1);
    expectDocumented(
      'post',
      '/api/v1/license/deactivate',
      await runtime('post', '/api/v1/license/deactivate', {
        params: {},
        body: { domain: '*.shop.example.com' },
      }),
    );

    // Injectables: JSON, multipart (not expressible with fetch's typed body here), stream, paid-only items.
    const snippet = await api('post', '/api/v1/project/{project}/injectables', {
      params: project,
      body: {
        slug: 'banner',
        type: 'snippet',
        content: '<b>hi</b>',
        secret: 's3cret-s3cret',
        only_if_paid: true,
        meta: { v: 1 },
      },
    });
    expectDocumented('post', '/api/v1/project/{project}/injectables', snippet);
    if (!snippet.ok) throw new Error(`HTTP ${snippet.status}: ${JSON.stringify(snippet.body)}`);
    const upload = await t
      .http()
      .post(`/api/v1/project/${project.path.project}/injectables`)
      .set('X-API-KEY', key)
      .field('slug', 'asset')
      .field('secret', 's3cret-s3cret')
      .field('only_if_paid', 'false')
      .attach('file', Buffer.from('console.log(1)'), 'app.js');
    expectDocumented('post', '/api/v1/project/{project}/injectables', upload);
    expect(upload.status).toBe(201);
    const injectablePath = { path: { ...project.path, injectable: snippet.body.data.id } };
    expectDocumented(
      'get',
      '/api/v1/project/{project}/injectables',
      await api('get', '/api/v1/project/{project}/injectables', { params: project }),
    );
    expectDocumented(
      'get',
      '/api/v1/project/{project}/injectables/{injectable}',
      await api('get', '/api/v1/project/{project}/injectables/{injectable}', { params: injectablePath }),
    );
    expectDocumented(
      'put',
      '/api/v1/project/{project}/injectables/{injectable}',
      await api('put', '/api/v1/project/{project}/injectables/{injectable}', {
        params: injectablePath,
        body: { title: 'Banner' },
      }),
    );
    expectDocumented(
      'get',
      '/api/v1/injectable/stream',
      await runtime('get', '/api/v1/injectable/stream', { params: { query: { per_page: 1 } } }),
    );
    expectDocumented(
      'get',
      '/api/v1/injectable/stream',
      await runtime('get', '/api/v1/injectable/stream', { params: { query: { cursor: 'nope' } } }),
    );
    await api('patch', '/api/v1/project/{project}', { params: project, body: { has_paid: true } });
    const withItems = await runtime('post', '/api/v1/project/has-paid', {
      params: {
        query: { action: 'check_project', include: 'injectables' },
        header: { 'X-Service-Domain': 'www.shop.example.com' },
      },
    });
    expectDocumented('post', '/api/v1/project/has-paid', withItems);
    if (!withItems.ok) throw new Error(`HTTP ${withItems.status}`);
    expect(withItems.body.data.injectables?.map((i) => i.slug)).toEqual(['banner']);

    // Revoke / reactivate, and the refusal of a revoked license.
    expectDocumented(
      'post',
      '/api/v1/project/{project}/licenses/{license}/revoke',
      await api('post', '/api/v1/project/{project}/licenses/{license}/revoke', { params: licensePath }),
    );
    const refused = await runtime('post', '/api/v1/project/has-paid', {
      params: { query: { action: 'check_project' } },
    });
    expectDocumented('post', '/api/v1/project/has-paid', refused);
    if (refused.ok || refused.status !== 403) throw new Error(`expected 403, got ${refused.status}`);
    expect(refused.body.data).toEqual({ redirect_url: 'https://example.com/pay' });
    expectDocumented(
      'post',
      '/api/v1/project/{project}/licenses/{license}/reactivate',
      await api('post', '/api/v1/project/{project}/licenses/{license}/reactivate', { params: licensePath }),
    );

    // Webhook outbox (the dispatcher is off: deliveries stay pending).
    const deliveries = await api('get', '/api/v1/project/{project}/webhook-deliveries', { params: project });
    expectDocumented('get', '/api/v1/project/{project}/webhook-deliveries', deliveries);
    if (!deliveries.ok) throw new Error(`HTTP ${deliveries.status}`);
    expect(deliveries.body.data.data.length).toBeGreaterThan(0);
    const delivery = { path: { ...project.path, delivery: deliveries.body.data.data[0].id } };
    expectDocumented(
      'post',
      '/api/v1/project/{project}/webhook-deliveries/{delivery}/retry',
      await api('post', '/api/v1/project/{project}/webhook-deliveries/{delivery}/retry', {
        params: delivery,
      }),
    );

    // API keys
    const scoped = await api('post', '/api/v1/api-keys', {
      params: {},
      body: { name: 'scoped', project_id: project.path.project },
    });
    expectDocumented('post', '/api/v1/api-keys', scoped);
    if (!scoped.ok) throw new Error(`HTTP ${scoped.status}`);
    const plaintext: string = scoped.body.data.key;
    expectDocumented(
      'get',
      '/api/v1/api-keys',
      await createApiClient(t.url, { apiKey: plaintext })('get', '/api/v1/api-keys', { params: {} }),
    );
    expectDocumented('get', '/api/v1/api-keys', await api('get', '/api/v1/api-keys', { params: {} }));
    const current = await createApiClient(t.url, { apiKey: plaintext })('get', '/api/v1/api-keys/current', {
      params: {},
    });
    expectDocumented('get', '/api/v1/api-keys/current', current);
    expectDocumented('get', '/api/v1/server', await api('get', '/api/v1/server', { params: {} }));
    if (!current.ok) throw new Error(`HTTP ${current.status}`);
    expect(current.body.data).toMatchObject({ id: scoped.body.data.id, project_id: project.path.project });
    const rolled = await api('post', '/api/v1/api-keys/{id}/roll', {
      params: { path: { id: scoped.body.data.id } },
      body: { grace_seconds: 60 },
    });
    expectDocumented('post', '/api/v1/api-keys/{id}/roll', rolled);
    if (!rolled.ok) throw new Error(`HTTP ${rolled.status}`);
    const previousExpiry: string | null = rolled.body.data.previous_key.expires_at;
    expect({
      scope: rolled.body.data.project_id,
      previous: rolled.body.data.previous_key.id,
      expires: typeof previousExpiry,
    }).toEqual({
      scope: project.path.project,
      previous: scoped.body.data.id,
      expires: 'string',
    });
    expectDocumented(
      'delete',
      '/api/v1/api-keys/{id}',
      await api('delete', '/api/v1/api-keys/{id}', { params: { path: { id: rolled.body.data.id } } }),
    );

    // The audit log of the walk so far.
    const projectLog = await api('get', '/api/v1/project/{project}/audit-log', {
      params: { ...project, query: { resource_type: 'license' } },
    });
    expectDocumented('get', '/api/v1/project/{project}/audit-log', projectLog);
    if (!projectLog.ok) throw new Error(`HTTP ${projectLog.status}`);
    const actor: 'api_key' | 'cli' | 'license' | 'payment' | 'user' | 'portal' =
      projectLog.body.data.data[0].actor.type;
    expect({ actor, action: projectLog.body.data.data[0].action }).toEqual({
      actor: 'api_key',
      action: 'license.reactivated',
    });
    expectDocumented(
      'get',
      '/api/v1/audit-log',
      await api('get', '/api/v1/audit-log', { params: { query: { action: 'api_key.rolled', per_page: 5 } } }),
    );
    expectDocumented(
      'get',
      '/api/v1/audit-log',
      await api('get', '/api/v1/audit-log', { params: { query: { since: 'yesterday' } } }),
    );

    // What the gate answered in the walk so far (docs/analytics.md), once it is written.
    await t.app.get(AnalyticsCounts).flush();
    const answers = await api('get', '/api/v1/project/{project}/analytics', {
      params: { ...project, query: { granularity: 'hour', group_by: 'domain' } },
    });
    expectDocumented('get', '/api/v1/project/{project}/analytics', answers);
    if (!answers.ok) throw new Error(`HTTP ${answers.status}`);
    expect(answers.body.data.series.length).toBeGreaterThan(0);
    expectDocumented(
      'get',
      '/api/v1/analytics',
      await api('get', '/api/v1/analytics', { params: { query: { group_by: 'project' } } }),
    );
    expectDocumented(
      'get',
      '/api/v1/analytics',
      await api('get', '/api/v1/analytics', {
        params: { query: { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z', granularity: 'hour' } },
      }),
    );

    // Another owner's key: 403 on the project.
    const stranger = await makeApiKey(t.app, (await makeAccount(t.app)).user);
    expectDocumented(
      'get',
      '/api/v1/project/{project}',
      await createApiClient(t.url, { apiKey: stranger })('get', '/api/v1/project/{project}', {
        params: project,
      }),
    );

    // Lock, unlock and the deletes.
    expectDocumented(
      'post',
      '/api/v1/project/{project}/lock',
      await api('post', '/api/v1/project/{project}/lock', { params: project, body: { reason: 'audit' } }),
    );
    expectDocumented(
      'patch',
      '/api/v1/project/{project}',
      await api('patch', '/api/v1/project/{project}', { params: project, body: { name: 'x' } }),
    );
    expectDocumented(
      'post',
      '/api/v1/project/{project}/unlock',
      await api('post', '/api/v1/project/{project}/unlock', { params: project }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/domains/{domain}',
      await api('delete', '/api/v1/project/{project}/domains/{domain}', { params: domainPath }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/injectables/{injectable}',
      await api('delete', '/api/v1/project/{project}/injectables/{injectable}', { params: injectablePath }),
    );
    expectDocumented(
      'delete',
      '/api/v1/project/{project}/licenses/{license}',
      await api('delete', '/api/v1/project/{project}/licenses/{license}', { params: licensePath }),
    );
    const removed = await api('delete', '/api/v1/project/{project}', { params: project });
    expectDocumented('delete', '/api/v1/project/{project}', removed);
    if (!removed.ok) throw new Error(`HTTP ${removed.status}`);
    const nothing: null = removed.body.data;
    expect(nothing).toBeNull();

    // Unauthenticated endpoints.
    expectDocumented('get', '/api/v1', await anonymous('get', '/api/v1', { params: {} }));
    expectDocumented('get', '/api/v1/health', await anonymous('get', '/api/v1/health', { params: {} }));
    expectDocumented(
      'get',
      '/api/v1/health/live',
      await anonymous('get', '/api/v1/health/live', { params: {} }),
    );
    // Outside the envelope: this document, and the Prometheus text.
    expectDocumented('get', '/api/docs-json', await anonymous('get', '/api/docs-json', { params: {} }));
    const metrics = await t.http().get('/metrics');
    exercised.add('GET /metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain\b/);
    expect(Object.keys(DOC.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
    expect(metrics.text).toContain('# TYPE licensegate_runtime_checks_total counter');

    const documented = Object.entries(DOC.paths as Json).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.filter((op) => !exercised.has(op)).sort()).toEqual([]);
  });
});
