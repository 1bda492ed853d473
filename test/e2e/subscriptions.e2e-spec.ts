import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentEventEntity } from '../../src/payments/payment-event.entity.js';
import { SubscriptionEntity } from '../../src/payments/subscription.entity.js';
import { makeApiKey, makeLicense, makeProject, makeUser } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { makeConnector } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

type Json = Record<string, any>;
const SUBSCRIPTION_KEYS = [
  'cancel_at_period_end',
  'connector_id',
  'created_at',
  'current_period_end',
  'customer_id',
  'id',
  'kind',
  'last_event_at',
  'last_event_type',
  'license_deleted_at',
  'license_id',
  'product_ids',
  'provider',
  'reference',
  'status',
  'target',
  'updated_at',
];
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

describe('subscriptions (docs/payments.md#subscriptions)', () => {
  let t: TestApp;
  let key = '';
  let owner: Awaited<ReturnType<typeof makeUser>>;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false' });
    owner = await makeUser(t.app);
    key = await makeApiKey(t.app, owner);
  });
  afterAll(async () => t.close());

  const api = (k = key) => apiAs(t, k);
  const base = (projectId: number) => `/project/${projectId}/subscriptions`;
  const list = async (projectId: number, query = '') =>
    expectSuccess(await api().get(`${base(projectId)}${query}`)) as {
      data: Json[];
      next_cursor: string | null;
    };
  const ids = (page: { data: Json[] }) => page.data.map((s) => s.reference);

  /** Rows as a connector's events leave them (the API never writes them). */
  async function insert(rows: Array<Partial<SubscriptionEntity>>): Promise<SubscriptionEntity[]> {
    const repo = t.dataSource.getRepository(SubscriptionEntity);
    const out: SubscriptionEntity[] = [];
    for (const row of rows) {
      const result = await repo.insert({ kind: 'subscription', status: 'active', ...row });
      out.push(await repo.findOneByOrFail({ id: result.identifiers[0].id as number }));
    }
    return out;
  }

  async function insertEvents(rows: Array<Partial<PaymentEventEntity>>): Promise<void> {
    for (const row of rows)
      await t.dataSource.getRepository(PaymentEventEntity).insert({
        provider_event_id: `evt_${Math.random().toString(36).slice(2)}`,
        type: 'invoice.paid',
        outcome: 'applied',
        target_kind: null,
        target_id: null,
        detail: 'The license is paid.',
        received_at: new Date(Math.floor(Date.now() / 1000) * 1000),
        subscription_id: null,
        ...row,
      });
  }

  it('answers each purchase as a row of its own, newest first', async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const license = await makeLicense(t, key, project.id);
    const periodEnd = new Date('2027-01-01T00:00:00Z');
    const lastEvent = new Date('2026-11-27T08:00:00Z');
    const [sub, order] = await insert([
      {
        project_id: project.id,
        connector_id: connector.id,
        provider: 'stripe',
        reference: 'sub_1QdH6s',
        status: 'active',
        cancel_at_period_end: true,
        license_id: license.id,
        target_kind: 'license',
        target_id: license.id,
        product_ids: ['price_1', 'prod_1'],
        current_period_end: periodEnd,
        last_event_at: lastEvent,
        last_event_type: 'customer.subscription.updated',
      },
      {
        project_id: project.id,
        connector_id: connector.id,
        provider: 'stripe',
        kind: 'order',
        reference: 'cs_test_a1',
        status: 'paid',
      },
    ]);
    const page = await list(project.id);
    expect(page.next_cursor).toBeNull();
    expect(page.data.map((s) => s.id)).toEqual([order.id, sub.id]);
    const [gotOrder, gotSub] = page.data;
    expect(Object.keys(gotSub).sort()).toEqual(SUBSCRIPTION_KEYS);
    expect(gotSub).toEqual({
      id: sub.id,
      connector_id: connector.id,
      provider: 'stripe',
      reference: 'sub_1QdH6s',
      kind: 'subscription',
      status: 'active',
      cancel_at_period_end: true,
      customer_id: null,
      license_id: license.id,
      license_deleted_at: null,
      target: { kind: 'license', id: license.id },
      product_ids: ['price_1', 'prod_1'],
      current_period_end: '2027-01-01T00:00:00Z',
      last_event_at: '2026-11-27T08:00:00Z',
      last_event_type: 'customer.subscription.updated',
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(gotOrder).toMatchObject({
      kind: 'order',
      status: 'paid',
      cancel_at_period_end: false,
      target: null,
      product_ids: [],
      last_event_at: null,
    });
    const one = expectSuccess(await api().get(`${base(project.id)}/${sub.id}`));
    expect(one).toEqual({ ...gotSub, events: [] });
  });

  it('filters by status, customer and connector, and pages with a cursor', async () => {
    const project = await makeProject(t, key);
    const stripe = await makeConnector(t, key, project.id, 'stripe');
    const paddle = await makeConnector(t, key, project.id, 'paddle');
    const [ada, bob] = [
      expectSuccess(await api().post(`/project/${project.id}/customers`, { email: 'ada@example.com' }), 201),
      expectSuccess(await api().post(`/project/${project.id}/customers`, { email: 'bob@example.com' }), 201),
    ];
    const common = { project_id: project.id };
    await insert([
      {
        ...common,
        connector_id: stripe.id,
        provider: 'stripe',
        reference: 's1',
        status: 'active',
        customer_id: ada.id,
      },
      {
        ...common,
        connector_id: stripe.id,
        provider: 'stripe',
        reference: 's2',
        status: 'canceled',
        customer_id: bob.id,
      },
      {
        ...common,
        connector_id: paddle.id,
        provider: 'paddle',
        reference: 'p1',
        status: 'past_due',
        customer_id: ada.id,
      },
      { ...common, connector_id: paddle.id, provider: 'paddle', reference: 'p2', status: 'active' },
    ]);
    expect(ids(await list(project.id))).toEqual(['p2', 'p1', 's2', 's1']);
    expect(ids(await list(project.id, '?status=active'))).toEqual(['p2', 's1']);
    expect(ids(await list(project.id, `?customer_id=${ada.id}`))).toEqual(['p1', 's1']);
    expect(ids(await list(project.id, `?connector_id=${stripe.id}`))).toEqual(['s2', 's1']);
    expect(
      ids(await list(project.id, `?connector_id=${paddle.id}&status=active&customer_id=${ada.id}`)),
    ).toEqual([]);
    expect(ids(await list(project.id, '?status=refunded'))).toEqual([]);

    const first = await list(project.id, '?per_page=3');
    expect(ids(first)).toEqual(['p2', 'p1', 's2']);
    const second = await list(project.id, `?per_page=3&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second.next_cursor).toBeNull();
    expect(ids(second)).toEqual(['s1']);

    // Another project's rows are not in this list.
    const other = await makeProject(t, key);
    expect(await list(other.id)).toEqual({ data: [], next_cursor: null });
    const foreign = await api().get(`${base(other.id)}?cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(expectError(foreign, 422, ['cursor']).errors.cursor).toEqual(['The cursor is invalid.']);
  });

  it('refuses bad filters with 422 messages naming them', async () => {
    const project = await makeProject(t, key);
    const cases: Array<[string, string, string]> = [
      [
        '?status=cancelled',
        'status',
        'The selected status is invalid: use active, trialing, past_due, paused, canceled, expired, refunded, disputed, paid.',
      ],
      ['?customer_id=abc', 'customer_id', 'The customer id field must be a positive integer.'],
      ['?customer_id=0', 'customer_id', 'The customer id field must be a positive integer.'],
      ['?customer_id=99999999999', 'customer_id', 'The customer id field must be a positive integer.'],
      ['?connector_id=-1', 'connector_id', 'The connector id field must be a positive integer.'],
      ['?per_page=0', 'per_page', 'The per page field must be between 1 and 50.'],
    ];
    for (const [query, field, message] of cases) {
      const res = await api().get(`${base(project.id)}${query}`);
      expect({ query, errors: expectError(res, 422, [field]).errors[field] }).toEqual({
        query,
        errors: [message],
      });
    }
  });

  it('shows one purchase with its connector’s events of it, latest first, at most 50', async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'polar');
    const otherConnector = await makeConnector(t, key, project.id, 'polar');
    const [sub, sibling] = await insert([
      { project_id: project.id, connector_id: connector.id, provider: 'polar', reference: 'sub_a' },
      { project_id: project.id, connector_id: connector.id, provider: 'polar', reference: 'sub_b' },
    ]);
    await insertEvents(
      Array.from({ length: 55 }, (_, i) => ({
        connector_id: connector.id,
        project_id: project.id,
        provider_event_id: `evt_${i}`,
        type: i % 2 ? 'subscription.updated' : 'order.paid',
        subscription_id: sub.id,
      })),
    );
    await insertEvents([
      {
        connector_id: connector.id,
        project_id: project.id,
        provider_event_id: 'evt_sibling',
        subscription_id: sibling.id,
      },
      { connector_id: connector.id, project_id: project.id, provider_event_id: 'evt_none' },
      // The id of a purchase, but another connector's event: not this purchase's.
      {
        connector_id: otherConnector.id,
        project_id: project.id,
        provider_event_id: 'evt_other',
        subscription_id: sub.id,
      },
    ]);
    const got = expectSuccess(await api().get(`${base(project.id)}/${sub.id}`));
    expect(got.events).toHaveLength(50);
    expect(got.events.map((e: Json) => e.provider_event_id)).toEqual(
      Array.from({ length: 50 }, (_, i) => `evt_${54 - i}`),
    );
    expect(got.events[0]).toEqual({
      id: expect.any(Number),
      provider_event_id: 'evt_54',
      type: 'order.paid',
      outcome: 'applied',
      target: null,
      detail: 'The license is paid.',
      subscription_id: sub.id,
      received_at: expect.stringMatching(TIMESTAMP),
    });
    // The connector's event log names the purchase of each event.
    const log = expectSuccess(
      await api().get(`/project/${project.id}/payment-connectors/${connector.id}/events?per_page=3`),
    ).data as Json[];
    expect(log.map((e) => [e.provider_event_id, e.subscription_id])).toEqual([
      ['evt_none', null],
      ['evt_sibling', sibling.id],
      ['evt_54', sub.id],
    ]);
  });

  it('applies the access rules of licenses and is read-only (other methods 405)', async () => {
    const project = await makeProject(t, key);
    const other = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const [sub] = await insert([
      { project_id: project.id, connector_id: connector.id, provider: 'stripe', reference: 'sub_rules' },
    ]);
    const path = `${base(project.id)}/${sub.id}`;
    expect(expectError(await api().get(`${base(other.id)}/${sub.id}`), 404).message).toBe(
      'Subscription not found.',
    );
    expectError(await api().get(`${base(project.id)}/999999`), 404);
    expectError(await api().get(`${base(project.id)}/sub_rules`), 404);
    const stranger = await makeApiKey(t.app, await makeUser(t.app));
    expectError(await api(stranger).get(path), 403);
    expectError(await api(stranger).get(base(project.id)), 403);
    expectError(await api(stranger).get(`${base(project.id)}/999999`), 404);
    expectError(await api(stranger).get(`/project/999999/subscriptions/${sub.id}`), 404);

    const scoped = await makeApiKey(t.app, owner, { project_id: other.id });
    expect(expectError(await api(scoped).get(path), 403).message).toBe(
      'This API key is scoped to another project.',
    );
    expectSuccess(await api(scoped).get(base(other.id)));
    const readOnly = await makeApiKey(t.app, owner, { read_only: true });
    expectSuccess(await api(readOnly).get(path));
    expectSuccess(await api(readOnly).get(base(project.id)));

    for (const res of [
      await api().post(base(project.id), { reference: 'x' }),
      await api().post(path, {}),
      await api().patch(path, { status: 'canceled' }),
      await api().put(path, { status: 'canceled' }),
      await api().delete(path),
    ]) {
      expectError(res, 405);
      expect(res.headers.allow).toMatch(/GET/);
      expect(res.headers.allow).not.toMatch(/POST|PATCH|PUT|DELETE/);
    }
    expect(
      await t.dataSource.getRepository(SubscriptionEntity).findOneByOrFail({ id: sub.id }),
    ).toMatchObject({
      status: 'active',
    });
  });
});
