import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ProjectGenerations } from '../../src/common/cache/generations.js';
import { RedisService } from '../../src/common/cache/redis.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { DbProxy } from '../utils/db-proxy.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import {
  api,
  BASE_ENV,
  dropRedisKeys,
  freshnessSuite,
  ids,
  owner,
  prime,
  read,
  settle,
  TIMESTAMP,
} from '../utils/freshness.js';
import { TEST_REDIS_URL as REDIS_URL, waitFor } from '../utils/processes.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const redisPrefix = `lgtest:${uniqueToken()}:`;
freshnessSuite('read-after-write freshness with Redis', () => ({ REDIS_URL, REDIS_KEY_PREFIX: redisPrefix }));

describe('two instances sharing the database and Redis', () => {
  const prefix = `lgtest:${uniqueToken()}:`;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const env = { ...BASE_ENV, REDIS_URL, REDIS_KEY_PREFIX: prefix };
    a = await createTestApp(env);
    b = await createTestApp(env, { databaseUrl: a.config.env.DATABASE_URL });
  });
  afterAll(async () => {
    await dropRedisKeys(a, prefix);
    await b?.close();
    await a?.close();
  });

  it('both instances run on the same database', async () => {
    expect(b.config.env.DATABASE_URL).toBe(a.config.env.DATABASE_URL);
    const { key, project } = await owner(a);
    expect((await read(b, key, `/project/${project.id}`)).id).toBe(project.id);
  });

  it('a license created on A shows at once in the list primed on B', async () => {
    const { key, project, licenses } = await owner(a);
    const first = await makeLicense(a, key, project.id);
    const [primed] = await prime(b, key, licenses);
    expect(ids(primed)).toEqual([first.id]);
    const created = await makeLicense(a, key, project.id);
    expect(ids(await read(b, key, licenses))).toEqual([created.id, first.id]);
  });

  it('a revoke on B shows at once in the single read primed on A', async () => {
    const { key, project, licenses } = await owner(a);
    const l = await makeLicense(a, key, project.id);
    const [single, list] = await prime(a, key, `${licenses}/${l.id}`, licenses);
    expect(single.revoked_at).toBeNull();
    expect(list.data[0].revoked_at).toBeNull();
    const revoked = expectSuccess(await api(b, key).post(`${licenses}/${l.id}/revoke`));
    expect(revoked.revoked_at).toMatch(TIMESTAMP);
    expect((await read(a, key, `${licenses}/${l.id}`)).revoked_at).toBe(revoked.revoked_at);
    expect((await read(a, key, licenses)).data[0].revoked_at).toBe(revoked.revoked_at);
    await settle();
    expect(expectSuccess(await api(a, key).post(`${licenses}/${l.id}/reactivate`)).revoked_at).toBeNull();
    expect((await read(b, key, `${licenses}/${l.id}`)).revoked_at).toBeNull();
  });

  it('a deleted license disappears on the other instance', async () => {
    const { key, project, licenses } = await owner(a);
    const l = await makeLicense(a, key, project.id);
    await prime(b, key, licenses, `${licenses}/${l.id}`);
    expect(expectSuccess(await api(a, key).delete(`${licenses}/${l.id}`))).toBeNull();
    expect((await read(b, key, licenses)).data).toEqual([]);
    expectError(await api(b, key).get(`${licenses}/${l.id}`), 404);
  });

  it('domain and project writes on one instance show on the other', async () => {
    const { key, project, projectPath, domains } = await owner(a);
    await prime(b, key, domains, projectPath);
    const d = await makeDomain(a, key, project.id);
    expect((await read(b, key, domains)).data).toEqual([d]);
    expectSuccess(await api(a, key).patch(projectPath, { has_paid: true }));
    expect((await read(b, key, projectPath)).has_paid).toBe(true);
    await settle();
    expectSuccess(await api(b, key).patch(`${domains}/${d.id}`, { has_paid: true }));
    expect((await read(a, key, domains)).data[0].has_paid).toBe(true);
  });

  it('the cache is shared: a change behind the API’s back is hidden on both until a write on either', async () => {
    const { key, project, licenses } = await owner(a);
    const l = await makeLicense(a, key, project.id, { title: 'Shared cached title' });
    await prime(a, key, licenses);
    await a.dataSource.getRepository(LicenseEntity).update({ id: l.id }, { title: 'Changed in the DB' });
    // B never read this list itself, yet it is served A's cached copy from Redis.
    expect((await read(b, key, licenses)).data[0].title).toBe('Shared cached title');
    expect((await read(a, key, licenses)).data[0].title).toBe('Shared cached title');
    await makeDomain(b, key, project.id);
    expect((await read(a, key, licenses)).data[0].title).toBe('Changed in the DB');
    expect((await read(b, key, licenses)).data[0].title).toBe('Changed in the DB');
  });
});

/**
 * Pub/sub delivers at most once: an instance that may have missed a message trusts nothing it cached
 * in process (common/cache/generations.ts). Each test changes a license behind the API's back (no
 * message is sent for it), sees the instance still answer from its cache, then breaks the
 * subscription: from then on the instance answers what the database holds.
 */
describe('an instance that may have missed an invalidation', () => {
  const prefix = `lgtest:${uniqueToken()}:`;
  let proxy: DbProxy;
  let t: TestApp;
  let key = '';
  let projectId = 0;
  let domain = '';
  beforeAll(async () => {
    // Redis reached through a TCP proxy, to make it hang the way a stopped server does.
    proxy = await DbProxy.start(REDIS_URL);
    t = await createTestApp({ ...BASE_ENV, REDIS_URL: proxy.urlFor(REDIS_URL), REDIS_KEY_PREFIX: prefix });
    key = (await makeAccount(t.app)).key;
    projectId = (await makeProject(t, key, { has_paid: true })).id;
    domain = (await makeDomain(t, key, projectId, { has_paid: true })).domain;
  });
  afterEach(() => proxy.pass());
  afterAll(async () => {
    await proxy.pass();
    await dropRedisKeys(t, prefix);
    await t.close();
    await proxy.close();
  });

  const check = (uuid: string) =>
    t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', domain);
  /** A license answered from this instance's cache, then revoked in the database without a word. */
  async function cachedThenRevokedBehindItsBack() {
    // Subscribed (again, after the test before): what is loaded now is kept.
    await waitFor(async () => t.app.get(ProjectGenerations).current(projectId) !== null, 5000);
    const l = await makeLicense(t, key, projectId);
    expect((await check(l.uuid)).status).toBe(200);
    await t.dataSource.getRepository(LicenseEntity).update({ id: l.id }, { revoked_at: new Date() });
    expect((await check(l.uuid)).status).toBe(200); // the cache is really used
    return l;
  }

  it('its subscriber connection killed: nothing cached before is served', async () => {
    const l = await cachedThenRevokedBehindItsBack();
    const client = t.app.get(RedisService).client!;
    const list = (await client.call('CLIENT', 'LIST')) as string;
    const subscriber = list.split('\n').find((line) => line.includes(` name=${prefix}generations `));
    expect(subscriber).toBeDefined();
    await client.call('CLIENT', 'KILL', 'ID', /id=(\d+)/.exec(subscriber!)![1]);
    await settle();
    expect(expectError(await check(l.uuid), 403).message).toBe('This license has been revoked.');
  });

  it('Redis hanging with its connections open: after half a second nothing cached is trusted, and a write answers within 2 s', async () => {
    const l = await cachedThenRevokedBehindItsBack();
    proxy.pause();
    await new Promise((resolve) => setTimeout(resolve, 800));
    const started = Date.now();
    expect(expectError(await check(l.uuid), 403).message).toBe('This license has been revoked.');
    expect(Date.now() - started).toBeLessThan(1000);
    const write = Date.now();
    expectSuccess(
      await api(t, key).patch(`/project/${projectId}`, { description: 'Written while Redis hangs' }),
    );
    expect(Date.now() - write).toBeLessThan(2000);
  });
});
