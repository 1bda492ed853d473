import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import type { Response } from 'supertest';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { DbProxy } from '../utils/db-proxy.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { waitFor } from '../utils/processes.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';

const DATABASE_UNAVAILABLE = 'The database is unavailable: try again in a moment.';
const COMMIT_OUTCOME_UNKNOWN =
  'The database stopped answering while this change was being committed: it may or may not have been stored; check before sending it again.';

/**
 * The service on MariaDB reached through a proxy that breaks the way a database breaks: paused (like
 * SIGSTOP: connections open, nothing answers), down (like a kill: connections closed, new ones
 * refused), then passing again (like a restart). docs/operations.md, "When the database is away".
 */
describe('a database that stops answering', () => {
  let db: { url: string; drop: () => Promise<void> };
  let proxy: DbProxy;
  let t: TestApp;
  /** Straight to MariaDB, around the proxy: what is really stored. */
  let direct: mysql.Connection;
  let key = '';
  let projectId = 0;
  /** Every status the service answered in the test, to show that none was a 500. */
  let statuses: number[] = [];
  const expectNo500 = () => expect(statuses.filter((status) => status >= 500 && status !== 503)).toEqual([]);

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await DbProxy.start(db.url);
    t = await createTestApp({}, { databaseUrl: proxy.urlFor(db.url) });
    direct = await mysql.createConnection(db.url);
    key = (await makeAccount(t.app)).key;
    projectId = (
      await makeProject(t, key, { has_paid: true, webhook_url: 'https://hooks.example.invalid/licensegate' })
    ).id;
    await makeDomain(t, key, projectId, { domain: 'shop.example.com', has_paid: true });
  }, 60_000);

  beforeEach(() => {
    statuses = [];
  });
  // A test that failed half-way leaves the database passing for the next one.
  afterEach(() => proxy.pass());

  afterAll(async () => {
    await proxy?.pass();
    await t?.close();
    await proxy?.close();
    await direct?.end();
    await db?.drop();
  });

  /** Sends the request and records its status and how long the answer took. */
  const timed = async (request: PromiseLike<Response>) => {
    const started = Date.now();
    const res = await request;
    statuses.push(res.status);
    return Object.assign(res, { ms: Date.now() - started });
  };
  const api = {
    get: (path: string) => timed(t.http().get(`/api/v1${path}`).set('X-API-KEY', key)),
    post: (path: string, body: object) =>
      timed(t.http().post(`/api/v1${path}`).set('X-API-KEY', key).send(body)),
    hasPaid: (uuid: string) =>
      timed(
        t
          .http()
          .post('/api/v1/project/has-paid')
          .set('X-LICENSE-KEY', uuid)
          .set('X-Service-Domain', 'shop.example.com'),
      ),
  };
  const createLicense = (title = `License ${uniqueToken()}`) =>
    api.post(`/project/${projectId}/licenses`, { title });
  const stored = async (title: string) =>
    (await direct.query<mysql.RowDataPacket[]>('SELECT id FROM licenses WHERE title = ?', [title]))[0].length;
  const usageToday = async (licenseId: number) => {
    const [rows] = await direct.query<mysql.RowDataPacket[]>(
      'SELECT count FROM license_usage WHERE license_id = ? AND day = UTC_DATE()',
      [licenseId],
    );
    return rows.length ? Number(rows[0].count) : 0;
  };

  /** 503, Retry-After, the message, and within 5 s. */
  const expectUnavailable = (res: Response & { ms: number }, message = DATABASE_UNAVAILABLE) => {
    expectError(res, 503);
    expect({ message: res.body.message, retryAfter: res.headers['retry-after'] }).toEqual({
      message,
      retryAfter: '1',
    });
    expect(res.ms).toBeLessThan(5000);
  };

  /**
   * Breaks the database with `breakIt`, checks every kind of call meanwhile, mends it, and checks the
   * service is back by itself with everything it said was stored.
   */
  async function outage(breakIt: () => Promise<void> | void) {
    const before = expectSuccess(await createLicense(), 201);
    const warm = await makeLicense(t, key, projectId);
    const limited = await makeLicense(t, key, projectId, { max_usage_per_day: 1000 });
    const cold = await makeLicense(t, key, projectId);
    expect(expectSuccess(await api.hasPaid(warm.uuid)).has_paid).toBe(true);
    expect(expectSuccess(await api.hasPaid(limited.uuid)).has_paid).toBe(true);
    await waitFor(async () => (await usageToday(warm.id)) === 1, 5000);

    await breakIt();
    const [write, list, one, coldCheck, limitedCheck] = await Promise.all([
      createLicense(),
      api.get(`/project/${projectId}/licenses?per_page=${7 + (Date.now() % 40)}`),
      api.get(`/project/${projectId}/licenses/${before.id}`),
      api.hasPaid(cold.uuid),
      api.hasPaid(limited.uuid),
    ]);
    for (const res of [write, list, one, coldCheck, limitedCheck]) expectUnavailable(res);
    // A license the service already knows needs nothing from the database: it keeps answering.
    const warmChecks = 5;
    for (let i = 0; i < warmChecks; i++) {
      const res = await api.hasPaid(warm.uuid);
      expect({ status: res.status, hasPaid: res.body.data?.has_paid }).toEqual({
        status: 200,
        hasPaid: true,
      });
      expect(res.ms).toBeLessThan(1000);
    }
    const health = await timed(t.http().get('/api/v1/health'));
    expect({ status: health.status, database: health.body.data?.error?.database?.status }).toEqual({
      status: 503,
      database: 'down',
    });
    expect(health.ms).toBeLessThan(5000);

    await proxy.pass();
    const back = Date.now();
    let created: Response | undefined;
    while (!created) {
      const res = await createLicense();
      if (res.status === 201) created = res;
      else expectUnavailable(res);
      expect(Date.now() - back).toBeLessThan(3000);
    }
    expect(await stored(before.title)).toBe(1);
    expectSuccess(await api.get(`/project/${projectId}/licenses/${before.id}`));
    // The calls counted in memory while the database was away are written once it is back.
    await waitFor(async () => (await usageToday(warm.id)) >= 1 + warmChecks, 5000);
    // The webhook dispatcher is polling again: the new license's event got its first attempt.
    await waitFor(async () => {
      const page = expectSuccess(await api.get(`/project/${projectId}/webhook-deliveries?per_page=50`));
      return page.data.some(
        (d: { type: string; attempts: number }) =>
          d.type === 'license.created' &&
          d.attempts > 0 &&
          JSON.stringify(d).includes(created.body.data.uuid),
      );
    }, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await usageToday(warm.id)).toBe(1 + warmChecks);
    expectNo500();
  }

  it('paused (like SIGSTOP): calls that need the database answer 503 within 5 s, a warm has-paid answers, and it comes back by itself', async () => {
    await outage(() => proxy.pause());
  }, 60_000);

  it('down then restarted (like a kill): the same, and no stale connection fails a call afterwards', async () => {
    await outage(() => proxy.down());
    const after = await Promise.all(Array.from({ length: 25 }, () => createLicense()));
    expect(after.map((res) => res.status)).toEqual(Array(25).fill(201));
    expectNo500();
  }, 60_000);

  it('connections the server dropped without a word: reads and writes go through on fresh connections', async () => {
    const cold = await makeLicense(t, key, projectId);
    // Several calls at once, each on a pooled connection of its own.
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => api.get(`/project/${projectId}/licenses?per_page=${30 + i}`)),
    );
    expect(proxy.forget()).toBeGreaterThanOrEqual(4);
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => createLicense()),
      ...Array.from({ length: 4 }, (_, i) => api.get(`/project/${projectId}/licenses?per_page=${40 + i}`)),
      api.hasPaid(cold.uuid),
    ]);
    expect(answers.map((res) => res.status)).toEqual([201, 201, 201, 201, 200, 200, 200, 200, 200]);
  }, 30_000);

  it('a write paused before its COMMIT answers 503 and is not stored', async () => {
    const title = `Paused ${uniqueToken()}`;
    // The server gets the INSERT; its answer, and everything after, is held.
    proxy.pauseAfter(/INSERT INTO `licenses`/);
    const res = await createLicense(title);
    expectUnavailable(res);
    await proxy.pass();
    expectSuccess(await createLicense(), 201);
    expect(await stored(title)).toBe(0);
    expectNo500();
  }, 30_000);

  it('a write whose COMMIT went unanswered says that it may or may not be stored, and is not sent twice', async () => {
    const title = `Unanswered ${uniqueToken()}`;
    // The server gets the COMMIT and commits; its answer is held.
    proxy.pauseAfter(/COMMIT/, new RegExp(title));
    const res = await createLicense(title);
    expectUnavailable(res, COMMIT_OUTCOME_UNKNOWN);
    await proxy.pass();
    expectSuccess(await createLicense(), 201);
    expect(await stored(title)).toBe(1);
    expectNo500();
  }, 30_000);

  it('a usage flush whose COMMIT went unanswered is counted once', async () => {
    const warm = await makeLicense(t, key, projectId);
    for (let i = 0; i < 3; i++) expectSuccess(await api.hasPaid(warm.uuid));
    // The next flush's COMMIT reaches the server, its answer does not.
    proxy.pauseAfter(/COMMIT/, /license_usage/);
    await waitFor(async () => proxy.isPaused, 10_000);
    for (let i = 0; i < 4; i++) expectSuccess(await api.hasPaid(warm.uuid));
    expect(await usageToday(warm.id)).toBe(3);
    // Long enough for the flush to give up on its COMMIT, and for the next ones to fail.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    await proxy.pass();
    await waitFor(async () => (await usageToday(warm.id)) >= 7, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await usageToday(warm.id)).toBe(7);
    expectNo500();
  }, 60_000);
});
