import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Meters } from '../../src/plans/meters.js';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { outboxData } from '../utils/outbox.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_DISPATCHER: 'false',
  THROTTLE_API_LIMIT: '100000',
  THROTTLE_RUNTIME_LIMIT: '100000',
};
/** Mid-month, so that the month's reset is ahead. */
const NOW = '2026-11-14T10:00:00Z';

describe('plans, entitlements and metered usage', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.parse(NOW));
  beforeAll(async () => {
    t = await createTestApp(ENV, { clock });
  });
  afterAll(async () => t.close());

  /** An owner with a paid project sending webhooks (kept in the outbox), one paid domain. */
  async function setup(project: Record<string, unknown> = {}) {
    const { key, user } = await makeAccount(t.app);
    const p = await makeProject(t, key, {
      has_paid: true,
      webhook_url: 'http://127.0.0.1:9/hook',
      webhook_secret: `whsec_${uniqueToken()}${uniqueToken()}`,
      ...project,
    });
    const domain = (
      await makeDomain(t, key, p.id, { domain: `shop-${uniqueToken()}.example.com`, has_paid: true })
    ).domain as string;
    return { key, user, project: p, domain, api: apiAs(t, key) };
  }
  const events = (projectId: number, type: string) => outboxData(t, projectId, type);
  const audits = async (projectId: number, action: string) =>
    Number(
      (
        await t.dataSource.query<Array<{ n: number | string }>>(
          'SELECT COUNT(*) AS n FROM audit_events WHERE project_id = ? AND action = ?',
          [projectId, action],
        )
      )[0].n,
    );
  const hasPaid = (uuid: string, domain: string, query = '') =>
    t
      .http()
      .post(`/api/v1/project/has-paid${query}`)
      .set('X-LICENSE-KEY', uuid)
      .set('X-Service-Domain', domain)
      .set('Accept', 'application/json');
  const record = (uuid: string, body: Record<string, unknown>, domain?: string) => {
    const req = t
      .http()
      .post('/api/v1/license/usage')
      .set('X-LICENSE-KEY', uuid)
      .set('Accept', 'application/json');
    if (domain) req.set('X-Service-Domain', domain);
    return req.send(body);
  };
  let keys = 0;
  const idem = () => `k-${++keys}-${uniqueToken()}`;

  describe('plans', () => {
    it('creates, lists, reads, updates and deletes a plan, audited and announced', async () => {
      const { api, project } = await setup();
      const created = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'pro',
          name: 'Pro',
          entitlements: { sso: true, seats: 5, support: 'email', 'meter.ai_credits': 1000 },
          max_domains: 3,
        }),
        201,
      );
      expect(created).toMatchObject({
        project_id: project.id,
        code: 'pro',
        name: 'Pro',
        entitlements: { sso: true, seats: 5, support: 'email', 'meter.ai_credits': 1000 },
        max_domains: 3,
        max_subdomains_per_domain: null,
        max_usage_per_day: null,
      });
      const basic = expectSuccess(
        await api.post(`/project/${project.id}/plans`, { code: 'basic', name: 'Basic' }),
        201,
      );
      expect(basic.entitlements).toEqual({});
      const list = await api.get(`/project/${project.id}/plans`);
      expect(expectSuccess(list).data.map((p: { code: string }) => p.code)).toEqual(['pro', 'basic']);
      expect(expectSuccess(await api.get(`/project/${project.id}/plans/${created.id}`)).code).toBe('pro');
      const updated = expectSuccess(
        await api.patch(`/project/${project.id}/plans/${created.id}`, {
          name: 'Pro+',
          entitlements: { sso: false },
        }),
      );
      expect(updated).toMatchObject({
        code: 'pro',
        name: 'Pro+',
        entitlements: { sso: false },
        max_domains: 3,
      });
      expectSuccess(await api.delete(`/project/${project.id}/plans/${basic.id}`));
      expectError(await api.get(`/project/${project.id}/plans/${basic.id}`), 404);
      expect(await events(project.id, 'plan.created')).toHaveLength(2);
      expect((await events(project.id, 'plan.updated'))[0]).toMatchObject({ id: created.id, name: 'Pro+' });
      expect((await events(project.id, 'plan.deleted'))[0]).toMatchObject({ id: basic.id, code: 'basic' });
      expect(await audits(project.id, 'plan.created')).toBe(2);
      expect(await audits(project.id, 'plan.updated')).toBe(1);
      expect(await audits(project.id, 'plan.deleted')).toBe(1);
    });

    it('refuses a taken code with 409, and a malformed code or entitlements with 422 naming the key', async () => {
      const { api, project } = await setup();
      const pro = expectSuccess(
        await api.post(`/project/${project.id}/plans`, { code: 'pro', name: 'Pro' }),
        201,
      );
      const taken = expectError(
        await api.post(`/project/${project.id}/plans`, { code: 'pro', name: 'Again' }),
        409,
      );
      expect(taken.message).toBe('The code "pro" is already taken by another plan of this project.');
      const other = expectSuccess(
        await api.post(`/project/${project.id}/plans`, { code: 'team', name: 'T' }),
        201,
      );
      expectError(await api.patch(`/project/${project.id}/plans/${other.id}`, { code: 'pro' }), 409);
      // Another project may use the same code.
      const second = await setup();
      expectSuccess(
        await second.api.post(`/project/${second.project.id}/plans`, { code: 'pro', name: 'Pro' }),
        201,
      );

      const bad = async (body: Record<string, unknown>, field: string, message: string) => {
        const res = await api.post(`/project/${project.id}/plans`, {
          code: `c${++keys}`,
          name: 'X',
          ...body,
        });
        expect(expectError(res, 422, [field]).errors[field]).toEqual([message]);
      };
      await bad(
        { code: 'Pro' },
        'code',
        'The code must be 1 to 64 lowercase letters, digits, "_" or "-", starting with a letter or digit.',
      );
      await bad(
        { code: '-pro' },
        'code',
        'The code must be 1 to 64 lowercase letters, digits, "_" or "-", starting with a letter or digit.',
      );
      await bad(
        { code: 'a'.repeat(65) },
        'code',
        'The code must be 1 to 64 lowercase letters, digits, "_" or "-", starting with a letter or digit.',
      );
      await bad({ entitlements: [] }, 'entitlements', 'The entitlements field must be a JSON object.');
      await bad(
        { entitlements: { 'Big Key': true } },
        'entitlements',
        'The entitlements key "Big Key" must be 1 to 64 lowercase letters, digits, "_", "." or "-", starting with a letter or digit.',
      );
      const valueMessage = (key: string) =>
        `The entitlements value of "${key}" must be true or false, an integer from 0 to 2147483647, or a string of at most 200 characters.`;
      await bad({ entitlements: { seats: -1 } }, 'entitlements', valueMessage('seats'));
      await bad({ entitlements: { seats: 1.5 } }, 'entitlements', valueMessage('seats'));
      await bad({ entitlements: { seats: 2147483648 } }, 'entitlements', valueMessage('seats'));
      await bad({ entitlements: { note: 'x'.repeat(201) } }, 'entitlements', valueMessage('note'));
      await bad({ entitlements: { nested: { a: 1 } } }, 'entitlements', valueMessage('nested'));
      await bad({ entitlements: { nothing: null } }, 'entitlements', valueMessage('nothing'));
      const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, true]));
      await bad(
        { entitlements: many },
        'entitlements',
        'The entitlements field must not have more than 100 keys.',
      );
      await bad({ max_domains: -1 }, 'max_domains', 'The max domains field must be at least 0.');
      expectError(await api.patch(`/project/${project.id}/plans/${pro.id}`, { name: null }), 422, ['name']);
      // The limits: 100 keys, 200 characters and 2147483647 are taken.
      const edge = {
        ...Object.fromEntries(Array.from({ length: 98 }, (_, i) => [`k${i}`, i % 2 === 0])),
        note: 'é'.repeat(200),
        top: 2147483647,
      };
      expectSuccess(
        await api.post(`/project/${project.id}/plans`, { code: 'edge', name: 'E', entitlements: edge }),
        201,
      );
    });

    it('refuses to delete a plan licenses are on (409), and allows it once none is', async () => {
      const { api, key, project } = await setup();
      const plan = expectSuccess(
        await api.post(`/project/${project.id}/plans`, { code: 'pro', name: 'Pro' }),
        201,
      );
      const license = await makeLicense(t, key, project.id, { plan_id: plan.id });
      const refused = expectError(await api.delete(`/project/${project.id}/plans/${plan.id}`), 409);
      expect(refused.message).toBe('The plan cannot be deleted: 1 license is on it.');
      expectSuccess(await api.patch(`/project/${project.id}/licenses/${license.id}`, { plan_id: null }));
      expectSuccess(await api.delete(`/project/${project.id}/plans/${plan.id}`));
    });

    it('answers 404 for a plan of another project, and refuses writes to a locked project', async () => {
      const a = await setup();
      const b = await setup();
      const plan = expectSuccess(
        await a.api.post(`/project/${a.project.id}/plans`, { code: 'pro', name: 'P' }),
        201,
      );
      expectError(await b.api.get(`/project/${b.project.id}/plans/${plan.id}`), 404);
      expectError(await b.api.get(`/project/${a.project.id}/plans/${plan.id}`), 403);
      expectSuccess(await a.api.post(`/project/${a.project.id}/lock`, { reason: 'audit' }));
      expectError(await a.api.post(`/project/${a.project.id}/plans`, { code: 'x', name: 'X' }), 403);
      expectSuccess(await a.api.get(`/project/${a.project.id}/plans`));
    });
  });

  describe('licenses on plans', () => {
    it('takes plan_id and entitlements, answers plan and effective_entitlements, announces a plan change', async () => {
      const { api, key, project, user } = await setup();
      const basic = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'basic',
          name: 'Basic',
          entitlements: { sso: false, seats: 1 },
        }),
        201,
      );
      const pro = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'pro',
          name: 'Pro',
          entitlements: { sso: true, seats: 5 },
        }),
        201,
      );
      // license_defaults fill no limit of a license that gets a plan.
      await t.dataSource
        .getRepository('UserEntity')
        .update({ id: user.id }, { license_defaults: { max_domains: 9, max_usage_per_day: 7 } });
      const license = await makeLicense(t, key, project.id, {
        plan_id: basic.id,
        entitlements: { seats: 2 },
      });
      expect(license).toMatchObject({
        plan_id: basic.id,
        plan: { id: basic.id, code: 'basic', name: 'Basic' },
        entitlements: { seats: 2 },
        effective_entitlements: { sso: false, seats: 2 },
        max_domains: null,
        max_usage_per_day: null,
      });
      const plain = await makeLicense(t, key, project.id);
      expect(plain).toMatchObject({
        plan_id: null,
        plan: null,
        entitlements: null,
        effective_entitlements: {},
        max_domains: 9,
      });

      const got = expectSuccess(await api.get(`/project/${project.id}/licenses/${license.id}`));
      expect(got.plan).toEqual({ id: basic.id, code: 'basic', name: 'Basic' });
      const listed = expectSuccess(await api.get(`/project/${project.id}/licenses`));
      expect(listed.data.find((l: { id: number }) => l.id === license.id).effective_entitlements).toEqual({
        sso: false,
        seats: 2,
      });

      const moved = expectSuccess(
        await api.patch(`/project/${project.id}/licenses/${license.id}`, { plan_id: pro.id }),
      );
      expect(moved).toMatchObject({ plan: { code: 'pro' }, effective_entitlements: { sso: true, seats: 2 } });
      expectSuccess(await api.patch(`/project/${project.id}/licenses/${license.id}`, { title: 'renamed' }));
      expectSuccess(await api.patch(`/project/${project.id}/licenses/${license.id}`, { plan_id: null }));
      expect(await events(project.id, 'license.plan_changed')).toEqual([
        { license_id: license.id, project_id: project.id, from: 'basic', to: 'pro' },
        { license_id: license.id, project_id: project.id, from: 'pro', to: null },
      ]);
      expect(await audits(project.id, 'license.plan_changed')).toBe(2);
      const updated = await events(project.id, 'license.updated');
      expect(updated[0]).toMatchObject({ plan_id: pro.id, plan: { code: 'pro' } });
    });

    it('refuses a plan of another project and bad overrides with 422', async () => {
      const a = await setup();
      const b = await setup();
      const foreign = expectSuccess(
        await b.api.post(`/project/${b.project.id}/plans`, { code: 'pro', name: 'P' }),
        201,
      );
      const res = await a.api.post(`/project/${a.project.id}/licenses`, { title: 'x', plan_id: foreign.id });
      expect(expectError(res, 422, ['plan_id']).errors.plan_id).toEqual(['The selected plan id is invalid.']);
      expectError(
        await a.api.post(`/project/${a.project.id}/licenses`, { title: 'y', plan_id: 999999 }),
        422,
        ['plan_id'],
      );
      expectError(
        await a.api.post(`/project/${a.project.id}/licenses`, { title: 'z', plan_id: 'pro' }),
        422,
        ['plan_id'],
      );
      const over = await a.api.post(`/project/${a.project.id}/licenses`, {
        title: 'w',
        entitlements: { seats: 'x'.repeat(201) },
      });
      expect(expectError(over, 422, ['entitlements']).errors.entitlements[0]).toContain('"seats"');
    });
  });

  describe('the runtime answer', () => {
    it('carries plan and entitlements for a license on a plan: effective when paid, {} when unpaid', async () => {
      const { api, key, project, domain } = await setup();
      const plan = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'pro',
          name: 'Pro',
          entitlements: { sso: true, seats: 5 },
        }),
        201,
      );
      const license = await makeLicense(t, key, project.id, { plan_id: plan.id, entitlements: { seats: 7 } });
      expect(expectSuccess(await hasPaid(license.uuid, domain))).toEqual({
        has_paid: true,
        is_test_license: false,
        plan: 'pro',
        entitlements: { sso: true, seats: 7 },
      });
      // A plan edit reaches the next call.
      expectSuccess(
        await api.patch(`/project/${project.id}/plans/${plan.id}`, { entitlements: { sso: false } }),
      );
      expect(expectSuccess(await hasPaid(license.uuid, domain)).entitlements).toEqual({
        sso: false,
        seats: 7,
      });
      // Unpaid: neither the plan nor entitlements.
      const unpaid = (await makeDomain(t, key, project.id, { domain: `u-${uniqueToken()}.example.com` }))
        .domain as string;
      expect(expectSuccess(await hasPaid(license.uuid, unpaid))).toEqual({
        has_paid: false,
        redirect_url: null,
        is_test_license: false,
        plan: null,
        entitlements: {},
      });
      // Refusals carry neither.
      const refused = expectError(await hasPaid(license.uuid, 'nowhere.example.org'), 403);
      expect(refused.data).toEqual({ redirect_url: null });
      // Overrides without a plan: plan null.
      const own = await makeLicense(t, key, project.id, { entitlements: { beta: true } });
      expect(expectSuccess(await hasPaid(own.uuid, domain))).toMatchObject({
        plan: null,
        entitlements: { beta: true },
      });
      // A license with neither answers as before.
      const plain = await makeLicense(t, key, project.id);
      expect(expectSuccess(await hasPaid(plain.uuid, domain))).toEqual({
        has_paid: true,
        is_test_license: false,
      });
    });

    it('puts plan and entitlements in the offline token payload', async () => {
      const { api, key, project, domain } = await setup({ offline_grace_hours: 24 });
      const plan = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'pro',
          name: 'Pro',
          entitlements: { seats: 5 },
        }),
        201,
      );
      const license = await makeLicense(t, key, project.id, { plan_id: plan.id });
      const data = expectSuccess(await hasPaid(license.uuid, domain, '?include=token'));
      const payload = JSON.parse(
        Buffer.from((data.token as string).split('.')[1], 'base64url').toString('utf8'),
      );
      expect(payload).toMatchObject({ license_id: license.id, plan: 'pro', entitlements: { seats: 5 } });
    });

    it("enforces the plan's limits where the license leaves its own null", async () => {
      const { api, key, project, domain } = await setup();
      const plan = expectSuccess(
        await api.post(`/project/${project.id}/plans`, {
          code: 'tiny',
          name: 'Tiny',
          max_usage_per_day: 2,
          max_domains: 1,
        }),
        201,
      );
      const license = await makeLicense(t, key, project.id, { plan_id: plan.id });
      expectSuccess(await hasPaid(license.uuid, domain));
      expectSuccess(await hasPaid(license.uuid, domain));
      const limited = expectError(await hasPaid(license.uuid, domain), 429);
      expect(limited.message).toBe(
        'This license has reached its daily limit of 2 checks; it resets at midnight UTC.',
      );
      const other = (
        await makeDomain(t, key, project.id, { domain: `o-${uniqueToken()}.example.com`, has_paid: true })
      ).domain as string;
      const own = await makeLicense(t, key, project.id, { plan_id: plan.id, max_usage_per_day: 100 });
      expectSuccess(await hasPaid(own.uuid, domain));
      expect(expectError(await hasPaid(own.uuid, other), 403).message).toBe(
        'This license has reached its limit of 1 domain.',
      );
    });
  });

  describe('metered usage', () => {
    async function metered(limit = 20, project: Record<string, unknown> = {}) {
      const s = await setup(project);
      const plan = expectSuccess(
        await s.api.post(`/project/${s.project.id}/plans`, {
          code: 'pro',
          name: 'Pro',
          entitlements: { 'meter.ai_credits': limit, seats: 3 },
        }),
        201,
      );
      const license = await makeLicense(t, s.key, s.project.id, { plan_id: plan.id });
      return { ...s, plan, license, uuid: license.uuid as string };
    }

    it('counts usage and answers the month', async () => {
      const { uuid, api, project, license } = await metered(20);
      const first = expectSuccess(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }));
      expect(first).toEqual({
        meter: 'meter.ai_credits',
        used: 1,
        limit: 20,
        remaining: 19,
        resets_at: '2026-12-01T00:00:00Z',
      });
      const second = expectSuccess(
        await record(uuid, { meter: 'meter.ai_credits', amount: 5, idempotency_key: idem() }),
      );
      expect(second).toMatchObject({ used: 6, remaining: 14 });
      const usage = expectSuccess(await api.get(`/project/${project.id}/licenses/${license.id}/usage`));
      expect(usage.meters).toEqual({
        'meter.ai_credits': { used: 6, limit: 20, resets_at: '2026-12-01T00:00:00Z' },
      });
    });

    it('refuses a meter the license lacks (404), an unpaid license (403), a bad body (422)', async () => {
      const { uuid, key, project } = await metered(20, { has_paid: false });
      const unpaid = expectError(
        await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }),
        403,
      );
      expect(unpaid.message).toBe('This license is not paid.');
      const paid = await metered(20);
      const missing = expectError(
        await record(paid.uuid, { meter: 'meter.other', idempotency_key: idem() }),
        404,
      );
      expect(missing.message).toBe('This license has no meter "meter.other".');
      // An integer entitlement not named meter.* is no meter.
      expectError(await record(paid.uuid, { meter: 'seats', idempotency_key: idem() }), 404);
      const check = async (body: Record<string, unknown>, field: string, message: string) =>
        expect(expectError(await record(paid.uuid, body, undefined), 422, [field]).errors[field]).toEqual([
          message,
        ]);
      await check({ meter: 'meter.ai_credits' }, 'idempotency_key', 'The idempotency key field is required.');
      await check(
        { meter: 'meter.ai_credits', idempotency_key: 'x'.repeat(101) },
        'idempotency_key',
        'The idempotency key field must not be greater than 100 characters.',
      );
      await check(
        { meter: 'meter.ai_credits', idempotency_key: idem(), amount: 0 },
        'amount',
        'The amount field must be at least 1.',
      );
      await check(
        { meter: 'meter.ai_credits', idempotency_key: idem(), amount: 1_000_001 },
        'amount',
        'The amount field must not be greater than 1000000.',
      );
      await check({ idempotency_key: idem() }, 'meter', 'The meter field is required.');
      expectError(await record('not-a-key', { meter: 'meter.ai_credits', idempotency_key: idem() }), 403);
      const revoked = await makeLicense(t, key, project.id);
      expectSuccess(await apiAs(t, key).post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
      expect(
        expectError(await record(revoked.uuid, { meter: 'meter.x', idempotency_key: idem() }), 403).message,
      ).toBe('This license has been revoked.');
    });

    it('counts for a license that carries its own payment by its own flag, from any site', async () => {
      // The project is unpaid and the buyer's site is registered nowhere: the license's flag decides.
      const { uuid, license, api, project } = await metered(20, { has_paid: false });
      const buyer = `www.buyer-${uniqueToken()}.example.org`;
      expectSuccess(await api.patch(`/project/${project.id}/licenses/${license.id}`, { billing: 'license' }));
      expect(
        expectError(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }, buyer), 403)
          .message,
      ).toBe('This license is not paid.');
      expectSuccess(await api.patch(`/project/${project.id}/licenses/${license.id}`, { has_paid: true }));
      expect(
        expectSuccess(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }, buyer)),
      ).toMatchObject({ used: 1, remaining: 19 });
    });

    it('answers 429 past the quota with Retry-After to the reset, counting nothing; quota_reached once', async () => {
      const { uuid, project } = await metered(10);
      expectSuccess(await record(uuid, { meter: 'meter.ai_credits', amount: 8, idempotency_key: idem() }));
      const over = await record(uuid, { meter: 'meter.ai_credits', amount: 3, idempotency_key: idem() });
      const body = expectError(over, 429);
      expect(body.message).toBe(
        'This license has used its quota of 10 for meter.ai_credits this month; it resets at 2026-12-01T00:00:00Z.',
      );
      expect(body.data).toEqual({
        meter: 'meter.ai_credits',
        used: 8,
        limit: 10,
        remaining: 2,
        resets_at: '2026-12-01T00:00:00Z',
      });
      const toReset = (Date.parse('2026-12-01T00:00:00Z') - clock.nowMs()) / 1000;
      expect(Number(over.headers['retry-after'])).toBe(toReset);
      expectSuccess(await record(uuid, { meter: 'meter.ai_credits', amount: 2, idempotency_key: idem() }));
      expectError(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }), 429);
      const reached = await events(project.id, 'license.quota_reached');
      expect(reached).toHaveLength(1);
      expect(reached[0]).toMatchObject({
        project_id: project.id,
        meter: 'meter.ai_credits',
        limit: 10,
        month: '2026-11',
      });
      // The clock moved: Retry-After follows it.
      clock.advance(3_600_000);
      try {
        const later = await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() });
        expect(Number(later.headers['retry-after'])).toBe(toReset - 3600);
      } finally {
        clock.set(NOW);
      }
    });

    it('replays an idempotency key: the first answer, nothing counted; another meter or amount is a 422', async () => {
      const { uuid, api, project, plan } = await metered(10);
      const key = idem();
      const first = expectSuccess(
        await record(uuid, { meter: 'meter.ai_credits', amount: 4, idempotency_key: key }),
      );
      expectSuccess(await record(uuid, { meter: 'meter.ai_credits', amount: 1, idempotency_key: idem() }));
      const again = expectSuccess(
        await record(uuid, { meter: 'meter.ai_credits', amount: 4, idempotency_key: key }),
      );
      expect(again).toEqual(first);
      const reused = expectError(
        await record(uuid, { meter: 'meter.ai_credits', amount: 2, idempotency_key: key }),
        422,
        ['idempotency_key'],
      );
      expect(reused.errors.idempotency_key).toEqual([
        'This idempotency key was sent before with another meter or amount.',
      ]);
      expectSuccess(
        await api.patch(`/project/${project.id}/plans/${plan.id}`, {
          entitlements: { 'meter.ai_credits': 10, 'meter.b': 5 },
        }),
      );
      expectError(await record(uuid, { meter: 'meter.b', amount: 4, idempotency_key: key }), 422);
      // A refused attempt keeps no key: the same key goes through once there is room.
      const big = idem();
      expectError(await record(uuid, { meter: 'meter.b', amount: 6, idempotency_key: big }), 429);
      expectSuccess(
        await api.patch(`/project/${project.id}/plans/${plan.id}`, { entitlements: { 'meter.b': 50 } }),
      );
      expect(
        expectSuccess(await record(uuid, { meter: 'meter.b', amount: 6, idempotency_key: big })).used,
      ).toBe(6);
      // Past 35 days a key is free again, and pruned.
      clock.advance(36 * 86_400_000);
      try {
        expect(await t.app.get(Meters).prune()).toBeGreaterThan(0);
        const fresh = expectSuccess(
          await record(uuid, { meter: 'meter.b', amount: 6, idempotency_key: big }),
        );
        expect(fresh.used).toBe(6); // a new month too
      } finally {
        clock.set(NOW);
      }
    });

    it('replays a key once the quota is used up: the first answer, not a 429', async () => {
      const { uuid } = await metered(3);
      const key = idem();
      const first = expectSuccess(
        await record(uuid, { meter: 'meter.ai_credits', amount: 3, idempotency_key: key }),
      );
      expect(first.remaining).toBe(0);
      expect(
        expectSuccess(await record(uuid, { meter: 'meter.ai_credits', amount: 3, idempotency_key: key })),
      ).toEqual(first);
      expectError(await record(uuid, { meter: 'meter.ai_credits', amount: 2, idempotency_key: key }), 422);
      expectError(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }), 429);
    });

    it('starts again at the next UTC month', async () => {
      const { uuid } = await metered(5);
      clock.set('2026-11-30T23:59:59Z');
      try {
        expectSuccess(await record(uuid, { meter: 'meter.ai_credits', amount: 5, idempotency_key: idem() }));
        expectError(await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }), 429);
        clock.set('2026-12-01T00:00:00Z');
        const december = expectSuccess(
          await record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }),
        );
        expect(december).toEqual({
          meter: 'meter.ai_credits',
          used: 1,
          limit: 5,
          remaining: 4,
          resets_at: '2027-01-01T00:00:00Z',
        });
      } finally {
        clock.set(NOW);
      }
    });

    it('counts exactly the quota under 50 concurrent calls against a limit of 20', async () => {
      const { uuid, project, license } = await metered(20);
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          record(uuid, { meter: 'meter.ai_credits', idempotency_key: idem() }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30);
      const used = results.filter((r) => r.status === 200).map((r) => r.body.data.used as number);
      expect(new Set(used).size).toBe(20);
      const rows = await t.dataSource.query<Array<{ used: number | string }>>(
        'SELECT used FROM meter_usage WHERE license_id = ?',
        [license.id],
      );
      expect(Number(rows[0].used)).toBe(20);
      const kept = await t.dataSource.query<Array<{ n: number | string }>>(
        'SELECT COUNT(*) AS n FROM meter_idempotency_keys WHERE license_id = ?',
        [license.id],
      );
      expect(Number(kept[0].n)).toBe(20);
      expect(await events(project.id, 'license.quota_reached')).toHaveLength(1);
    });

    it('replays one key sent 10 times at once: counted once', async () => {
      const { uuid, license } = await metered(20);
      const key = idem();
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          record(uuid, { meter: 'meter.ai_credits', amount: 2, idempotency_key: key }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(new Set(results.map((r) => JSON.stringify(r.body.data))).size).toBe(1);
      const rows = await t.dataSource.query<Array<{ used: number | string }>>(
        'SELECT used FROM meter_usage WHERE license_id = ?',
        [license.id],
      );
      expect(Number(rows[0].used)).toBe(2);
    });
  });
});
