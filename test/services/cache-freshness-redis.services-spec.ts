import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { makeDomain, makeLicense, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { api, BASE_ENV, dropRedisKeys, freshnessSuite, ids, owner, prime, read, settle, TIMESTAMP } from '../utils/freshness.js';
import { TEST_REDIS_URL as REDIS_URL } from '../utils/processes.js';
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
