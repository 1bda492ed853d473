import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import { AnalyticsCounts } from '../../src/analytics/analytics-counts.service.js';
import { makeAccount, makeDomain, makeLicense, makeProject } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { DbProxy } from '../utils/db-proxy.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, createTestDatabase, TEST_DB, TestApp } from '../utils/test-app.js';

/**
 * The analytics' counts on MariaDB (docs/analytics.md): instances that count the same rows and flush
 * at the same moment add up exactly, and a flush the database did not take, or whose COMMIT went
 * unanswered, loses nothing and counts nothing twice.
 *
 * TEST_DB=mysql TEST_DATABASE_URL=mysql://root@127.0.0.1:3306/<db> TEST_REDIS_URL=redis://127.0.0.1:6379/<n>
 */
const describeMysql = TEST_DB === 'mysql' ? describe : describe.skip;

describeMysql('analytics across instances on one MariaDB', () => {
  let db: { url: string; drop: () => Promise<void> };
  let proxy: DbProxy;
  /** a and b on the database, c through the proxy: three instances of one deployment. */
  let a: TestApp;
  let b: TestApp;
  let c: TestApp;
  let direct: mysql.Connection;
  let key = '';
  let projectId = 0;
  let domain = '';
  let uuid = '';

  const env = {
    THROTTLE_RUNTIME_LIMIT: '100000',
    WEBHOOK_DISPATCHER: 'false',
    ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
  };
  const hasPaid = (t: TestApp, headers: Record<string, string>) => {
    const req = t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    return req;
  };
  /** What runtime_answers holds for the project, by outcome (straight from MariaDB). */
  const stored = async () => {
    const [rows] = await direct.query<mysql.RowDataPacket[]>(
      'SELECT outcome, SUM(count) AS n FROM runtime_answers WHERE project_id = ? GROUP BY outcome',
      [projectId],
    );
    const totals: Record<string, number> = { paid: 0, unpaid: 0, refused: 0 };
    for (const row of rows) totals[row.outcome as string] = Number(row.n);
    return totals;
  };
  const expected = { paid: 0, unpaid: 0, refused: 0 };

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await DbProxy.start(db.url);
    a = await createTestApp(env, { databaseUrl: db.url });
    b = await createTestApp(env, { databaseUrl: db.url });
    c = await createTestApp(env, { databaseUrl: proxy.urlFor(db.url) });
    direct = await mysql.createConnection(db.url);
    key = (await makeAccount(a.app)).key;
    projectId = (await makeProject(a, key, { has_paid: false })).id;
    domain = (await makeDomain(a, key, projectId, { has_paid: true })).domain;
    uuid = (await makeLicense(a, key, projectId)).uuid;
  }, 60_000);

  afterAll(async () => {
    await proxy?.pass();
    for (const t of [c, b, a]) await t?.close();
    await proxy?.close();
    await direct?.end();
    await db?.drop();
  });

  it('two instances counting the same rows and flushing at once add up exactly', async () => {
    for (let round = 0; round < 3; round++) {
      const calls = [];
      for (let i = 0; i < 40; i++) {
        const t = i % 2 === 0 ? a : b;
        if (i % 5 === 0) calls.push(hasPaid(t, { 'X-Service-Domain': 'elsewhere.example.org' }));
        else if (i % 5 === 1) calls.push(hasPaid(t, {}).query({ action: 'check_project' }));
        else calls.push(hasPaid(t, { 'X-Service-Domain': domain, 'CF-IPCountry': 'NL' }));
      }
      for (const res of await Promise.all(calls)) {
        if (res.status === 403) expected.refused++;
        else expected[expectSuccess(res).has_paid ? 'paid' : 'unpaid']++;
      }
      // Both instances upsert the same rows in the same moment.
      await Promise.all([a.app.get(AnalyticsCounts).flush(), b.app.get(AnalyticsCounts).flush()]);
      expect(await stored()).toEqual(expected);
    }
    expect(expected).toEqual({ paid: 72, unpaid: 24, refused: 24 });
    const read = expectSuccess(await apiAs(b, key).get(`/project/${projectId}/analytics`));
    expect(read.totals).toEqual(expected);
    const countries = expectSuccess(
      await apiAs(a, key).get(`/project/${projectId}/analytics`).query({ group_by: 'country' }),
    );
    expect(countries.series.find((s: { key: string }) => s.key === 'NL').points.at(-1).count).toBe(72);
  }, 60_000);

  it('a flush while the database is down keeps its counts and writes them once it is back', async () => {
    const counts = c.app.get(AnalyticsCounts);
    expectSuccess(await hasPaid(c, { 'X-Service-Domain': domain })); // warm: answered from memory from now on
    await counts.flush();
    expected.paid++;
    expect(await stored()).toEqual(expected);

    await proxy.down();
    for (let i = 0; i < 5; i++) expectSuccess(await hasPaid(c, { 'X-Service-Domain': domain }));
    expectError(await hasPaid(c, { 'X-Service-Domain': 'elsewhere.example.org' }), 403);
    await counts.flush(); // fails: the database is away
    expect(await stored()).toEqual(expected);

    await proxy.pass();
    await counts.flush();
    expected.paid += 5;
    expected.refused += 1;
    expect(await stored()).toEqual(expected);
  }, 60_000);

  it('a flush whose COMMIT went unanswered is counted once', async () => {
    const counts = c.app.get(AnalyticsCounts);
    for (let i = 0; i < 3; i++) expectSuccess(await hasPaid(c, { 'X-Service-Domain': domain }));
    // The flush's COMMIT reaches the server, which commits; its answer never comes back.
    proxy.pauseAfter(/COMMIT/, /runtime_answers/);
    await counts.flush(); // gives up on the COMMIT after the driver's deadline: in doubt
    expected.paid += 3;
    expect(proxy.isPaused).toBe(true);
    expect(await stored()).toEqual(expected);
    // Counted meanwhile: these go with the next flush, after the one in doubt is settled.
    expectSuccess(await hasPaid(c, { 'X-Service-Domain': domain }));
    await proxy.pass();
    await counts.flush();
    expected.paid += 1;
    expect(await stored()).toEqual(expected);
    await counts.flush();
    expect(await stored()).toEqual(expected);
  }, 60_000);
});
