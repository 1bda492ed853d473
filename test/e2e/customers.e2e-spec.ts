import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountEntity } from '../../src/auth/account.entity.js';
import { READ_ONLY } from '../../src/auth/api-key.guard.js';
import { AuthService } from '../../src/auth/auth.service.js';
import type { Role } from '../../src/auth/roles.js';
import { CustomerExternalIdEntity } from '../../src/customers/customer.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { SubscriptionEntity } from '../../src/payments/subscription.entity.js';
import { makeApiKey, makeLicense, makeProject, makeUser, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { makeConnector } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

type Json = Record<string, any>;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const CUSTOMER_KEYS = ['created_at', 'email', 'external_ids', 'id', 'name', 'project_id', 'updated_at'];
const PASSWORD = 'correct horse battery';

describe('customers (docs/payments.md#customers)', () => {
  let t: TestApp;
  let key = '';
  let owner: Awaited<ReturnType<typeof makeUser>>;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' });
    owner = await makeUser(t.app, { password: PASSWORD });
    key = await makeApiKey(t.app, owner);
  });
  afterAll(async () => t.close());

  const api = (k = key) => apiAs(t, k);
  const base = (projectId: number) => `/project/${projectId}/customers`;
  const create = async (projectId: number, body: Json) =>
    expectSuccess(await api().post(base(projectId), body), 201) as Json;
  const list = async (projectId: number, query = '') =>
    expectSuccess(await api().get(`${base(projectId)}${query}`)) as {
      data: Json[];
      next_cursor: string | null;
    };
  /** The webhook events recorded for the project, oldest first. */
  const deliveries = async (projectId: number) =>
    (
      await t.dataSource.query<Array<{ type: string; payload: string }>>(
        'SELECT type, payload FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
        [projectId],
      )
    )
      .filter((r) => r.type.startsWith('customer.'))
      .map((r) => ({ type: r.type, data: (JSON.parse(r.payload) as Json).data as Json }));
  const audit = async (projectId: number) =>
    (expectSuccess(await api().get(`/project/${projectId}/audit-log`)).data as Json[]).filter((a) =>
      String(a.action).startsWith('customer.'),
    );
  const nameLicense = (licenseId: number, customerId: number | null) =>
    t.dataSource.getRepository(LicenseEntity).update({ id: licenseId }, { customer_id: customerId });

  it('creates a customer with the email lower-cased, announces and audits it', async () => {
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const data = await create(project.id, { email: '  Ada.Lovelace@Example.COM ', name: ' Ada ' });
    expect(Object.keys(data).sort()).toEqual(CUSTOMER_KEYS);
    expect(data).toMatchObject({
      project_id: project.id,
      email: 'ada.lovelace@example.com',
      name: 'Ada',
      external_ids: [],
    });
    expect(data.created_at).toMatch(TIMESTAMP);
    expect(data.updated_at).toMatch(TIMESTAMP);
    // Not unique: two buyers may type one address.
    const twin = await create(project.id, { email: 'ada.lovelace@example.com' });
    expect(twin).toMatchObject({ email: 'ada.lovelace@example.com', name: null });
    expect(twin.id).not.toBe(data.id);

    const got = expectSuccess(await api().get(`${base(project.id)}/${data.id}`));
    expect(got).toEqual({ ...data, licenses: [], subscriptions: [] });

    expect(await deliveries(project.id)).toEqual([
      { type: 'customer.created', data },
      { type: 'customer.created', data: twin },
    ]);
    const rows = await audit(project.id);
    expect(rows.find((a) => a.resource_id === data.id)).toMatchObject({
      action: 'customer.created',
      resource_type: 'customer',
      actor: { type: 'api_key' },
      changes: {
        email: [null, 'ada.lovelace@example.com'],
        name: [null, 'Ada'],
        project_id: [null, project.id],
      },
    });
  });

  it('refuses bad fields with 422 messages naming them', async () => {
    const project = await makeProject(t, key);
    const cases: Array<[Json, string, string]> = [
      [{}, 'email', 'The email field is required.'],
      [{ email: '   ' }, 'email', 'The email field is required.'],
      [{ email: 'not an email' }, 'email', 'The email field must be a valid email address.'],
      [{ email: 42 }, 'email', 'The email field must be a string.'],
      // Longer than an address can be (64 + 1 + 254 characters).
      [{ email: `${'a'.repeat(65)}@example.com` }, 'email', 'The email field must be a valid email address.'],
      [{ email: 'a@example.com', name: 7 }, 'name', 'The name field must be a string.'],
      [
        { email: 'a@example.com', name: 'n'.repeat(256) },
        'name',
        'The name field must not be greater than 255 characters.',
      ],
    ];
    for (const [body, field, message] of cases) {
      const res = await api().post(base(project.id), body);
      expect({ body, errors: expectError(res, 422, [field]).errors[field] }).toEqual({
        body,
        errors: [message],
      });
    }
    const customer = await create(project.id, { email: 'b@example.com' });
    const res = await api().patch(`${base(project.id)}/${customer.id}`, { email: null });
    expect(expectError(res, 422, ['email']).errors.email).toEqual(['The email field is required.']);
    const bad = await api().patch(`${base(project.id)}/${customer.id}`, { email: 'nope' });
    expect(expectError(bad, 422, ['email']).errors.email).toEqual([
      'The email field must be a valid email address.',
    ]);
    expect((await list(project.id)).data).toHaveLength(1);
  });

  it('updates only the fields sent, announces and audits the change', async () => {
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const customer = await create(project.id, { email: 'grace@example.com', name: 'Grace' });
    const renamed = expectSuccess(
      await api().patch(`${base(project.id)}/${customer.id}`, { email: 'Grace.Hopper@Example.com' }),
    );
    expect(renamed).toMatchObject({ id: customer.id, email: 'grace.hopper@example.com', name: 'Grace' });
    const cleared = expectSuccess(await api().patch(`${base(project.id)}/${customer.id}`, { name: null }));
    expect(cleared).toMatchObject({ email: 'grace.hopper@example.com', name: null });
    const types = (await deliveries(project.id)).map((d) => d.type);
    expect(types).toEqual(['customer.created', 'customer.updated', 'customer.updated']);
    const rows = await audit(project.id);
    expect(rows.filter((a) => a.action === 'customer.updated').map((a) => a.changes)).toEqual([
      { name: ['Grace', null] },
      { email: ['grace@example.com', 'grace.hopper@example.com'] },
    ]);
  });

  it('lists newest first, by exact email in any case or by prefix of email or name, a page at a time', async () => {
    const project = await makeProject(t, key);
    const ada = await create(project.id, { email: 'ada@example.com', name: 'Ada Lovelace' });
    const alan = await create(project.id, { email: 'alan@example.org', name: 'Turing' });
    const odd = await create(project.id, { email: 'a_b%c@example.com', name: 'Odd' });
    const other = await makeProject(t, key);
    await create(other.id, { email: 'ada@example.com' });

    expect((await list(project.id)).data.map((c) => c.id)).toEqual([odd.id, alan.id, ada.id]);
    expect((await list(project.id, '?email=ADA@Example.com')).data.map((c) => c.id)).toEqual([ada.id]);
    expect((await list(project.id, '?email=ada@example')).data).toEqual([]);
    expect((await list(project.id, '?q=AL')).data.map((c) => c.id)).toEqual([alan.id]);
    expect((await list(project.id, '?q=tur')).data.map((c) => c.id)).toEqual([alan.id]);
    expect((await list(project.id, '?q=a')).data.map((c) => c.id)).toEqual([odd.id, alan.id, ada.id]);
    // LIKE's wildcards are the characters themselves.
    expect((await list(project.id, '?q=a_')).data.map((c) => c.id)).toEqual([odd.id]);
    expect((await list(project.id, `?q=${encodeURIComponent('%')}`)).data).toEqual([]);
    expect((await list(project.id, '?q=lovelace')).data).toEqual([]);
    expect((await list(project.id, '?q=%20')).data).toHaveLength(3);

    const first = await list(project.id, '?per_page=2');
    expect(first.data.map((c) => c.id)).toEqual([odd.id, alan.id]);
    expect(first.data[0]).toEqual(odd);
    const second = await list(project.id, `?per_page=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second).toEqual({ data: [ada], next_cursor: null });

    const perPage = await api().get(`${base(project.id)}?per_page=51`);
    expect(expectError(perPage, 422, ['per_page']).errors.per_page).toEqual([
      'The per page field must be between 1 and 50.',
    ]);
    const cursor = await api().get(`${base(project.id)}?cursor=nope`);
    expect(expectError(cursor, 422, ['cursor']).errors.cursor).toEqual(['The cursor is invalid.']);
    // A cursor of another project's list is not one of this list.
    const wrongList = await api().get(`${base(other.id)}?cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(expectError(wrongList, 422, ['cursor']).errors.cursor).toEqual(['The cursor is invalid.']);
    const long = await api().get(`${base(project.id)}?q=${'q'.repeat(256)}`);
    expect(expectError(long, 422, ['q']).errors.q).toEqual([
      'The q field must not be greater than 255 characters.',
    ]);
  });

  it('shows one customer with their providers’ ids, newest 50 licenses and newest 50 subscriptions', async () => {
    const project = await makeProject(t, key);
    const customer = await create(project.id, { email: 'buyer@example.com' });
    const someoneElse = await create(project.id, { email: 'else@example.com' });
    await t.dataSource.getRepository(CustomerExternalIdEntity).insert([
      { customer_id: customer.id, project_id: project.id, provider: 'stripe', external_id: 'cus_A1' },
      { customer_id: customer.id, project_id: project.id, provider: 'paddle', external_id: 'ctm_B2' },
    ]);
    const licenses: Json[] = [];
    for (let i = 0; i < 51; i++) licenses.push(await makeLicense(t, key, project.id));
    for (const license of licenses) await nameLicense(license.id, customer.id);
    const elsewhere = await makeLicense(t, key, project.id);
    await nameLicense(elsewhere.id, someoneElse.id);

    const connector = await makeConnector(t, key, project.id, 'stripe');
    const repo = t.dataSource.getRepository(SubscriptionEntity);
    for (let i = 0; i < 52; i++)
      await repo.insert({
        project_id: project.id,
        connector_id: connector.id,
        provider: 'stripe',
        kind: 'subscription',
        reference: `sub_${i}`,
        status: 'active',
        customer_id: i === 51 ? someoneElse.id : customer.id,
        product_ids: ['price_1'],
      });

    const got = expectSuccess(await api().get(`${base(project.id)}/${customer.id}`));
    expect(got.external_ids).toEqual([
      { provider: 'stripe', id: 'cus_A1' },
      { provider: 'paddle', id: 'ctm_B2' },
    ]);
    expect(got.licenses).toHaveLength(50);
    expect(got.licenses.map((l: Json) => l.id)).toEqual(
      licenses
        .slice(1)
        .map((l) => l.id)
        .reverse(),
    );
    // As the license API answers them.
    const single = expectSuccess(await api().get(`/project/${project.id}/licenses/${licenses[50].id}`));
    expect(got.licenses[0]).toEqual(single);
    expect(got.subscriptions).toHaveLength(50);
    expect(got.subscriptions.map((s: Json) => s.reference)).toEqual(
      Array.from({ length: 50 }, (_, i) => `sub_${50 - i}`),
    );
    expect(got.subscriptions[0]).toMatchObject({
      customer_id: customer.id,
      status: 'active',
      product_ids: ['price_1'],
    });
    // The list shows the providers' ids too.
    expect((await list(project.id, '?email=buyer@example.com')).data[0].external_ids).toEqual(
      got.external_ids,
    );
  });

  it('refuses to delete a customer that licenses name (409), then deletes, keeping their subscriptions', async () => {
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const customer = await create(project.id, { email: 'leaving@example.com', name: 'Leaving' });
    const [one, two] = [await makeLicense(t, key, project.id), await makeLicense(t, key, project.id)];
    await nameLicense(one.id, customer.id);
    await nameLicense(two.id, customer.id);
    const connector = await makeConnector(t, key, project.id, 'paddle');
    const repo = t.dataSource.getRepository(SubscriptionEntity);
    await repo.insert({
      project_id: project.id,
      connector_id: connector.id,
      provider: 'paddle',
      kind: 'subscription',
      reference: 'sub_01h',
      status: 'canceled',
      customer_id: customer.id,
    });
    await t.dataSource.getRepository(CustomerExternalIdEntity).insert({
      customer_id: customer.id,
      project_id: project.id,
      provider: 'paddle',
      external_id: 'ctm_01h',
    });

    const refused = await api().delete(`${base(project.id)}/${customer.id}`);
    expect(expectError(refused, 409).message).toBe(
      'This customer has 2 licenses: delete them or give them another customer first.',
    );
    await nameLicense(two.id, null);
    expect(expectError(await api().delete(`${base(project.id)}/${customer.id}`), 409).message).toBe(
      'This customer has 1 license: delete it or give it another customer first.',
    );
    expectSuccess(await api().delete(`/project/${project.id}/licenses/${one.id}`));
    expect(expectSuccess(await api().delete(`${base(project.id)}/${customer.id}`))).toBeNull();

    expect(expectError(await api().get(`${base(project.id)}/${customer.id}`), 404).message).toBe(
      'Customer not found.',
    );
    expect(await repo.findOneByOrFail({ reference: 'sub_01h' })).toMatchObject({ customer_id: null });
    expect(
      await t.dataSource.getRepository(CustomerExternalIdEntity).countBy({ customer_id: customer.id }),
    ).toBe(0);
    const events = await deliveries(project.id);
    expect(events.filter((e) => e.type.startsWith('customer.')).map((e) => e.type)).toEqual([
      'customer.created',
      'customer.deleted',
    ]);
    expect(events.find((e) => e.type === 'customer.deleted')?.data).toMatchObject({
      id: customer.id,
      email: 'leaving@example.com',
      external_ids: [{ provider: 'paddle', id: 'ctm_01h' }],
    });
    const rows = await audit(project.id);
    expect(rows[0]).toMatchObject({
      action: 'customer.deleted',
      resource_id: customer.id,
      changes: { email: ['leaving@example.com', null], name: ['Leaving', null] },
    });
    expectError(await api().delete(`${base(project.id)}/${customer.id}`), 404);
  });

  it('applies the access rules of licenses: 404 before 403, scoped and read-only keys, locked projects', async () => {
    const project = await makeProject(t, key);
    const other = await makeProject(t, key);
    const customer = await create(project.id, { email: 'rules@example.com' });
    const path = `${base(project.id)}/${customer.id}`;

    // 404 across projects (the same owner's too), for ids that are not ids, before any 403.
    expect(expectError(await api().get(`${base(other.id)}/${customer.id}`), 404).message).toBe(
      'Customer not found.',
    );
    expectError(await api().get(`${base(project.id)}/abc`), 404);
    expectError(await api().get(`${base(project.id)}/0`), 404);
    const stranger = await makeApiKey(t.app, await makeUser(t.app));
    expectError(await api(stranger).get(path), 403);
    expectError(await api(stranger).get(`${base(project.id)}/999999`), 404);
    expectError(await api(stranger).get(`/project/999999/customers/${customer.id}`), 404);
    expectError(await api(stranger).post(base(project.id), { email: 'x@example.com' }), 403);
    expectError(await api(stranger).patch(path, { name: 'x' }), 403);
    expectError(await api(stranger).delete(path), 403);

    const scoped = await makeApiKey(t.app, owner, { project_id: other.id });
    expect(expectError(await api(scoped).get(path), 403).message).toBe(
      'This API key is scoped to another project.',
    );
    expectSuccess(await api(scoped).post(base(other.id), { email: 'scoped@example.com' }), 201);

    const readOnly = await makeApiKey(t.app, owner, { read_only: true });
    expectSuccess(await api(readOnly).get(path));
    expectSuccess(await api(readOnly).get(base(project.id)));
    expect(
      expectError(await api(readOnly).post(base(project.id), { email: 'x@example.com' }), 403).message,
    ).toBe(READ_ONLY);
    expect(expectError(await api(readOnly).patch(path, { name: 'x' }), 403).message).toBe(READ_ONLY);
    expect(expectError(await api(readOnly).delete(path), 403).message).toBe(READ_ONLY);

    expectSuccess(await api().post(`/project/${project.id}/lock`, {}));
    expect(expectError(await api().post(base(project.id), { email: 'x@example.com' }), 403).message).toBe(
      'Project is locked.',
    );
    expectError(await api().patch(path, { name: 'x' }), 403);
    expectError(await api().delete(path), 403);
    expectSuccess(await api().get(path));
    const put = await api().put(path, { email: 'x@example.com' });
    expect(expectError(put, 405).message).toBeTruthy();
  });

  it('lets support edit customers but not create or delete them, and viewers only read', async () => {
    const project = await makeProject(t, key);
    const customer = await create(project.id, { email: 'roles@example.com' });
    const accountId = (
      await t.dataSource.getRepository(AccountEntity).findOneByOrFail({ holder_user_id: owner.id })
    ).id;
    async function member(role: Role) {
      const email = `${role}-${uniqueToken()}@example.test`;
      await t.app
        .get(AuthService)
        .createUser({ email, password: PASSWORD, joins: { account_id: accountId, role, project_ids: null } });
      const res = await t.http().post('/api/v1/auth/login').send({ email, password: PASSWORD });
      const data = expectSuccess(res);
      const cookie = (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
      return { Cookie: cookie, 'X-CSRF-Token': data.csrf_token as string };
    }
    const as = (headers: Record<string, string>) => {
      const wrap = <R extends { set(name: string, value: string): R }>(req: R) => {
        for (const [name, value] of Object.entries(headers)) req.set(name, value);
        return req;
      };
      return {
        get: (p: string) => wrap(t.http().get(`/api/v1${p}`)),
        post: (p: string, body: Json) => wrap(t.http().post(`/api/v1${p}`)).send(body),
        patch: (p: string, body: Json) => wrap(t.http().patch(`/api/v1${p}`)).send(body),
        delete: (p: string) => wrap(t.http().delete(`/api/v1${p}`)),
      };
    };
    const path = `${base(project.id)}/${customer.id}`;
    const support = as(await member('support'));
    expectSuccess(await support.get(path));
    expect(expectSuccess(await support.patch(path, { name: 'Fixed by support' }))).toMatchObject({
      name: 'Fixed by support',
    });
    expect(expectError(await support.post(base(project.id), { email: 'x@example.com' }), 403).message).toBe(
      'This action needs the developer role or higher; your role is support.',
    );
    expectError(await support.delete(path), 403);
    const viewer = as(await member('viewer'));
    expectSuccess(await viewer.get(base(project.id)));
    expect(expectError(await viewer.patch(path, { name: 'x' }), 403).message).toBe(
      'This action needs the support role or higher; your role is viewer.',
    );
    const developer = as(await member('developer'));
    expectSuccess(await developer.delete(path));
  });
});
