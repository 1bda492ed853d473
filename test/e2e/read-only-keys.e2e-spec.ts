import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { PaymentEventEntity } from '../../src/payments/payment-event.entity.js';
import { SubscriptionEntity } from '../../src/payments/subscription.entity.js';
import {
  makeAccount,
  makeApiKey,
  makeCustomer,
  makeDomain,
  makeLicense,
  makePlan,
  makeProject,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { makeConnector } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Read-only API keys (docs/decisions.md#accounts-and-api-keys): every operation of openapi.json that
 * takes an API key and writes answers 403 "This API key is read-only." and changes nothing; every one
 * that reads answers as it does for any key of that scope.
 */

type Json = Record<string, any>;
const DOC: Json = JSON.parse(readFileSync('openapi.json', 'utf8'));
const takesApiKey = (op: Json) =>
  (op.security as Json[] | undefined)?.some((scheme) => 'api-key' in scheme) ?? false;

/** The API-key operations of the document, `METHOD /api/v1/path`, split into reads and writes. */
const OPERATIONS = Object.entries(DOC.paths as Json).flatMap(([path, item]) =>
  Object.entries(item as Json)
    .filter(([, op]) => takesApiKey(op))
    .map(([method]) => ({ method: method.toUpperCase(), path })),
);
const WRITES = OPERATIONS.filter((op) => op.method !== 'GET');
const READS = OPERATIONS.filter((op) => op.method === 'GET');

async function auditCount(t: TestApp): Promise<number> {
  const [row] = await t.dataSource.query('SELECT COUNT(*) AS n FROM audit_events');
  return Number(row.n);
}

describe('read-only API keys', () => {
  let t: TestApp;
  let key: string;
  let ids: Record<string, number>;
  let readOnly: string;
  let readOnlyScoped: string;

  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    const account = await makeAccount(t.app);
    key = account.key;
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const domain = await makeDomain(t, key, project.id, { domain: 'shop.example.com' });
    const license = await makeLicense(t, key, project.id);
    const injectable = expectSuccess(
      await t
        .http()
        .post(`/api/v1/project/${project.id}/injectables`)
        .set('X-API-KEY', key)
        .send({ slug: 'a', content: 'x', secret: 's3cret-s3cret' }),
      201,
    );
    const delivery = expectSuccess(
      await t.http().get(`/api/v1/project/${project.id}/webhook-deliveries`).set('X-API-KEY', key),
    ).data[0];
    const created = expectSuccess(
      await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .send({ name: 'read only', read_only: true }),
      201,
    );
    expect(created.read_only).toBe(true);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const customer = await makeCustomer(t, key, project.id, { email: 'buyer@example.com' });
    // Purchases are written by connectors' events only: one as an event leaves it.
    const subscription = await t.dataSource.getRepository(SubscriptionEntity).insert({
      project_id: project.id,
      connector_id: connector.id,
      provider: 'stripe',
      kind: 'subscription',
      reference: 'sub_fixture',
      status: 'active',
    });
    // Events too: one as a delivery leaves it.
    const event = await t.dataSource.getRepository(PaymentEventEntity).insert({
      connector_id: connector.id,
      project_id: project.id,
      provider_event_id: 'evt_fixture',
      type: 'invoice.paid',
      outcome: 'ignored',
      detail: '',
      received_at: new Date(),
      payload: '{"id":"evt_fixture"}',
    });
    const plan = await makePlan(t, key, project.id, { code: 'pro', name: 'Pro' });
    readOnly = created.key;
    readOnlyScoped = await makeApiKey(t.app, account.user, { project_id: project.id, read_only: true });
    ids = {
      project: project.id,
      domain: domain.id,
      license: license.id,
      injectable: injectable.id,
      delivery: delivery.id,
      id: created.id,
      connector: connector.id,
      customer: customer.id,
      subscription: subscription.identifiers[0].id as number,
      plan: plan.id,
      event: event.identifiers[0].id as number,
    };
  });
  afterAll(async () => t.close());

  const url = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => String(ids[name]));

  it('walks every API-key operation of the document', () => {
    expect({ writes: WRITES.length > 20, reads: READS.length > 10 }).toEqual({ writes: true, reads: true });
  });

  it('are made read-write unless asked', async () => {
    const made = expectSuccess(
      await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'plain' }),
      201,
    );
    expect(made.read_only).toBe(false);
    const listed = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key));
    expect(listed.map((k: Json) => [k.name, k.read_only])).toEqual(
      expect.arrayContaining([
        ['read only', true],
        ['plain', false],
      ]),
    );
  });

  it.each(WRITES.map((op) => [`${op.method} ${op.path}`, op] as const))(
    '%s answers 403 to a read-only key, global or scoped, and changes nothing',
    async (_name, op) => {
      const before = await auditCount(t);
      for (const sent of [readOnly, readOnlyScoped]) {
        const res = await t
          .http()
          [op.method.toLowerCase() as 'post'](url(op.path))
          .set('X-API-KEY', sent)
          .send({ name: 'changed', title: 'changed', domain: 'changed.example.com' });
        expect({
          operation: `${op.method} ${op.path}`,
          status: res.status,
          message: expectError(res, 403).message,
        }).toEqual({
          operation: `${op.method} ${op.path}`,
          status: 403,
          message: 'This API key is read-only.',
        });
      }
      expect(await auditCount(t)).toBe(before);
    },
  );

  it('leaves every resource as it was', async () => {
    const project = expectSuccess(await t.http().get(`/api/v1/project/${ids.project}`).set('X-API-KEY', key));
    expect({ changed: project.name === 'changed', locked_at: project.locked_at }).toEqual({
      changed: false,
      locked_at: null,
    });
    expectSuccess(
      await t.http().get(`/api/v1/project/${ids.project}/licenses/${ids.license}`).set('X-API-KEY', key),
    );
    expectSuccess(
      await t.http().get(`/api/v1/project/${ids.project}/domains/${ids.domain}`).set('X-API-KEY', key),
    );
    expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${ids.project}/injectables/${ids.injectable}`)
        .set('X-API-KEY', key),
    );
    const keys = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key));
    expect(keys.find((k: Json) => k.id === ids.id)).toMatchObject({ revoked_at: null, rolled_at: null });
  });

  it.each(READS.map((op) => [`${op.method} ${op.path}`, op] as const))(
    '%s reads as any key of the scope does',
    async (_name, op) => {
      // The API-key has-paid needs a question: the project's own state.
      const query = op.path.endsWith('/has-paid') ? '?action=check_project' : '';
      const global = await t
        .http()
        .get(url(op.path) + query)
        .set('X-API-KEY', readOnly);
      expect({ operation: op.path, status: global.status }).toEqual({ operation: op.path, status: 200 });
      // API keys are managed, and the account's analytics read, with global keys only, read-only or not.
      const scoped = await t
        .http()
        .get(url(op.path) + query)
        .set('X-API-KEY', readOnlyScoped);
      expect({ operation: op.path, status: scoped.status }).toEqual({
        operation: op.path,
        status: ['/api/v1/api-keys', '/api/v1/analytics'].includes(op.path) ? 403 : 200,
      });
    },
  );

  it('a missing or unknown key is still 401 or 403 before anything else', async () => {
    expectError(await t.http().post('/api/v1/project').send({ name: 'x' }), 401);
    expect(
      expectError(
        await t.http().post('/api/v1/project').set('X-API-KEY', 'lg_unknown').send({ name: 'x' }),
        403,
      ).message,
    ).toBe('Invalid API key.');
  });
});
