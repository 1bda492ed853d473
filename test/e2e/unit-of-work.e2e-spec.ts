import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UserEntity } from '../../src/auth/user.entity.js';
import { lockedRow, UnitOfWork } from '../../src/database/unit-of-work.js';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { makeAccount, makeDomain, makeLicense, makeProject, makeUser } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TEST_DB, TestApp } from '../utils/test-app.js';

describe('units of work on the real database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('two units that lock the same rows in opposite order both complete: the deadlock victim runs again', async () => {
    const unit = t.app.get(UnitOfWork);
    const [a, b] = [await makeUser(t.app), await makeUser(t.app)];
    let attempts = 0;
    let arrived = 0;
    // Each unit holds its first row until the other has taken its own (or 300 ms pass: on SQLite a
    // unit excludes every other statement, so the second only starts once the first has ended).
    const bothHold = async () => {
      arrived++;
      for (let waited = 0; arrived < 2 && waited < 300; waited += 5)
        await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const crossing = (first: number, second: number, name: string) =>
      unit.run(async (manager) => {
        attempts++;
        await lockedRow(manager, UserEntity, first);
        await bothHold();
        await lockedRow(manager, UserEntity, second);
        await manager.update(UserEntity, { id: first }, { name: `${name} ${attempts}` });
        return name;
      });
    await expect(Promise.all([crossing(a.id, b.id, 'one'), crossing(b.id, a.id, 'two')])).resolves.toEqual([
      'one',
      'two',
    ]);
    // MariaDB rolled one of them back as the deadlock's victim, and it ran again.
    expect(attempts).toBe(TEST_DB === 'mysql' ? 3 : 2);
  });

  // Timestamps the server fills in (created_at, updated_at, an activation's first_seen_at: DEFAULT
  // CURRENT_TIMESTAMP) are read back as UTC, so they must be written as UTC: on a server whose time
  // zone is not (time_zone = SYSTEM on a host in Europe/Berlin, say) they were off by its offset.
  (TEST_DB === 'mysql' ? it : it.skip)(
    "MySQL/MariaDB: every pooled connection works in UTC, whatever the server's time zone",
    async () => {
      const dataSource = t.app.get(DataSource);
      const runners = Array.from({ length: 5 }, () => dataSource.createQueryRunner());
      try {
        const zones = await Promise.all(
          runners.map(async (runner) => (await runner.query('SELECT @@session.time_zone AS tz'))[0].tz),
        );
        expect(zones).toEqual(Array(5).fill('+00:00'));
        // What DEFAULT CURRENT_TIMESTAMP writes is UTC.
        const [row] = await runners[0].query(
          'SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), CURRENT_TIMESTAMP) AS drift',
        );
        expect(Number(row.drift)).toBe(0);
      } finally {
        await Promise.all(runners.map((runner) => runner.release()));
      }
    },
  );
});

describe('SQLite: another process holding the write lock', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  // better-sqlite3 waits for a lock synchronously, and the whole service with it.
  (TEST_DB === 'sqlite' ? it : it.skip)(
    'answers 503 "busy" with Retry-After within about a second, and goes through once the lock is released',
    async () => {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { has_paid: true });
      await makeDomain(t, key, project.id, { domain: 'shop.example.com', has_paid: true });
      const license = await makeLicense(t, key, project.id, { max_usage_per_day: 100 });
      const check = () =>
        t
          .http()
          .post('/api/v1/project/has-paid')
          .set('X-LICENSE-KEY', license.uuid)
          .set('X-Service-Domain', 'shop.example.com');
      const create = () =>
        t
          .http()
          .post('/api/v1/project')
          .set('X-API-KEY', key)
          .send({ name: `Project ${Date.now()}` });
      expectSuccess(await check());
      const busy = (res: Response) => {
        expectError(res, 503);
        expect({ message: res.body.message, retryAfter: res.headers['retry-after'] }).toEqual({
          message: 'The database is busy: try again in a moment.',
          retryAfter: '1',
        });
      };

      // Another process (the CLI, `npm run dispatcher`) in the middle of a write.
      const other = await new DataSource(dataSourceOptions(t.config.env.DATABASE_URL)).initialize();
      try {
        await other.query('BEGIN IMMEDIATE');
        // A statement that writes first (the daily usage count) waits for the lock, 1 s at most.
        let started = Date.now();
        busy(await check());
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
        expect(Date.now() - started).toBeLessThan(2500);
        // A unit of work that has read before it writes is refused at once: SQLite does not wait there.
        started = Date.now();
        busy(await create());
        expect(Date.now() - started).toBeLessThan(2500);
        await other.query('ROLLBACK');
      } finally {
        await other.destroy();
      }
      expectSuccess(await check());
      expectSuccess(await create(), 201);
    },
  );
});
