import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const ENV = { THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000', WEBHOOK_DISPATCHER: 'false' };

/**
 * Two instances of the service on one MariaDB, without Redis: a meter's quota holds across them, as
 * the database alone decides (one conditional UPDATE per call).
 */
describe('metered usage across two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;
  let uuid: string;
  let licenseId: number;

  beforeAll(async () => {
    a = await createTestApp(ENV);
    b = await createTestApp(ENV, { databaseUrl: a.config.env.DATABASE_URL });
    const { key } = await makeAccount(a.app);
    const project = await makeProject(a, key, { has_paid: true });
    await makeDomain(a, key, project.id, { domain: `shop-${uniqueToken()}.example.com`, has_paid: true });
    const plan = expectSuccess(
      await a
        .http()
        .post(`/api/v1/project/${project.id}/plans`)
        .set('X-API-KEY', key)
        .send({ code: 'pro', name: 'Pro', entitlements: { 'meter.ai_credits': 20 } }),
      201,
    );
    const license = await makeLicense(a, key, project.id, { plan_id: plan.id });
    uuid = license.uuid;
    licenseId = license.id;
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const record = (t: TestApp, key: string, amount = 1) =>
    t
      .http()
      .post('/api/v1/license/usage')
      .set('X-LICENSE-KEY', uuid)
      .send({ meter: 'meter.ai_credits', amount, idempotency_key: key });

  it('counts exactly 20 of 50 concurrent calls split between the instances', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => record(i % 2 === 0 ? a : b, `c-${i}`)),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    expect(new Set(results.filter((r) => r.status === 200).map((r) => r.body.data.used)).size).toBe(20);
    const rows = await a.dataSource.query<Array<{ used: number }>>(
      'SELECT used FROM meter_usage WHERE license_id = ?',
      [licenseId],
    );
    expect(Number(rows[0].used)).toBe(20);
  });

  it('answers a key sent to both instances at once with one count', async () => {
    await a.dataSource.query('UPDATE meter_usage SET used = 0 WHERE license_id = ?', [licenseId]);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => record(i % 2 === 0 ? a : b, 'same-key', 3)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => JSON.stringify(r.body.data))).size).toBe(1);
    const rows = await a.dataSource.query<Array<{ used: number }>>(
      'SELECT used FROM meter_usage WHERE license_id = ?',
      [licenseId],
    );
    expect(Number(rows[0].used)).toBe(3);
  });
});
