import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { WalCheckpoints } from '../../src/database/wal-checkpoints.js';
import {
  makeAccount,
  makeDomain,
  makeLicense,
  makePlan,
  makeProject,
  uniqueToken,
} from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, createTestDatabase, TEST_DB } from '../utils/test-app.js';

const ENV = { THROTTLE_RUNTIME_LIMIT: '100000', WEBHOOK_DISPATCHER: 'false' };

/** Metered usage written while the service's checkpoints run (docs/architecture.md#units-of-work). */
describe('metered usage across a restart', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => database.drop());

  it('counts every call answered, and all of it is there after the service stopped and started again', async () => {
    const first = await createTestApp(ENV, { databaseUrl: database.url });
    const checkpoints = first.app.get(WalCheckpoints);
    // SQLite files are checkpointed by the thread; MySQL/MariaDB have nothing to checkpoint.
    expect(checkpoints.state).toBe(TEST_DB === 'sqlite' ? 'thread' : 'sqlite');
    const { key } = await makeAccount(first.app);
    const project = await makeProject(first, key, { has_paid: true });
    const domain = `shop-${uniqueToken()}.example.com`;
    await makeDomain(first, key, project.id, { domain, has_paid: true });
    const plan = await makePlan(first, key, project.id, { entitlements: { 'meter.calls': 1_000_000 } });
    const license = await makeLicense(first, key, project.id, { plan_id: plan.id });
    const record = (n: number) =>
      first
        .http()
        .post('/api/v1/license/usage')
        .set('X-LICENSE-KEY', license.uuid as string)
        .set('X-Service-Domain', domain)
        .send({ meter: 'meter.calls', amount: 1, idempotency_key: `k-${n}` });
    // Rounds of 50 concurrent calls: units committed together, a checkpoint asked for every few commits.
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => record(round * 50 + i)));
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    }
    if (TEST_DB === 'sqlite') expect(checkpoints.counts.thread).toBeGreaterThan(0);
    await first.close();
    expect(checkpoints.state).toBe('sqlite'); // the thread ended with the app
    const file = database.url.slice('sqlite:'.length);
    if (TEST_DB === 'sqlite') expect(existsSync(`${file}-wal`)).toBe(false); // all of it in the file

    const second = await createTestApp(ENV, { databaseUrl: database.url });
    try {
      const usage = expectSuccess(
        await apiAs(second, key).get(`/project/${project.id}/licenses/${license.id}/usage`),
      );
      expect(usage.meters['meter.calls'].used).toBe(400);
      const keys = await second.dataSource.query<Array<{ n: number | string }>>(
        'SELECT COUNT(*) AS n FROM meter_idempotency_keys WHERE license_id = ?',
        [license.id],
      );
      expect(Number(keys[0].n)).toBe(400);
    } finally {
      await second.close();
    }
  });
});
