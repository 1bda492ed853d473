import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPublicKey } from 'node:crypto';
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
/** The create response carries exactly these (no locked_at). */
const CREATE_KEYS = [
  'created_at',
  'default_redirect_url',
  'description',
  'grace_until',
  'has_paid',
  'id',
  'is_active',
  'logo_url',
  'meta',
  'name',
  'offline_grace_hours',
  'slug',
  'updated_at',
  'webhook_enabled',
  'webhook_events',
  'webhook_url',
].sort();
/** Retrieval (and every other project-returning call) adds locked_at. */
const PROJECT_KEYS = [...CREATE_KEYS, 'locked_at'].sort();
const HIDDEN = [
  'user_id',
  'license_key_id',
  'deleted_at',
  'webhook_secret',
  'lock_reason',
  'signing_public_key',
  'signing_private_key',
];

function expectProjectShape(p: Record<string, unknown>, keys = PROJECT_KEYS) {
  expect(Object.keys(p).sort()).toEqual(keys);
  for (const hidden of HIDDEN) expect(p).not.toHaveProperty(hidden);
  expect(typeof p.id).toBe('number');
  expect(p.created_at).toMatch(TIMESTAMP);
  expect(p.updated_at).toMatch(TIMESTAMP);
}

/** Every bad input is a 4xx in the envelope, never a 500. */
describe('projects', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  const api = (key?: string) => apiAs(t, key);

  describe('POST /project', () => {
    it("creates a project with every field and returns exactly the create answer's fields", async () => {
      const { key } = await makeAccount(t.app);
      const slug = `full-${uniqueToken()}`;
      const secret = `whsec_${uniqueToken()}topsecret`;
      const res = await api(key).post('/project', {
        name: 'Full Project',
        slug,
        description: 'A description',
        default_redirect_url: 'https://example.com/pay',
        webhook_url: 'https://example.com/hooks/licensegate',
        webhook_secret: secret,
        logo_url: 'http://example.com/logo.png',
        meta: { plan: 'pro', seats: 3, nested: { a: [1, 2] } },
        has_paid: true,
        is_active: false,
      });
      const data = expectSuccess(res, 201);
      expectProjectShape(data, CREATE_KEYS);
      expect(data).toMatchObject({
        name: 'Full Project',
        slug,
        description: 'A description',
        default_redirect_url: 'https://example.com/pay',
        webhook_url: 'https://example.com/hooks/licensegate',
        logo_url: 'http://example.com/logo.png',
        meta: { plan: 'pro', seats: 3, nested: { a: [1, 2] } },
        has_paid: true,
        is_active: false,
      });
      expect(JSON.stringify(res.body)).not.toContain(secret);
    });

    it('applies defaults for a minimal body', async () => {
      const { key } = await makeAccount(t.app);
      const data = expectSuccess(await api(key).post('/project', { name: 'Minimal' }), 201);
      expectProjectShape(data, CREATE_KEYS);
      expect(data).toMatchObject({
        name: 'Minimal',
        description: null,
        default_redirect_url: null,
        webhook_url: null,
        logo_url: null,
        meta: {},
        has_paid: false,
        is_active: true,
        webhook_events: ['*'],
        webhook_enabled: true,
      });
      expect(data.slug).toMatch(/^[A-Za-z0-9_-]+$/);
    });

    it('decodes meta sent as a JSON string', async () => {
      const { key } = await makeAccount(t.app);
      const data = expectSuccess(
        await api(key).post('/project', { name: 'Meta string', meta: '{"a":1,"b":{"c":"d"}}' }),
        201,
      );
      expect(data.meta).toEqual({ a: 1, b: { c: 'd' } });
    });

    it('refuses meta that is not a JSON object', async () => {
      const { key } = await makeAccount(t.app);
      for (const meta of ['not json', '[1,2]', '42', '"text"', 'null', [1, 2], 42, 'true']) {
        const res = await api(key).post('/project', { name: 'Bad meta', meta });
        expect({ meta, status: res.status }).toEqual({ meta, status: 422 });
        const body = expectError(res, 422, ['meta']);
        expect(body.errors.meta[0]).toBe('The meta field must be a JSON object.');
      }
      expect(expectSuccess(await api(key).get('/project')).data).toHaveLength(0);
    });

    it('ignores unknown fields and never returns them', async () => {
      const { key } = await makeAccount(t.app);
      const res = await api(key).post('/project', {
        name: 'Unknown fields',
        user_id: 999,
        deleted_at: '2020-01-01T00:00:00Z',
        bogus: 'x',
        id: 424242,
      });
      const data = expectSuccess(res, 201);
      expectProjectShape(data, CREATE_KEYS);
      expect(data.id).not.toBe(424242);
      expect(data).not.toHaveProperty('bogus');
      const again = expectSuccess(await api(key).get(`/project/${data.id}`));
      expectProjectShape(again);
      expect(again.locked_at).toBeNull();
    });

    it('answers 422 with field errors for invalid fields', async () => {
      const { key } = await makeAccount(t.app);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{}, 'name'],
        [{ name: 'x'.repeat(256) }, 'name'],
        [{ name: 12345 }, 'name'],
        [{ name: null }, 'name'],
        [{ name: ['a'] }, 'name'],
        [{ name: 'ok', description: 'd'.repeat(1001) }, 'description'],
        [{ name: 'ok', slug: 'bad slug' }, 'slug'],
        [{ name: 'ok', slug: 'a.b' }, 'slug'],
        [{ name: 'ok', slug: 'ünïcode' }, 'slug'],
        [{ name: 'ok', slug: 's'.repeat(256) }, 'slug'],
        [{ name: 'ok', slug: 123 }, 'slug'],
        [{ name: 'ok', webhook_url: 'not a url' }, 'webhook_url'],
        [{ name: 'ok', default_redirect_url: 'javascript:alert(1)' }, 'default_redirect_url'],
        [{ name: 'ok', logo_url: 'ftp://example.com/logo.png' }, 'logo_url'],
        [{ name: 'ok', has_paid: 'true' }, 'has_paid'],
        [{ name: 'ok', is_active: 'false' }, 'is_active'],
        [{ name: 'ok', meta: [1] }, 'meta'],
      ];
      for (const [body, field] of cases) {
        const res = await api(key).post('/project', body);
        expect({ body, status: res.status }).toEqual({ body, status: 422 });
        expectError(res, 422, [field]);
      }
      // Nothing was half-written.
      expect(expectSuccess(await api(key).get('/project')).data).toHaveLength(0);
    });

    it('accepts the boundary lengths', async () => {
      const { key } = await makeAccount(t.app);
      const slug = `${uniqueToken()}-`.padEnd(255, 'z');
      const data = expectSuccess(
        await api(key).post('/project', { name: 'n'.repeat(255), slug, description: 'd'.repeat(1000) }),
        201,
      );
      expect(data.name).toHaveLength(255);
      expect(data.slug).toBe(slug);
      expect(data.description).toHaveLength(1000);
    });

    it('never answers 500 for odd bodies', async () => {
      const { key } = await makeAccount(t.app);
      const bodies: unknown[] = [
        { name: {} },
        { name: true },
        { name: 'ok', meta: null },
        { name: 'ok', meta: '' },
        { name: 'ok', meta: '{' },
        { name: 'ok', has_paid: null },
        { name: 'ok', has_paid: 1 },
        { name: 'ok', description: 5 },
        { name: 'ok', webhook_secret: 42 },
        { name: 'ok', webhook_url: { href: 'https://example.com' } },
        { name: 'ok', slug: '' },
        { name: 'ok', slug: null },
        { name: '' },
        { name: '   ' },
      ];
      for (const body of bodies) {
        const res = await api(key).post('/project', body);
        expect({ body, status: res.status < 500 ? 'below 500' : res.status }).toEqual({
          body,
          status: 'below 500',
        });
        if (res.status >= 400) expectClientError(res);
      }
      for (const body of [
        { name: '' },
        { name: '   ' },
        { name: {} },
        { name: true },
        { name: 'ok', webhook_url: { href: 'https://example.com' } },
      ]) {
        expectError(await api(key).post('/project', body), 422);
      }
    });

    it('a 422 leaves nothing behind: the slug stays free and the list unchanged', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const slug = `fresh-${uniqueToken()}`;
      expectError(await api(key).post('/project', { name: 'Half', slug, webhook_url: 'not a url' }), 422, [
        'webhook_url',
      ]);
      expectError(await api(key).post('/project', { name: 'Half', slug, meta: 'nope' }), 422, ['meta']);
      expectError(await api(key).post('/project', { name: 'Half', slug, has_paid: 'true' }), 422, [
        'has_paid',
      ]);
      expect(expectSuccess(await api(key).get('/project')).data).toHaveLength(0);
      const created = expectSuccess(await api(key).post('/project', { name: 'Whole', slug }), 201);
      expect(created.slug).toBe(slug);
      // A key that never listed before (no cache) sees exactly the one project.
      const list = expectSuccess(await api(await makeApiKey(t.app, user)).get('/project'));
      expect(list.data.map((p: { id: number }) => p.id)).toEqual([created.id]);
    });

    it('refuses a slug that is already taken, by anyone', async () => {
      const a = await makeAccount(t.app);
      const b = await makeAccount(t.app);
      const slug = `taken-${uniqueToken()}`;
      await makeProject(t, a.key, { slug });
      for (const key of [a.key, b.key]) {
        const body = expectError(await api(key).post('/project', { name: 'Another', slug }), 422, ['slug']);
        expect(body.errors.slug[0]).toBe('The slug has already been taken.');
      }
    });

    it('generates a slug from the name, numbering collisions', async () => {
      const { key } = await makeAccount(t.app);
      const first = await makeProject(t, key, { name: 'My Cool App!' });
      const second = await makeProject(t, key, { name: 'My Cool App!' });
      const third = await makeProject(t, key, { name: 'My Cool App!' });
      expect(first.slug).toBe('my-cool-app');
      expect(second.slug).toBe('my-cool-app-2');
      expect(third.slug).toBe('my-cool-app-3');
    });

    it('generates a slug that avoids an explicitly chosen one', async () => {
      const { key } = await makeAccount(t.app);
      const token = uniqueToken();
      await makeProject(t, key, { name: 'Explicit', slug: `taken-name-${token}` });
      const generated = await makeProject(t, key, { name: `Taken Name ${token}` });
      expect(generated.slug).toBe(`taken-name-${token}-2`);
    });

    it('always generates a valid, unique alpha_dash slug of at most 255 characters', async () => {
      const { key } = await makeAccount(t.app);
      const long = 'L'.repeat(255);
      const names = [
        '!!!',
        '!!!',
        'Crème Brûlée',
        '日本語のプロジェクト',
        '日本語のプロジェクト',
        long,
        long,
        '  spaced   out  ',
      ];
      const slugs: string[] = [];
      for (const name of names) {
        const p = await makeProject(t, key, { name });
        expect(p.name).toBe(name.trim());
        expect(p.slug).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(p.slug.length).toBeLessThanOrEqual(255);
        expect(p.slug).toBe(p.slug.toLowerCase());
        slugs.push(p.slug);
      }
      expect(new Set(slugs).size).toBe(slugs.length);
    });

    it('401 without a key, 403 with an unknown key, 403 with a scoped key', async () => {
      expectError(await api().post('/project', { name: 'x' }), 401);
      expectError(await api('lg_not-a-real-key').post('/project', { name: 'x' }), 403);
      const user = await makeUser(t.app);
      const global = await makeApiKey(t.app, user);
      const project = await makeProject(t, global);
      const scoped = await makeApiKey(t.app, user, { project_id: project.id });
      expectError(await api(scoped).post('/project', { name: 'From scoped' }), 403);
      const list = expectSuccess(await api(global).get('/project'));
      expect(list.data).toHaveLength(1);
    });

    it('enforces the plan limit before validation', async () => {
      const user = await makeUser(t.app, { max_projects: 1 });
      const key = await makeApiKey(t.app, user);
      // Under the limit validation runs.
      expectError(await api(key).post('/project', {}), 422, ['name']);
      await makeProject(t, key);
      expectError(await api(key).post('/project', { name: 'Second' }), 403);
      // At the limit even an invalid body is refused with 403, not 422.
      expectError(await api(key).post('/project', {}), 403);
      expectError(await api(key).post('/project', { name: 12 }), 403);
      expect(expectSuccess(await api(key).get('/project')).data).toHaveLength(1);
    });

    it('405 for an unsupported method on /project', async () => {
      const { key } = await makeAccount(t.app);
      expectError(await api(key).delete('/project'), 405);
    });
  });

  describe('the largest project (every text at its limit, in three-byte characters)', () => {
    // The event and the audit row of a project are TEXT columns: 65535 bytes on MySQL.
    const euros = (n: number) => '€'.repeat(n);
    const url = (host: string) => `https://${host}/${euros(2000)}`;
    const largest = {
      name: euros(255),
      description: euros(1000),
      default_redirect_url: url('redirect.example'),
      logo_url: url('logo.example'),
      webhook_url: url('127.0.0.1'),
      webhook_secret: euros(255),
      // 16384 bytes of JSON: {"a":"…"} is 8 bytes besides the characters.
      meta: { a: `${euros(5458)}ab` },
    };

    it('refuses a meta over 16384 bytes of JSON (UTF-8), however few characters it has, naming the field', async () => {
      const { key } = await makeAccount(t.app);
      expect(Buffer.byteLength(JSON.stringify(largest.meta))).toBe(16_384);
      for (const meta of [{ a: `${euros(5458)}abc` }, { a: euros(16_000) }]) {
        const res = await api(key).post('/project', { name: 'Too much meta', meta });
        expectError(res, 422, ['meta']);
        expect(res.body.errors.meta).toEqual([
          'The meta field must not be greater than 16384 bytes as JSON (UTF-8).',
        ]);
      }
      expect(expectSuccess(await api(key).get('/project')).data).toEqual([]);
    });

    it('stores, announces and audits it on create, PATCH, PUT and lock (no answer is a 500 on MySQL)', async () => {
      const w = await createTestApp({
        THROTTLE_API_LIMIT: '100000',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_DISPATCHER: 'false',
      });
      try {
        const { key } = await makeAccount(w.app);
        const http = apiAs(w, key);
        const created = expectSuccess(await http.post('/project', largest), 201);
        expect(created.meta).toEqual(largest.meta);
        const other = {
          ...largest,
          name: euros(254),
          description: `${euros(999)}x`,
          meta: { a: `${euros(5458)}ba` },
        };
        expectSuccess(await http.patch(`/project/${created.id}`, other));
        expectSuccess(await http.put(`/project/${created.id}`, largest));
        expectSuccess(await http.post(`/project/${created.id}/lock`, { reason: euros(1000) }));
        const events = await w.dataSource.query(
          'SELECT type, payload FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
          [created.id],
        );
        expect(events.map((e: { type: string }) => e.type)).toEqual([
          'project.created',
          'project.updated',
          'project.updated',
          'project.locked',
        ]);
        for (const e of events)
          expect(JSON.parse(e.payload).data.meta).toEqual(expect.objectContaining({ a: expect.any(String) }));
        const log = expectSuccess(await http.get(`/project/${created.id}/audit-log`)).data;
        expect(log.map((row: { action: string }) => row.action)).toEqual([
          'project.locked',
          'project.updated',
          'project.updated',
          'project.created',
        ]);
      } finally {
        await w.close();
      }
    });
  });

  describe('webhook_url host names', () => {
    // Labels of 63 characters: 4 of them and "com" make 259, 3 and a 61-character one 253 (DNS's limit).
    const label = (c: string, n = 63) => c.repeat(n);
    const tooLong = `${[label('a'), label('b'), label('c'), label('d')].join('.')}.com`;
    const longest = `${[label('a'), label('b'), label('c'), label('d', 61)].join('.')}`;
    const message = 'The webhook url field must be a valid URL: its host name is longer than 253 characters.';

    it('refuses a host name longer than 253 characters on create, PATCH and PUT, naming the field, and stores nothing', async () => {
      const { key } = await makeAccount(t.app);
      expect(tooLong).toHaveLength(259);
      const created = await api(key).post('/project', {
        name: 'Long host',
        webhook_url: `https://${tooLong}/hook`,
      });
      expect({ status: created.status, errors: created.body.errors }).toEqual({
        status: 422,
        errors: { webhook_url: [message] },
      });
      expect(expectSuccess(await api(key).get('/project')).data).toEqual([]);
      const project = await makeProject(t, key);
      for (const res of [
        await api(key).patch(`/project/${project.id}`, { webhook_url: `http://${tooLong}:8080/x` }),
        await api(key).put(`/project/${project.id}`, {
          name: project.name,
          webhook_url: `http://${tooLong}/x`,
        }),
      ]) {
        expect({ status: res.status, errors: res.body.errors }).toEqual({
          status: 422,
          errors: { webhook_url: [message] },
        });
      }
      expect(expectSuccess(await api(key).get(`/project/${project.id}`)).webhook_url).toBeNull();
    });

    it('accepts the longest host name, with a port, and records its events (no answer is a 500 on MySQL)', async () => {
      const w = await createTestApp({
        THROTTLE_API_LIMIT: '100000',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_DISPATCHER: 'false',
      });
      try {
        const { key } = await makeAccount(w.app);
        expect(longest).toHaveLength(253);
        const url = `https://${longest}:65535/hook`;
        const project = expectSuccess(
          await apiAs(w, key).post('/project', { name: 'Longest host', webhook_url: url }),
          201,
        );
        expect(project.webhook_url).toBe(url);
        expectSuccess(await apiAs(w, key).patch(`/project/${project.id}`, { has_paid: true }));
        const rows = await w.dataSource.query(
          'SELECT type FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
          [project.id],
        );
        expect(rows.map((r: { type: string }) => r.type)).toEqual([
          'project.created',
          'project.updated',
          'project.paid',
        ]);
      } finally {
        await w.close();
      }
    });
  });

  describe('GET /project/{id}', () => {
    it('returns the project with locked_at and nothing hidden', async () => {
      const { key } = await makeAccount(t.app);
      const created = await makeProject(t, key, { webhook_secret: 'super-secret-value', meta: { x: 1 } });
      const res = await api(key).get(`/project/${created.id}`);
      const data = expectSuccess(res);
      expectProjectShape(data);
      expect(data.locked_at).toBeNull();
      const { locked_at, ...rest } = data;
      void locked_at;
      expect(rest).toEqual(created);
      expect(JSON.stringify(res.body)).not.toContain('super-secret-value');
    });

    it('enforces ownership and key scope', async () => {
      const owner = await makeUser(t.app);
      const ownerKey = await makeApiKey(t.app, owner);
      const project = await makeProject(t, ownerKey);
      const other = await makeProject(t, ownerKey);
      const scopedOwn = await makeApiKey(t.app, owner, { project_id: project.id });
      const scopedOther = await makeApiKey(t.app, owner, { project_id: other.id });
      const stranger = await makeAccount(t.app);

      expectError(await api(stranger.key).get(`/project/${project.id}`), 403);
      expectError(await api(scopedOther).get(`/project/${project.id}`), 403);
      expect(expectSuccess(await api(scopedOwn).get(`/project/${project.id}`)).id).toBe(project.id);
      expect(expectSuccess(await api(ownerKey).get(`/project/${project.id}`)).id).toBe(project.id);
    });

    it('404 for unknown or malformed ids, 401/403 for missing or bad keys', async () => {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      for (const id of ['999999', 'abc', '0', '-1', '1.5']) {
        expectError(await api(key).get(`/project/${id}`), 404);
      }
      expectError(await api().get(`/project/${project.id}`), 401);
      expectError(await api('lg_not-a-real-key').get(`/project/${project.id}`), 403);
    });
  });

  describe('GET /project (list)', () => {
    it('lists only the caller’s projects, latest first', async () => {
      const { key } = await makeAccount(t.app);
      const stranger = await makeAccount(t.app);
      const strangers = await makeProject(t, stranger.key);
      const p1 = await makeProject(t, key);
      const p2 = await makeProject(t, key);
      const page = expectSuccess(await api(key).get('/project'));
      expect(Object.keys(page).sort()).toEqual(['data', 'next_cursor']);
      expect(page.next_cursor).toBeNull();
      expect(page.data.map((p: { id: number }) => p.id)).toEqual([p2.id, p1.id]);
      expect(page.data.map((p: { id: number }) => p.id)).not.toContain(strangers.id);
      for (const item of page.data) expectProjectShape(item);
    });

    it('a scoped key sees only its project', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const a = await makeProject(t, key);
      await makeProject(t, key);
      const scoped = await makeApiKey(t.app, user, { project_id: a.id });
      const page = expectSuccess(await api(scoped).get('/project'));
      expect(page.data.map((p: { id: number }) => p.id)).toEqual([a.id]);
      expect(page.next_cursor).toBeNull();
    });

    it('walks pages with the cursor: 3, 3, 1, each id once, descending', async () => {
      const { key } = await makeAccount(t.app);
      const ids: number[] = [];
      for (let i = 0; i < 7; i++) ids.push((await makeProject(t, key)).id);
      const sizes: number[] = [];
      const seen: number[] = [];
      let cursor: string | null = null;
      let guard = 0;
      do {
        const query: Record<string, string | number> = { per_page: 3 };
        if (cursor) query.cursor = cursor;
        const page = expectSuccess(await api(key).get('/project').query(query));
        sizes.push(page.data.length);
        seen.push(...page.data.map((p: { id: number }) => p.id));
        cursor = page.next_cursor;
        if (cursor !== null) expect(typeof cursor).toBe('string');
      } while (cursor && ++guard < 10);
      expect(sizes).toEqual([3, 3, 1]);
      expect(seen).toEqual([...ids].sort((a, b) => b - a));
      expect(new Set(seen).size).toBe(7);
    });

    it('defaults to 20 per page', async () => {
      const { key } = await makeAccount(t.app);
      for (let i = 0; i < 21; i++) await makeProject(t, key);
      const first = expectSuccess(await api(key).get('/project'));
      expect(first.data).toHaveLength(20);
      expect(first.next_cursor).toEqual(expect.any(String));
      const second = expectSuccess(await api(key).get('/project').query({ cursor: first.next_cursor }));
      expect(second.data).toHaveLength(1);
      expect(second.next_cursor).toBeNull();
      expect(expectSuccess(await api(key).get('/project').query({ per_page: 50 })).data).toHaveLength(21);
    });

    it('refuses per_page outside 1..50 or not an integer', async () => {
      const { key } = await makeAccount(t.app);
      for (const per_page of ['0', '51', 'x', '-1', '2.5']) {
        expectError(await api(key).get('/project').query({ per_page }), 422, ['per_page']);
      }
    });

    it('refuses a tampered cursor', async () => {
      const { key } = await makeAccount(t.app);
      await makeProject(t, key);
      await makeProject(t, key);
      const page = expectSuccess(await api(key).get('/project').query({ per_page: 1 }));
      const cursor: string = page.next_cursor;
      expect(typeof cursor).toBe('string');
      const tampered = (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1);
      expectError(await api(key).get('/project').query({ cursor: tampered }), 422, ['cursor']);
      expectError(await api(key).get('/project').query({ cursor: 'garbage' }), 422, ['cursor']);
      expect(expectSuccess(await api(key).get('/project').query({ cursor })).data).toHaveLength(1);
    });

    it('401 without a key, 403 with a bad key', async () => {
      expectError(await api().get('/project'), 401);
      expectError(await api('lg_not-a-real-key').get('/project'), 403);
    });
  });

  describe('PATCH /project/{id}', () => {
    it('updates only the fields sent, and a read afterwards shows it', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key, { description: 'keep me', meta: { a: 1 } });
      expectSuccess(await api(key).get(`/project/${p.id}`)); // warm any cache
      const newSlug = `renamed-${uniqueToken()}`;
      const updated = expectSuccess(
        await api(key).patch(`/project/${p.id}`, {
          name: 'Renamed',
          slug: newSlug,
          has_paid: true,
          is_active: false,
          meta: { b: 2 },
        }),
      );
      expectProjectShape(updated);
      expect(updated).toMatchObject({
        id: p.id,
        name: 'Renamed',
        slug: newSlug,
        has_paid: true,
        is_active: false,
        meta: { b: 2 },
        description: 'keep me',
        locked_at: null,
      });
      const read = expectSuccess(await api(key).get(`/project/${p.id}`));
      expect(read).toEqual(updated);
      const back = expectSuccess(await api(key).patch(`/project/${p.id}`, { has_paid: false }));
      expect(back).toMatchObject({ has_paid: false, name: 'Renamed', is_active: false });
    });

    it('decodes a JSON-string meta and validates like create', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      expect(expectSuccess(await api(key).patch(`/project/${p.id}`, { meta: '{"k":"v"}' })).meta).toEqual({
        k: 'v',
      });
      expectError(await api(key).patch(`/project/${p.id}`, { meta: '[1]' }), 422, ['meta']);
      expectError(await api(key).patch(`/project/${p.id}`, { name: 'x'.repeat(256) }), 422, ['name']);
      expectError(await api(key).patch(`/project/${p.id}`, { has_paid: 'true' }), 422, ['has_paid']);
      expectError(await api(key).patch(`/project/${p.id}`, { webhook_url: 'not a url' }), 422, [
        'webhook_url',
      ]);
      expectError(await api(key).patch(`/project/${p.id}`, { slug: 'not alpha dash' }), 422, ['slug']);
    });

    it('refuses a slug taken by another project but accepts its own', async () => {
      const { key } = await makeAccount(t.app);
      const a = await makeProject(t, key);
      const b = await makeProject(t, key);
      const body = expectError(await api(key).patch(`/project/${b.id}`, { slug: a.slug }), 422, ['slug']);
      expect(body.errors.slug[0]).toBe('The slug has already been taken.');
      expect(expectSuccess(await api(key).patch(`/project/${a.id}`, { slug: a.slug })).slug).toBe(a.slug);
    });

    it('a 422 changes nothing', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const p = await makeProject(t, key, { name: 'Original' });
      expectError(
        await api(key).patch(`/project/${p.id}`, { name: 'Changed', webhook_url: 'not a url' }),
        422,
        ['webhook_url'],
      );
      const freshKey = await makeApiKey(t.app, user);
      const read = expectSuccess(await api(freshKey).get(`/project/${p.id}`));
      expect(read.name).toBe('Original');
      expect(read.webhook_url).toBeNull();
    });

    it('a scoped key may update its own project only; strangers get 403', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const a = await makeProject(t, key);
      const b = await makeProject(t, key);
      const scopedA = await makeApiKey(t.app, user, { project_id: a.id });
      expect(expectSuccess(await api(scopedA).patch(`/project/${a.id}`, { name: 'Scoped edit' })).name).toBe(
        'Scoped edit',
      );
      expectError(await api(scopedA).patch(`/project/${b.id}`, { name: 'Nope' }), 403);
      const stranger = await makeAccount(t.app);
      expectError(await api(stranger.key).patch(`/project/${a.id}`, { name: 'Nope' }), 403);
      expectError(await api().patch(`/project/${a.id}`, { name: 'Nope' }), 401);
      expectError(await api(key).patch('/project/999999', { name: 'Nope' }), 404);
      expectError(await api(key).patch('/project/abc', { name: 'Nope' }), 404);
    });
  });

  describe('PUT /project/{id}', () => {
    it('replaces the project: omitted optional fields return to defaults, the slug is kept', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key, {
        description: 'old',
        default_redirect_url: 'https://example.com/r',
        webhook_url: 'https://example.com/w',
        logo_url: 'https://example.com/l.png',
        meta: { old: true },
        has_paid: true,
        is_active: false,
      });
      const replaced = expectSuccess(await api(key).put(`/project/${p.id}`, { name: 'Replaced' }));
      expectProjectShape(replaced);
      expect(replaced).toMatchObject({
        id: p.id,
        name: 'Replaced',
        slug: p.slug,
        description: null,
        default_redirect_url: null,
        webhook_url: null,
        logo_url: null,
        meta: {},
        has_paid: false,
        is_active: true,
        locked_at: null,
      });
      expect(expectSuccess(await api(key).get(`/project/${p.id}`))).toEqual(replaced);
    });

    it('sets every field sent', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      const slug = `put-${uniqueToken()}`;
      const replaced = expectSuccess(
        await api(key).put(`/project/${p.id}`, {
          name: 'All',
          slug,
          description: 'desc',
          default_redirect_url: 'https://example.com/r',
          webhook_url: 'https://example.com/w',
          logo_url: 'https://example.com/l.png',
          meta: { a: 1 },
          has_paid: true,
          is_active: false,
        }),
      );
      expect(replaced).toMatchObject({
        name: 'All',
        slug,
        description: 'desc',
        meta: { a: 1 },
        has_paid: true,
        is_active: false,
      });
    });

    it('requires name and validates like create', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const other = await makeProject(t, key);
      const p = await makeProject(t, key, { description: 'stays' });
      expectError(await api(key).put(`/project/${p.id}`, {}), 422, ['name']);
      expectError(await api(key).put(`/project/${p.id}`, { description: 'no name' }), 422, ['name']);
      expectError(await api(key).put(`/project/${p.id}`, { name: 'x', slug: other.slug }), 422, ['slug']);
      expectError(await api(key).put(`/project/${p.id}`, { name: 'x', meta: 'nope' }), 422, ['meta']);
      const read = expectSuccess(await api(await makeApiKey(t.app, user)).get(`/project/${p.id}`));
      expect(read.description).toBe('stays');
      expect(read.name).toBe(p.name);
    });

    it('403 for a stranger, 404 for an unknown project', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      const stranger = await makeAccount(t.app);
      expectError(await api(stranger.key).put(`/project/${p.id}`, { name: 'x' }), 403);
      expectError(await api(key).put('/project/999999', { name: 'x' }), 404);
    });
  });

  describe('DELETE /project/{id}', () => {
    it('deletes with a global key: 200 with data null, then 404 everywhere', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      expectSuccess(await api(key).get(`/project/${p.id}`)); // warm any cache
      const res = await api(key).delete(`/project/${p.id}`);
      expect(expectSuccess(res)).toBeNull();
      expectError(await api(key).get(`/project/${p.id}`), 404);
      expectError(await api(key).patch(`/project/${p.id}`, { name: 'x' }), 404);
      expectError(await api(key).put(`/project/${p.id}`, { name: 'x' }), 404);
      expectError(await api(key).delete(`/project/${p.id}`), 404);
      expectError(await api(key).post(`/project/${p.id}/lock`, {}), 404);
      expectError(await api(key).get(`/project/${p.id}/signing-key`), 404);
      expectError(await api(key).get(`/project/${p.id}/domains`), 404);
      expect(expectSuccess(await api(key).get('/project')).data).toHaveLength(0);
    });

    it('a scoped key cannot delete; after deletion the scoped key is refused everywhere', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const p = await makeProject(t, key);
      const scoped = await makeApiKey(t.app, user, { project_id: p.id });
      expectError(await api(scoped).delete(`/project/${p.id}`), 403);
      expectSuccess(await api(scoped).get(`/project/${p.id}`));
      expect(expectSuccess(await api(key).delete(`/project/${p.id}`))).toBeNull();
      expectError(await api(scoped).get('/project'), 403);
      expectError(await api(scoped).get(`/project/${p.id}`), 403);
      expectError(await api(scoped).get(`/project/${p.id}/domains`), 403);
    });

    it('a stranger cannot delete', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      const stranger = await makeAccount(t.app);
      expectError(await api(stranger.key).delete(`/project/${p.id}`), 403);
      expectError(await api().delete(`/project/${p.id}`), 401);
      expectSuccess(await api(key).get(`/project/${p.id}`));
    });
  });

  describe('lock and unlock', () => {
    it('locks: reads work, writes are 403, unlock restores writes', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      expectSuccess(await api(key).get(`/project/${p.id}`)); // warm any cache
      const locked = expectSuccess(await api(key).post(`/project/${p.id}/lock`, { reason: 'chargeback' }));
      expectProjectShape(locked);
      expect(locked.locked_at).toMatch(TIMESTAMP);
      expect(JSON.stringify(locked)).not.toContain('chargeback');

      const read = expectSuccess(await api(key).get(`/project/${p.id}`));
      expect(read.locked_at).toBe(locked.locked_at);
      expectSuccess(await api(key).get('/project'));
      expectSuccess(await api(key).get(`/project/${p.id}/domains`));
      expectSuccess(await api(key).get(`/project/${p.id}/signing-key`));

      for (const res of [
        await api(key).patch(`/project/${p.id}`, { name: 'x' }),
        await api(key).put(`/project/${p.id}`, { name: 'x' }),
      ]) {
        expect(expectError(res, 403).message).toBe('Project is locked.');
      }
      expectError(await api(key).post(`/project/${p.id}/domains`, { domain: 'locked.example.com' }), 403);

      const unlocked = expectSuccess(await api(key).post(`/project/${p.id}/unlock`));
      expectProjectShape(unlocked);
      expect(unlocked.locked_at).toBeNull();
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).locked_at).toBeNull();
      expect(expectSuccess(await api(key).patch(`/project/${p.id}`, { name: 'Writable again' })).name).toBe(
        'Writable again',
      );
      expectSuccess(await api(key).post(`/project/${p.id}/domains`, { domain: 'unlocked.example.com' }), 201);
    });

    it('locks without a body', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      expect(expectSuccess(await api(key).post(`/project/${p.id}/lock`)).locked_at).toMatch(TIMESTAMP);
    });

    it('domain writes are refused while locked', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      const d = await makeDomain(t, key, p.id);
      expectSuccess(await api(key).post(`/project/${p.id}/lock`, {}));
      expectError(await api(key).patch(`/project/${p.id}/domains/${d.id}`, { has_paid: true }), 403);
      expectError(await api(key).put(`/project/${p.id}/domains/${d.id}`, { domain: d.domain }), 403);
      expectError(await api(key).delete(`/project/${p.id}/domains/${d.id}`), 403);
      expect(expectSuccess(await api(key).get(`/project/${p.id}/domains/${d.id}`))).toEqual(d);
    });

    it('global key only; strangers and unknown projects refused', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const p = await makeProject(t, key);
      const scoped = await makeApiKey(t.app, user, { project_id: p.id });
      const stranger = await makeAccount(t.app);
      expectError(await api(scoped).post(`/project/${p.id}/lock`, {}), 403);
      expectError(await api(stranger.key).post(`/project/${p.id}/lock`, {}), 403);
      expectError(await api().post(`/project/${p.id}/lock`, {}), 401);
      expectError(await api(key).post('/project/999999/lock', {}), 404);
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).locked_at).toBeNull();

      expectSuccess(await api(key).post(`/project/${p.id}/lock`, {}));
      expectError(await api(scoped).post(`/project/${p.id}/unlock`), 403);
      expectError(await api(stranger.key).post(`/project/${p.id}/unlock`), 403);
      expectError(await api(key).post('/project/999999/unlock'), 404);
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).locked_at).toMatch(TIMESTAMP);
    });

    it('never answers 500 for an odd reason', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      for (const body of [{ reason: 5 }, { reason: { a: 1 } }, { reason: 'r'.repeat(5000) }]) {
        const res = await api(key).post(`/project/${p.id}/lock`, body);
        expect({ body, status: res.status < 500 ? 'below 500' : res.status }).toEqual({
          body,
          status: 'below 500',
        });
        if (res.status >= 400) expectClientError(res);
        await api(key).post(`/project/${p.id}/unlock`);
      }
    });
  });

  describe('GET /project/{id}/signing-key', () => {
    it('returns the Ed25519 public key as PEM and raw base64, distinct per project', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const a = await makeProject(t, key);
      const b = await makeProject(t, key);
      const res = await api(key).get(`/project/${a.id}/signing-key`);
      const ka = expectSuccess(res);
      expect(Object.keys(ka).sort()).toEqual(['algorithm', 'public_key', 'public_key_pem']);
      expect(ka.algorithm).toBe('Ed25519');
      expect(ka.public_key_pem.startsWith('-----BEGIN PUBLIC KEY-----')).toBe(true);
      expect(JSON.stringify(res.body)).not.toMatch(/PRIVATE/);
      const pub = createPublicKey(ka.public_key_pem);
      expect(pub.asymmetricKeyType).toBe('ed25519');
      const raw = pub.export({ format: 'der', type: 'spki' }).subarray(-32);
      const sent = Buffer.from(ka.public_key, 'base64');
      expect(sent).toHaveLength(32);
      expect(sent.equals(raw)).toBe(true);

      const kb = expectSuccess(await api(key).get(`/project/${b.id}/signing-key`));
      expect(kb.public_key).not.toBe(ka.public_key);
      // Stable across reads.
      expect(expectSuccess(await api(key).get(`/project/${a.id}/signing-key`))).toEqual(ka);
      // A scoped key of the project may read it.
      const scoped = await makeApiKey(t.app, user, { project_id: a.id });
      expect(expectSuccess(await api(scoped).get(`/project/${a.id}/signing-key`))).toEqual(ka);
      expectError(await api(scoped).get(`/project/${b.id}/signing-key`), 403);
    });

    it('403 for a stranger, 404 for an unknown project, 401 without a key', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      const stranger = await makeAccount(t.app);
      expectError(await api(stranger.key).get(`/project/${p.id}/signing-key`), 403);
      expectError(await api(key).get('/project/999999/signing-key'), 404);
      expectError(await api().get(`/project/${p.id}/signing-key`), 401);
    });
  });

  describe('offline_grace_hours', () => {
    it('defaults to 72, takes 0 to 720 on create, PATCH and PUT, and a PUT without it returns it to 72', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key);
      expect(p.offline_grace_hours).toBe(72);
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).offline_grace_hours).toBe(72);
      for (const hours of [0, 1, 720]) {
        expect((await makeProject(t, key, { offline_grace_hours: hours })).offline_grace_hours).toBe(hours);
      }
      expect(
        expectSuccess(await api(key).patch(`/project/${p.id}`, { offline_grace_hours: 0 }))
          .offline_grace_hours,
      ).toBe(0);
      expect(
        expectSuccess(await api(key).patch(`/project/${p.id}`, { name: 'Other field' })).offline_grace_hours,
      ).toBe(0);
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).offline_grace_hours).toBe(0);
      expect(
        expectSuccess(await api(key).put(`/project/${p.id}`, { name: 'Replaced', offline_grace_hours: 24 }))
          .offline_grace_hours,
      ).toBe(24);
      expect(
        expectSuccess(await api(key).put(`/project/${p.id}`, { name: 'Replaced again' })).offline_grace_hours,
      ).toBe(72);
    });

    it('refuses anything but an integer from 0 to 720, with the field named, and stores nothing', async () => {
      const { key } = await makeAccount(t.app);
      const p = await makeProject(t, key, { offline_grace_hours: 5 });
      const cases: Array<[unknown, string]> = [
        [721, 'The offline grace hours field must not be greater than 720.'],
        [-1, 'The offline grace hours field must be at least 0.'],
        [1.5, 'The offline grace hours field must be an integer.'],
        ['72', 'The offline grace hours field must be an integer.'],
        [null, 'The offline grace hours field must be an integer.'],
        [true, 'The offline grace hours field must be an integer.'],
      ];
      for (const [value, message] of cases) {
        for (const res of [
          await api(key).post('/project', { name: 'Bad grace', offline_grace_hours: value }),
          await api(key).patch(`/project/${p.id}`, { offline_grace_hours: value }),
          await api(key).put(`/project/${p.id}`, { name: 'Bad grace', offline_grace_hours: value }),
        ]) {
          expect({ value, status: res.status, errors: res.body.errors }).toEqual({
            value,
            status: 422,
            errors: { offline_grace_hours: [message] },
          });
        }
      }
      expect(expectSuccess(await api(key).get(`/project/${p.id}`)).offline_grace_hours).toBe(5);
    });
  });
});
