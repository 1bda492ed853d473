import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisService } from '../../src/common/cache/redis.js';
import { DomainEntity } from '../../src/domains/domain.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { ProjectEntity } from '../../src/projects/project.entity.js';
import {
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from './envelope.js';
import { createTestApp, TestApp } from './test-app.js';
import { apiAs } from './api.js';

/**
 * Shared by the freshness suites with and without Redis. The four cached reads (GET /project/{id}, …/licenses, …/licenses/{license}, …/domains) are
 * cached per API key, path and query, and any write to the project makes them stale at once — also
 * across instances sharing Redis.
 */

export const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
export const BASE_ENV = { THROTTLE_API_LIMIT: '100000' };

export const ids = (page: { data: Array<{ id: number }> }) => page.data.map((d) => d.id);
/** Cache writes may finish just after the response; give them a moment so a prime really primes. */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

export const api = apiAs;

/** GET that must succeed; returns `data`. */
export async function read(t: TestApp, key: string, path: string) {
  return expectSuccess(await api(t, key).get(path));
}

/** GETs each path once so a cached copy exists, and returns what was read. */
export async function prime(t: TestApp, key: string, ...paths: string[]) {
  const out = [];
  for (const path of paths) out.push(await read(t, key, path));
  await settle();
  return out;
}

/** Removes every Redis key under `prefix` (test hygiene). */
export async function dropRedisKeys(t: TestApp, prefix: string) {
  const client = t.app.get(RedisService).client;
  if (!client) return;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await client.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

export async function owner(t: TestApp) {
  const user = await makeUser(t.app);
  const key = await makeApiKey(t.app, user);
  const project = await makeProject(t, key);
  return {
    user,
    key,
    project,
    projectPath: `/project/${project.id}`,
    licenses: `/project/${project.id}/licenses`,
    domains: `/project/${project.id}/domains`,
  };
}

/**
 * Changes a license, a domain and the project in the database directly, not through the API: no
 * generation moves, so a read that still answers what it did before was served from the cache.
 */
export async function changeBehindTheApi(t: TestApp, projectId: number, licenseId: number, domainId: number) {
  await t.dataSource
    .getRepository(LicenseEntity)
    .update({ id: licenseId }, { title: 'Changed in the DB', max_domains: 99 });
  await t.dataSource.getRepository(DomainEntity).update({ id: domainId }, { has_paid: true });
  await t.dataSource.getRepository(ProjectEntity).update({ id: projectId }, { name: 'Renamed in the DB' });
}

/** The read-after-write tests, for one app booted with `env()`. */
export function freshnessSuite(label: string, env: () => Record<string, string>) {
  describe(label, () => {
    let t: TestApp;
    let redisPrefix: string | undefined;
    beforeAll(async () => {
      const extra = env();
      redisPrefix = extra.REDIS_KEY_PREFIX;
      t = await createTestApp({ ...BASE_ENV, ...extra });
    });
    afterAll(async () => {
      if (redisPrefix) await dropRedisKeys(t, redisPrefix);
      await t.close();
    });

    it('a created license shows in the list at once (every primed query)', async () => {
      const { key, project, licenses } = await owner(t);
      const first = await makeLicense(t, key, project.id);
      const [list, small] = await prime(t, key, licenses, `${licenses}?per_page=1`);
      expect(ids(list)).toEqual([first.id]);
      expect(ids(small)).toEqual([first.id]);

      const created = await makeLicense(t, key, project.id);
      expect(ids(await read(t, key, licenses))).toEqual([created.id, first.id]);
      const page = await read(t, key, `${licenses}?per_page=1`);
      expect(ids(page)).toEqual([created.id]);
      expect(page.next_cursor).toEqual(expect.any(String));
    });

    it('revoke and reactivate show in the list and in the single read', async () => {
      const { key, project, licenses } = await owner(t);
      const l = await makeLicense(t, key, project.id);
      const [list, single] = await prime(t, key, licenses, `${licenses}/${l.id}`);
      expect(list.data[0].revoked_at).toBeNull();
      expect(single.revoked_at).toBeNull();

      const revoked = expectSuccess(await api(t, key).post(`${licenses}/${l.id}/revoke`));
      expect(revoked.revoked_at).toMatch(TIMESTAMP);
      expect((await read(t, key, licenses)).data[0].revoked_at).toBe(revoked.revoked_at);
      expect((await read(t, key, `${licenses}/${l.id}`)).revoked_at).toBe(revoked.revoked_at);
      await settle();

      expect(expectSuccess(await api(t, key).post(`${licenses}/${l.id}/reactivate`)).revoked_at).toBeNull();
      expect((await read(t, key, licenses)).data[0].revoked_at).toBeNull();
      expect((await read(t, key, `${licenses}/${l.id}`)).revoked_at).toBeNull();
    });

    it('a deleted license leaves the list and its read is 404', async () => {
      const { key, project, licenses } = await owner(t);
      const keep = await makeLicense(t, key, project.id);
      const gone = await makeLicense(t, key, project.id);
      const [list] = await prime(t, key, licenses, `${licenses}/${gone.id}`, `${licenses}/${keep.id}`);
      expect(ids(list)).toEqual([gone.id, keep.id]);

      expect(expectSuccess(await api(t, key).delete(`${licenses}/${gone.id}`))).toBeNull();
      expect(ids(await read(t, key, licenses))).toEqual([keep.id]);
      expectError(await api(t, key).get(`${licenses}/${gone.id}`), 404);
      expect(await read(t, key, `${licenses}/${keep.id}`)).toEqual(keep);
    });

    it('PATCH and PUT of a license show in the list and in the single read', async () => {
      const { key, project, licenses } = await owner(t);
      const l = await makeLicense(t, key, project.id, { title: 'Before', max_domains: 1 });
      await prime(t, key, licenses, `${licenses}/${l.id}`);

      const patched = expectSuccess(
        await api(t, key).patch(`${licenses}/${l.id}`, { title: 'Patched', max_domains: 5 }),
      );
      expect((await read(t, key, licenses)).data).toEqual([patched]);
      expect(await read(t, key, `${licenses}/${l.id}`)).toEqual(patched);
      await settle();

      const replaced = expectSuccess(await api(t, key).put(`${licenses}/${l.id}`, { title: 'Replaced' }));
      expect(replaced.max_domains).toBeNull();
      expect((await read(t, key, licenses)).data).toEqual([replaced]);
      expect(await read(t, key, `${licenses}/${l.id}`)).toEqual(replaced);
    });

    it('domain create, PATCH, PUT and DELETE show in the domains list', async () => {
      const { key, project, domains } = await owner(t);
      const [empty] = await prime(t, key, domains);
      expect(empty.data).toEqual([]);

      const d = await makeDomain(t, key, project.id);
      expect((await read(t, key, domains)).data).toEqual([d]);
      await settle();

      const patched = expectSuccess(await api(t, key).patch(`${domains}/${d.id}`, { has_paid: true }));
      expect(patched.has_paid).toBe(true);
      expect((await read(t, key, domains)).data).toEqual([patched]);
      await settle();

      const replaced = expectSuccess(
        await api(t, key).put(`${domains}/${d.id}`, { domain: `put-${uniqueToken()}.example.com` }),
      );
      expect((await read(t, key, domains)).data).toEqual([replaced]);
      await settle();

      expect(expectSuccess(await api(t, key).delete(`${domains}/${d.id}`))).toBeNull();
      expect((await read(t, key, domains)).data).toEqual([]);
    });

    it('project PATCH, PUT, lock and unlock show in GET /project/{id}', async () => {
      const { key, projectPath } = await owner(t);
      const [before] = await prime(t, key, projectPath);
      expect(before.has_paid).toBe(false);

      expect(expectSuccess(await api(t, key).patch(projectPath, { has_paid: true })).has_paid).toBe(true);
      expect((await read(t, key, projectPath)).has_paid).toBe(true);
      await settle();

      expect(
        expectSuccess(await api(t, key).patch(projectPath, { has_paid: false, name: 'Renamed' })).has_paid,
      ).toBe(false);
      expect(await read(t, key, projectPath)).toMatchObject({ has_paid: false, name: 'Renamed' });
      await settle();

      expectSuccess(await api(t, key).put(projectPath, { name: 'Put', has_paid: true }));
      expect(await read(t, key, projectPath)).toMatchObject({ has_paid: true, name: 'Put' });
      await settle();

      const locked = expectSuccess(await api(t, key).post(`${projectPath}/lock`, {}));
      expect((await read(t, key, projectPath)).locked_at).toBe(locked.locked_at);
      await settle();
      expectSuccess(await api(t, key).post(`${projectPath}/unlock`));
      expect((await read(t, key, projectPath)).locked_at).toBeNull();
    });

    it('a write to the project refreshes all four reads at once', async () => {
      const { key, project, projectPath, licenses, domains } = await owner(t);
      const l = await makeLicense(t, key, project.id);
      await prime(t, key, projectPath, licenses, `${licenses}/${l.id}`, domains);
      // One write (a new domain) — then the license is revoked: every read shows both.
      const d = await makeDomain(t, key, project.id);
      const revoked = expectSuccess(await api(t, key).post(`${licenses}/${l.id}/revoke`));
      expect((await read(t, key, domains)).data).toEqual([d]);
      expect((await read(t, key, licenses)).data).toEqual([revoked]);
      expect(await read(t, key, `${licenses}/${l.id}`)).toEqual(revoked);
      expect((await read(t, key, projectPath)).id).toBe(project.id);
    });

    it('the cache is really used: a change behind the API’s back stays hidden until the next API write', async () => {
      const { user, key, project, projectPath, licenses, domains } = await owner(t);
      const l = await makeLicense(t, key, project.id, { title: 'Cached title', max_domains: 1 });
      const d = await makeDomain(t, key, project.id);
      await prime(t, key, projectPath, licenses, `${licenses}/${l.id}`, domains);

      await changeBehindTheApi(t, project.id, l.id, d.id);

      // The same key is served from the cache…
      expect((await read(t, key, licenses)).data[0]).toMatchObject({ title: 'Cached title', max_domains: 1 });
      expect(await read(t, key, `${licenses}/${l.id}`)).toMatchObject({
        title: 'Cached title',
        max_domains: 1,
      });
      expect((await read(t, key, domains)).data[0].has_paid).toBe(false);
      expect((await read(t, key, projectPath)).name).toBe(project.name);

      // …while a key that never read these goes to the database (the cache is per API key).
      const other = await makeApiKey(t.app, user);
      expect((await read(t, other, licenses)).data[0]).toMatchObject({
        title: 'Changed in the DB',
        max_domains: 99,
      });
      expect((await read(t, other, domains)).data[0].has_paid).toBe(true);
      expect((await read(t, other, projectPath)).name).toBe('Renamed in the DB');

      // Any API write to the project makes every cached read stale.
      await makeDomain(t, key, project.id);
      expect((await read(t, key, licenses)).data[0]).toMatchObject({
        title: 'Changed in the DB',
        max_domains: 99,
      });
      expect(await read(t, key, `${licenses}/${l.id}`)).toMatchObject({
        title: 'Changed in the DB',
        max_domains: 99,
      });
      expect((await read(t, key, domains)).data.find((x: { id: number }) => x.id === d.id).has_paid).toBe(
        true,
      );
      expect((await read(t, key, projectPath)).name).toBe('Renamed in the DB');
    });

    it('a read served from the cache, twice, answers the same bytes as the read that filled it', async () => {
      const { key, project, projectPath, licenses, domains } = await owner(t);
      const l = await makeLicense(t, key, project.id, { title: 'Same bytes', max_domains: 3 });
      const d = await makeDomain(t, key, project.id);
      const paths = [projectPath, licenses, `${licenses}?per_page=1`, `${licenses}/${l.id}`, domains];
      const filled = [];
      for (const path of paths) {
        const res = await api(t, key).get(path);
        expect(res.status).toBe(200);
        filled.push(res);
      }
      await settle();
      // Changed behind the API's back: only an answer from the cache still says what was filled.
      await changeBehindTheApi(t, project.id, l.id, d.id);
      for (const [i, path] of paths.entries()) {
        for (const _serving of [1, 2]) {
          const served = await api(t, key).get(path);
          expect(served.status).toBe(200);
          expect(served.headers['content-type']).toBe(filled[i].headers['content-type']);
          expect(served.text).toBe(filled[i].text);
        }
      }
      // A write makes them stale: the database's state is read again.
      await makeDomain(t, key, project.id);
      expect((await read(t, key, `${licenses}/${l.id}`)).title).toBe('Changed in the DB');
    });

    it('a write through a different key of the same project also refreshes this key’s reads', async () => {
      const { user, key, project, licenses } = await owner(t);
      const scoped = await makeApiKey(t.app, user, { project_id: project.id });
      await prime(t, key, licenses);
      await prime(t, scoped, licenses);
      const created = expectSuccess(await api(t, scoped).post(licenses, { title: 'Via scoped key' }), 201);
      expect(ids(await read(t, key, licenses))).toEqual([created.id]);
      await settle();
      await api(t, key).post(`${licenses}/${created.id}/revoke`);
      expect((await read(t, scoped, licenses)).data[0].revoked_at).toMatch(TIMESTAMP);
    });

    if (env().REDIS_URL) {
      it('keeps the cache and the generations in Redis under REDIS_KEY_PREFIX', async () => {
        const { key, project, licenses } = await owner(t);
        await makeLicense(t, key, project.id);
        await prime(t, key, licenses);
        const client = t.app.get(RedisService).client;
        expect(client).not.toBeNull();
        const keys = await client!.keys(`${redisPrefix}*`);
        expect(keys.some((k) => k.includes(`read:${project.id}:`))).toBe(true);
        expect(keys.some((k) => k.endsWith(`gen:${project.id}`))).toBe(true);
      });
    }
  });
}
