import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeProject,
  makeUser,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { apiAs, expectClientError } from '../utils/api.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
/** The domain fields are limited to exactly these. */
const DOMAIN_KEYS = [
  'created_at',
  'domain',
  'grace_until',
  'has_paid',
  'id',
  'is_active',
  'is_primary',
  'project_id',
  'updated_at',
].sort();

function expectDomainShape(d: Record<string, unknown>) {
  expect(Object.keys(d).sort()).toEqual(DOMAIN_KEYS);
  expect(typeof d.id).toBe('number');
  expect(typeof d.project_id).toBe('number');
  expect(typeof d.domain).toBe('string');
  for (const flag of ['has_paid', 'is_active', 'is_primary']) expect(typeof d[flag]).toBe('boolean');
  expect(d.created_at).toMatch(TIMESTAMP);
  expect(d.updated_at).toMatch(TIMESTAMP);
}

/** Every bad input is a 4xx in the envelope, never a 500. */
const ids = (page: { data: Array<{ id: number }> }) => page.data.map((d) => d.id);

describe('project domains', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  const api = (key?: string) => apiAs(t, key);

  /** A fresh owner with a global key and one project. */
  async function setup() {
    const user = await makeUser(t.app);
    const key = await makeApiKey(t.app, user);
    const project = await makeProject(t, key);
    return { user, key, project, base: `/project/${project.id}/domains` };
  }

  describe('POST /project/{id}/domains', () => {
    it('creates a domain with defaults and returns exactly the fields of docs/decisions.md#domains', async () => {
      const { key, project, base } = await setup();
      const data = expectSuccess(await api(key).post(base, { domain: 'example.com' }), 201);
      expectDomainShape(data);
      expect(data).toMatchObject({
        project_id: project.id,
        domain: 'example.com',
        has_paid: false,
        is_active: true,
        is_primary: false,
      });
    });

    it('stores the flags sent and ignores unknown fields', async () => {
      const { key, project, base } = await setup();
      const data = expectSuccess(
        await api(key).post(base, {
          domain: 'flags.example.com',
          has_paid: true,
          is_active: false,
          is_primary: true,
          project_id: 999999,
          bogus: 1,
        }),
        201,
      );
      expectDomainShape(data);
      expect(data).toMatchObject({
        project_id: project.id,
        domain: 'flags.example.com',
        has_paid: true,
        is_active: false,
        is_primary: true,
      });
    });

    it('normalises the host name', async () => {
      const { key, base } = await setup();
      const cases: Array<[string, string]> = [
        [' Example.COM. ', 'example.com'],
        ['bücher.de', 'xn--bcher-kva.de'],
        ['Sub.Domain.Example.CO.UK', 'sub.domain.example.co.uk'],
        ['xn--mnchen-3ya.de', 'xn--mnchen-3ya.de'],
        [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
      ];
      for (const [input, stored] of cases) {
        const data = expectSuccess(await api(key).post(base, { domain: input }), 201);
        expect(data.domain).toBe(stored);
        expect(expectSuccess(await api(key).get(`${base}/${data.id}`)).domain).toBe(stored);
      }
    });

    it('refuses anything that is not a bare host name with 422 errors.domain', async () => {
      const { key, base } = await setup();
      const longName = Array.from({ length: 5 }, () => 'a'.repeat(63)).join('.'); // 319 characters
      const bad: unknown[] = [
        'https://example.com',
        'http://example.com/',
        'example.com:8080',
        'example.com/path',
        '192.168.1.1',
        '[::1]',
        '::1',
        '*.example.com',
        '',
        '   ',
        'exa mple.com',
        `${'a'.repeat(64)}.com`,
        longName,
        123,
        null,
        true,
        ['example.com'],
        { domain: 'example.com' },
      ];
      for (const domain of bad) {
        const res = await api(key).post(base, { domain });
        expect({ domain, status: res.status }).toEqual({ domain, status: 422 });
        expectError(res, 422, ['domain']);
      }
      expectError(await api(key).post(base, {}), 422, ['domain']);
      expectError(await api(key).post(base, { has_paid: true }), 422, ['domain']);
      // Nothing was half-written.
      expect(expectSuccess(await api(key).get(base)).data).toHaveLength(0);
    });

    it('refuses non-boolean flags', async () => {
      const { key, base } = await setup();
      expectError(await api(key).post(base, { domain: 'a.example.com', has_paid: 'yes' }), 422, ['has_paid']);
      expectError(await api(key).post(base, { domain: 'a.example.com', is_active: 'true' }), 422, [
        'is_active',
      ]);
      expectError(await api(key).post(base, { domain: 'a.example.com', is_primary: 'no' }), 422, [
        'is_primary',
      ]);
      expect(expectSuccess(await api(key).get(base)).data).toHaveLength(0);
    });

    it('never answers 500 for odd bodies', async () => {
      const { key, base } = await setup();
      const bodies: unknown[] = [
        { domain: '💩.example.com' },
        { domain: 'x'.repeat(10000) },
        { domain: '.' },
        { domain: '..example.com' },
        { domain: 'example..com' },
        { domain: '-example.com' },
        { domain: 'example-.com' },
        { domain: 'exa_mple.com' },
        { domain: 'localhost' },
        { domain: 'example.com', has_paid: null },
        { domain: 'example.com', is_primary: 1 },
        { domain: 'user@example.com' },
        { domain: 'example.com?x=1' },
        { domain: 'example.com#frag' },
        { domain: '\u0000example.com' },
      ];
      for (const body of bodies) {
        const res = await api(key).post(base, body);
        expect({ body, status: res.status < 500 ? 'below 500' : res.status }).toEqual({
          body,
          status: 'below 500',
        });
        if (res.status >= 400) expectClientError(res);
        else expectDomainShape(res.body.data);
      }
    });

    it('is unique within the project, also after normalisation, but not across projects', async () => {
      const { key, project, base } = await setup();
      await makeDomain(t, key, project.id, { domain: 'example.com' });
      for (const domain of ['example.com', 'EXAMPLE.com', ' example.com. ']) {
        expectError(await api(key).post(base, { domain }), 422, ['domain']);
      }
      await makeDomain(t, key, project.id, { domain: 'xn--bcher-kva.de' });
      expectError(await api(key).post(base, { domain: 'BÜCHER.de' }), 422, ['domain']);
      expect(expectSuccess(await api(key).get(base)).data).toHaveLength(2);

      const other = await makeProject(t, key);
      const again = await makeDomain(t, key, other.id, { domain: 'example.com' });
      expect(again).toMatchObject({ project_id: other.id, domain: 'example.com' });
      const stranger = await makeAccount(t.app);
      const theirs = await makeProject(t, stranger.key);
      await makeDomain(t, stranger.key, theirs.id, { domain: 'example.com' });
    });

    it('is_primary on create clears it on the project’s other domains only', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const otherPrimary = await makeDomain(t, key, other.id, { is_primary: true });
      const d1 = await makeDomain(t, key, project.id, { is_primary: true });
      expect(d1.is_primary).toBe(true);
      const d2 = await makeDomain(t, key, project.id, { is_primary: true });
      expect(d2.is_primary).toBe(true);
      expect(expectSuccess(await api(key).get(`${base}/${d1.id}`)).is_primary).toBe(false);
      const list = expectSuccess(await api(key).get(base));
      expect(
        list.data.filter((d: { is_primary: boolean }) => d.is_primary).map((d: { id: number }) => d.id),
      ).toEqual([d2.id]);
      expect(
        expectSuccess(await api(key).get(`/project/${other.id}/domains/${otherPrimary.id}`)).is_primary,
      ).toBe(true);
    });

    it('a failed create does not clear the primary flag', async () => {
      const { user, key, project, base } = await setup();
      const d1 = await makeDomain(t, key, project.id, { is_primary: true });
      expectError(await api(key).post(base, { domain: 'bad domain', is_primary: true }), 422, ['domain']);
      expectError(await api(key).post(base, { domain: d1.domain, is_primary: true }), 422, ['domain']);
      expectError(
        await api(key).post(base, { domain: 'ok.example.com', is_primary: true, has_paid: 'yes' }),
        422,
        ['has_paid'],
      );
      const fresh = await makeApiKey(t.app, user);
      expect(expectSuccess(await api(fresh).get(`${base}/${d1.id}`)).is_primary).toBe(true);
      expect(expectSuccess(await api(fresh).get(base)).data).toEqual([d1]);
    });
  });

  describe('GET /project/{id}/domains', () => {
    it('lists oldest first in the cursor envelope, and shows writes at once', async () => {
      const { key, project, base } = await setup();
      expect(expectSuccess(await api(key).get(base))).toEqual({ data: [], next_cursor: null });
      const a = await makeDomain(t, key, project.id);
      const b = await makeDomain(t, key, project.id);
      const page = expectSuccess(await api(key).get(base));
      expect(Object.keys(page).sort()).toEqual(['data', 'next_cursor']);
      expect(ids(page)).toEqual([a.id, b.id]);
      expect(page.next_cursor).toBeNull();
      for (const d of page.data) expectDomainShape(d);
      expect(page.data[0]).toEqual(a);
    });

    it('only lists the domains of the given project', async () => {
      const { key, project, base } = await setup();
      const mine = await makeDomain(t, key, project.id);
      const other = await makeProject(t, key);
      await makeDomain(t, key, other.id);
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([mine.id]);
    });

    it('walks pages with the cursor: 2, 2, 1, each id once, ascending', async () => {
      const { key, project, base } = await setup();
      const created: number[] = [];
      for (let i = 0; i < 5; i++) created.push((await makeDomain(t, key, project.id)).id);
      const sizes: number[] = [];
      const seen: number[] = [];
      let cursor: string | null = null;
      let guard = 0;
      do {
        const query: Record<string, string | number> = { per_page: 2 };
        if (cursor) query.cursor = cursor;
        const page = expectSuccess(await api(key).get(base).query(query));
        sizes.push(page.data.length);
        seen.push(...ids(page));
        cursor = page.next_cursor;
      } while (cursor && ++guard < 10);
      expect(sizes).toEqual([2, 2, 1]);
      expect(seen).toEqual([...created].sort((x, y) => x - y));
    });

    it('defaults to 50 per page, max 50', async () => {
      const { key, project, base } = await setup();
      for (let i = 0; i < 51; i++) await makeDomain(t, key, project.id, { domain: `host-${i}.example.com` });
      const first = expectSuccess(await api(key).get(base));
      expect(first.data).toHaveLength(50);
      expect(first.next_cursor).toEqual(expect.any(String));
      expect(first.data[0].domain).toBe('host-0.example.com');
      const second = expectSuccess(await api(key).get(base).query({ cursor: first.next_cursor }));
      expect(second.data.map((d: { domain: string }) => d.domain)).toEqual(['host-50.example.com']);
      expect(second.next_cursor).toBeNull();
      expect(expectSuccess(await api(key).get(base).query({ per_page: 50 })).data).toHaveLength(50);
    });

    it('refuses per_page outside 1..50 or not an integer, and a tampered cursor', async () => {
      const { key, project, base } = await setup();
      for (const per_page of ['0', '51', 'x', '-3']) {
        expectError(await api(key).get(base).query({ per_page }), 422, ['per_page']);
      }
      await makeDomain(t, key, project.id);
      await makeDomain(t, key, project.id);
      const page = expectSuccess(await api(key).get(base).query({ per_page: 1 }));
      const cursor: string = page.next_cursor;
      expect(typeof cursor).toBe('string');
      const tampered = (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1);
      expectError(await api(key).get(base).query({ cursor: tampered }), 422, ['cursor']);
      expectError(await api(key).get(base).query({ cursor: 'not-a-cursor' }), 422, ['cursor']);
    });

    it('404 for an unknown or malformed project id', async () => {
      const { key } = await setup();
      for (const id of ['999999', 'abc', '0']) expectError(await api(key).get(`/project/${id}/domains`), 404);
    });
  });

  describe('GET/PATCH/PUT/DELETE /project/{id}/domains/{domain}', () => {
    it('retrieves one domain', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id, { has_paid: true });
      const data = expectSuccess(await api(key).get(`${base}/${d.id}`));
      expectDomainShape(data);
      expect(data).toEqual(d);
    });

    it('404 for a domain of another project and for malformed ids', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const foreign = await makeDomain(t, key, other.id);
      await makeDomain(t, key, project.id);
      expectError(await api(key).get(`${base}/${foreign.id}`), 404);
      expectError(await api(key).patch(`${base}/${foreign.id}`, { has_paid: true }), 404);
      expectError(await api(key).put(`${base}/${foreign.id}`, { domain: 'x.example.com' }), 404);
      expectError(await api(key).delete(`${base}/${foreign.id}`), 404);
      for (const id of ['abc', '0', '-1', '1.5', '999999']) {
        expectError(await api(key).get(`${base}/${id}`), 404);
        expectError(await api(key).patch(`${base}/${id}`, { has_paid: true }), 404);
        expectError(await api(key).delete(`${base}/${id}`), 404);
      }
      // The foreign domain is untouched.
      expect(expectSuccess(await api(key).get(`/project/${other.id}/domains/${foreign.id}`))).toEqual(
        foreign,
      );
    });

    it('PATCH updates only the fields sent, normalising the domain', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id, { domain: 'patch.example.com' });
      expectSuccess(await api(key).get(`${base}/${d.id}`)); // warm any cache
      const paid = expectSuccess(await api(key).patch(`${base}/${d.id}`, { has_paid: true }));
      expectDomainShape(paid);
      expect(paid).toMatchObject({
        id: d.id,
        domain: 'patch.example.com',
        has_paid: true,
        is_active: true,
        is_primary: false,
      });
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`)).has_paid).toBe(true);
      const renamed = expectSuccess(
        await api(key).patch(`${base}/${d.id}`, { domain: ' Renamed.Example.COM. ' }),
      );
      expect(renamed).toMatchObject({ domain: 'renamed.example.com', has_paid: true });
      const inactive = expectSuccess(await api(key).patch(`${base}/${d.id}`, { is_active: false }));
      expect(inactive).toMatchObject({ domain: 'renamed.example.com', has_paid: true, is_active: false });
      // Its own value is not a collision.
      expect(
        expectSuccess(await api(key).patch(`${base}/${d.id}`, { domain: 'renamed.example.com' })).domain,
      ).toBe('renamed.example.com');
    });

    it('PATCH validates like create and a 422 changes nothing', async () => {
      const { user, key, project, base } = await setup();
      const a = await makeDomain(t, key, project.id, { domain: 'a.example.com' });
      const b = await makeDomain(t, key, project.id, { domain: 'b.example.com' });
      expectError(await api(key).patch(`${base}/${b.id}`, { domain: 'A.example.com' }), 422, ['domain']);
      expectError(await api(key).patch(`${base}/${b.id}`, { domain: 'https://c.example.com' }), 422, [
        'domain',
      ]);
      expectError(await api(key).patch(`${base}/${b.id}`, { domain: '' }), 422, ['domain']);
      expectError(await api(key).patch(`${base}/${b.id}`, { domain: null }), 422, ['domain']);
      expectError(
        await api(key).patch(`${base}/${b.id}`, { has_paid: 'yes', domain: 'c.example.com' }),
        422,
        ['has_paid'],
      );
      const fresh = await makeApiKey(t.app, user);
      expect(expectSuccess(await api(fresh).get(`${base}/${b.id}`))).toEqual(b);
      expect(expectSuccess(await api(fresh).get(`${base}/${a.id}`))).toEqual(a);
    });

    it('PATCH is_primary clears it on the other domains', async () => {
      const { key, project, base } = await setup();
      const d1 = await makeDomain(t, key, project.id, { is_primary: true });
      const d2 = await makeDomain(t, key, project.id);
      const d3 = await makeDomain(t, key, project.id);
      expect(expectSuccess(await api(key).patch(`${base}/${d2.id}`, { is_primary: true })).is_primary).toBe(
        true,
      );
      const list = expectSuccess(await api(key).get(base));
      const flags = Object.fromEntries(
        list.data.map((d: { id: number; is_primary: boolean }) => [d.id, d.is_primary]),
      );
      expect(flags).toEqual({ [d1.id]: false, [d2.id]: true, [d3.id]: false });
      // Un-setting leaves the project without a primary; nothing else changes.
      expect(expectSuccess(await api(key).patch(`${base}/${d2.id}`, { is_primary: false })).is_primary).toBe(
        false,
      );
      const after = expectSuccess(await api(key).get(base));
      expect(after.data.every((d: { is_primary: boolean }) => !d.is_primary)).toBe(true);
    });

    it('PUT replaces: domain required, omitted flags return to defaults', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id, {
        domain: 'put.example.com',
        has_paid: true,
        is_active: false,
        is_primary: true,
      });
      expectError(await api(key).put(`${base}/${d.id}`, {}), 422, ['domain']);
      expectError(await api(key).put(`${base}/${d.id}`, { has_paid: true }), 422, ['domain']);
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`))).toEqual(d);
      const replaced = expectSuccess(await api(key).put(`${base}/${d.id}`, { domain: 'put.example.com' }));
      expectDomainShape(replaced);
      expect(replaced).toMatchObject({
        id: d.id,
        project_id: project.id,
        domain: 'put.example.com',
        has_paid: false,
        is_active: true,
        is_primary: false,
      });
      const all = expectSuccess(
        await api(key).put(`${base}/${d.id}`, {
          domain: 'PUT2.example.com',
          has_paid: true,
          is_active: false,
          is_primary: true,
        }),
      );
      expect(all).toMatchObject({
        domain: 'put2.example.com',
        has_paid: true,
        is_active: false,
        is_primary: true,
      });
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`))).toEqual(all);
    });

    it('PUT is_primary clears it on the other domains; PUT refuses a taken domain', async () => {
      const { key, project, base } = await setup();
      const d1 = await makeDomain(t, key, project.id, { is_primary: true });
      const d2 = await makeDomain(t, key, project.id);
      expect(
        expectSuccess(await api(key).put(`${base}/${d2.id}`, { domain: d2.domain, is_primary: true }))
          .is_primary,
      ).toBe(true);
      expect(expectSuccess(await api(key).get(`${base}/${d1.id}`)).is_primary).toBe(false);
      expectError(await api(key).put(`${base}/${d1.id}`, { domain: d2.domain.toUpperCase() }), 422, [
        'domain',
      ]);
      expect(expectSuccess(await api(key).get(`${base}/${d1.id}`)).domain).toBe(d1.domain);
    });

    it('DELETE removes the domain: 200 with data null, then 404', async () => {
      const { key, project, base } = await setup();
      const keep = await makeDomain(t, key, project.id);
      const d = await makeDomain(t, key, project.id, { domain: 'gone.example.com' });
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([keep.id, d.id]); // warm any cache
      expect(expectSuccess(await api(key).delete(`${base}/${d.id}`))).toBeNull();
      expectError(await api(key).get(`${base}/${d.id}`), 404);
      expectError(await api(key).patch(`${base}/${d.id}`, { has_paid: true }), 404);
      expectError(await api(key).delete(`${base}/${d.id}`), 404);
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([keep.id]);
      // The name is free again.
      const again = await makeDomain(t, key, project.id, { domain: 'gone.example.com' });
      expect(again.id).not.toBe(d.id);
    });

    // Enable when licenses land: needs POST /project/{id}/licenses.
    it('refuses to delete a domain that licenses are pinned to, naming the count', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      expectSuccess(
        await api(key).post(`/project/${project.id}/licenses`, {
          title: `pinned-${uniqueToken()}`,
          domain_id: d.id,
        }),
        201,
      );
      const body = expectError(await api(key).delete(`${base}/${d.id}`), 422, ['domain']);
      expect(body.errors.domain.join(' ')).toContain('1');
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`))).toEqual(d);
    });
  });

  describe('access', () => {
    it('401 without a key and 403 with an unknown key on every domain route', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      for (const who of [undefined, 'lg_not-a-real-key']) {
        const status = who === undefined ? 401 : 403;
        expectError(await api(who).get(base), status);
        expectError(await api(who).post(base, { domain: 'x.example.com' }), status);
        expectError(await api(who).get(`${base}/${d.id}`), status);
        expectError(await api(who).patch(`${base}/${d.id}`, { has_paid: true }), status);
        expectError(await api(who).put(`${base}/${d.id}`, { domain: 'x.example.com' }), status);
        expectError(await api(who).delete(`${base}/${d.id}`), status);
      }
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`))).toEqual(d);
    });

    it('403 for another owner’s global key on every domain route', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      const stranger = await makeAccount(t.app);
      await makeProject(t, stranger.key);
      const s = api(stranger.key);
      expectError(await s.get(base), 403);
      expectError(await s.post(base, { domain: 'intruder.example.com' }), 403);
      expectError(await s.get(`${base}/${d.id}`), 403);
      expectError(await s.patch(`${base}/${d.id}`, { has_paid: true }), 403);
      expectError(await s.put(`${base}/${d.id}`, { domain: 'intruder.example.com' }), 403);
      expectError(await s.delete(`${base}/${d.id}`), 403);
      const list = expectSuccess(await api(key).get(base));
      expect(list.data).toEqual([d]);
    });

    it('a scoped key works on its own project and gets 403 on another', async () => {
      const { user, key, project, base } = await setup();
      const other = await makeProject(t, key);
      const otherDomain = await makeDomain(t, key, other.id);
      const scoped = await makeApiKey(t.app, user, { project_id: project.id });
      const s = api(scoped);
      const created = expectSuccess(await s.post(base, { domain: 'scoped.example.com' }), 201);
      expect(created.project_id).toBe(project.id);
      expect(ids(expectSuccess(await s.get(base)))).toEqual([created.id]);
      expect(expectSuccess(await s.patch(`${base}/${created.id}`, { has_paid: true })).has_paid).toBe(true);
      expect(
        expectSuccess(await s.put(`${base}/${created.id}`, { domain: 'scoped.example.com' })).has_paid,
      ).toBe(false);

      const otherBase = `/project/${other.id}/domains`;
      expectError(await s.get(otherBase), 403);
      expectError(await s.post(otherBase, { domain: 'nope.example.com' }), 403);
      expectError(await s.get(`${otherBase}/${otherDomain.id}`), 403);
      expectError(await s.patch(`${otherBase}/${otherDomain.id}`, { has_paid: true }), 403);
      expectError(await s.put(`${otherBase}/${otherDomain.id}`, { domain: 'nope.example.com' }), 403);
      expectError(await s.delete(`${otherBase}/${otherDomain.id}`), 403);

      expect(expectSuccess(await s.delete(`${base}/${created.id}`))).toBeNull();
      expect(expectSuccess(await api(key).get(`${otherBase}/${otherDomain.id}`))).toEqual(otherDomain);
    });

    it('404 on every domain route of a deleted project', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      expect(expectSuccess(await api(key).delete(`/project/${project.id}`))).toBeNull();
      expectError(await api(key).get(base), 404);
      expectError(await api(key).post(base, { domain: 'after.example.com' }), 404);
      expectError(await api(key).get(`${base}/${d.id}`), 404);
      expectError(await api(key).patch(`${base}/${d.id}`, { has_paid: true }), 404);
      expectError(await api(key).put(`${base}/${d.id}`, { domain: 'after.example.com' }), 404);
      expectError(await api(key).delete(`${base}/${d.id}`), 404);
    });

    it('reads work on a locked project, writes are 403 until unlocked', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      expectSuccess(await api(key).post(`/project/${project.id}/lock`, { reason: 'audit' }));
      expect(expectSuccess(await api(key).get(base)).data).toEqual([d]);
      expect(expectSuccess(await api(key).get(`${base}/${d.id}`))).toEqual(d);
      expectError(await api(key).post(base, { domain: 'locked.example.com' }), 403);
      expectError(await api(key).patch(`${base}/${d.id}`, { is_primary: true }), 403);
      expectError(await api(key).put(`${base}/${d.id}`, { domain: d.domain }), 403);
      expectError(await api(key).delete(`${base}/${d.id}`), 403);
      expectSuccess(await api(key).post(`/project/${project.id}/unlock`));
      expect(expectSuccess(await api(key).patch(`${base}/${d.id}`, { is_primary: true })).is_primary).toBe(
        true,
      );
    });
  });
});
