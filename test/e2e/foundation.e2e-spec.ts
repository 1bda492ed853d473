import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeApiKey, makeProject, makeUser } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

describe('foundation: root, envelope, errors, API keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ MAX_UPLOAD_BYTES: '2048' });
  });
  afterAll(async () => t.close());

  describe('GET /api/v1/', () => {
    it('answers ok without authentication', async () => {
      const res = await t.http().get('/api/v1/').set('Accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', message: expect.any(String), data: null, errors: null });
    });

    it('also answers without the trailing slash', async () => {
      const res = await t.http().get('/api/v1');
      expect(res.body.status).toBe('ok');
    });

    it('the server root outside /api/v1 points a person to the API, its docs and the console', async () => {
      const res = await t.http().get('/');
      expect({ status: res.status, body: res.body, requestId: typeof res.headers['x-request-id'] }).toEqual({
        status: 200,
        body: {
          status: 'ok',
          message:
            'LicenseGate: the API is at /api/v1/, its documentation at /api/docs, and the console (when enabled) at /console/.',
          data: null,
          errors: null,
        },
        requestId: 'string',
      });
      // Any other path outside the API is still a 404 in the envelope.
      expect(expectError(await t.http().get('/index.html'), 404).message).toBe(
        'The route GET /index.html could not be found.',
      );
    });

    it('reads the API root regardless of case, as it routes every path below it', async () => {
      const lower = await t.http().get('/api/v1/');
      for (const path of ['/API/V1/', '/Api/v1/', '/api/V1']) {
        const res = await t.http().get(path);
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 200, body: lower.body });
      }
      // A route below it is reached in any case (Express routes regardless of case): here its key check.
      const routed = await t.http().get('/API/V1/server');
      expect(expectError(routed, 401).message).toBe(
        expectError(await t.http().get('/api/v1/server'), 401).message,
      );
      expect(expectError(await t.http().get('/API/V2/'), 404).message).toBe(
        'The route GET /API/V2/ could not be found.',
      );
      // /metrics takes no key: only its exact spelling, so that a proxy rule matching it exactly holds.
      expect(expectError(await t.http().get('/METRICS'), 404).message).toBe(
        'The route GET /METRICS could not be found.',
      );
    });

    it('carries no ETag, so a conditional GET still gets the envelope, not a body-less 304', async () => {
      const first = await t.http().get('/api/v1/');
      expect(first.headers.etag).toBeUndefined();
      // The weak tag Express would have computed for this body (its default: length and SHA-1).
      const hash = createHash('sha1').update(first.text, 'utf8').digest('base64').substring(0, 27);
      const tag = `W/"${Buffer.byteLength(first.text).toString(16)}-${hash}"`;
      const again = await t.http().get('/api/v1/').set('If-None-Match', tag);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('ok');
    });
  });

  describe('X-Request-Id', () => {
    it('is generated when the client sends none', async () => {
      const res = await t.http().get('/api/v1/');
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });
    it('is echoed when the client sends one, also on errors', async () => {
      const res = await t.http().get('/api/v1/nope').set('X-Request-Id', 'abc-123');
      expect(res.headers['x-request-id']).toBe('abc-123');
    });
    it('is replaced when what the client sent is not a sane id', async () => {
      const res = await t.http().get('/api/v1/').set('X-Request-Id', 'a b <script>');
      expect(res.headers['x-request-id']).not.toBe('a b <script>');
    });
  });

  describe('error classes', () => {
    it('404 in the envelope for an unknown route', async () => {
      expectError(await t.http().get('/api/v1/does-not-exist'), 404);
      expectError(await t.http().get('/elsewhere'), 404);
    });

    it('405 with Allow for a known path with another method', async () => {
      const res = await t.http().delete('/api/v1/');
      expectError(res, 405);
      expect(res.headers['allow']).toContain('GET');
      const keys = await t.http().put('/api/v1/api-keys');
      expectError(keys, 405);
      expect(keys.headers['allow']).toBe('GET, HEAD, POST');
    });

    it('400, not a 500, for a body nested deeper than any DTO goes; ordinary nesting passes', async () => {
      const { key } = await makeAccount(t.app);
      const deep = `{"name":"deep","meta":{"x":${'['.repeat(1000)}${']'.repeat(1000)}}}`;
      const res = await t
        .http()
        .post('/api/v1/project')
        .set('X-API-KEY', key)
        .set('Content-Type', 'application/json')
        .send(deep);
      expectError(res, 400);
      expect(res.body.message).toMatch(/nests deeper than 32 levels/);
      expect(expectSuccess(await t.http().get('/api/v1/project').set('X-API-KEY', key)).data).toEqual([]);
      const fine = { name: 'nested', meta: { a: { b: { c: { d: [1, [2, [3]]] } } } } };
      expect(
        expectSuccess(await t.http().post('/api/v1/project').set('X-API-KEY', key).send(fine), 201).meta,
      ).toEqual(fine.meta);
    });

    it('422 for strings longer than their column, counted as stored (emoji variation selectors too)', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/project')
        .set('X-API-KEY', key)
        .send({ name: 'a\uFE0F'.repeat(255) });
      expectError(res, 422);
      expect(Object.keys(res.body.errors)).toEqual(['name']);
      expectError(
        await t
          .http()
          .post('/api/v1/api-keys')
          .set('X-API-KEY', key)
          .send({ name: '\u2764\uFE0F'.repeat(200) }),
        422,
      );
    });

    it('400 for malformed JSON', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .set('Content-Type', 'application/json')
        .send('{"name": ');
      expectError(res, 400);
      expect(res.body.message).toMatch(/malformed json/i);
    });

    it('400 for a JSON body that is not an object', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .set('Content-Type', 'application/json')
        .send('[1,2]');
      expectError(res, 400);
    });

    it('413 for an oversized body', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .send({ name: 'x'.repeat(5000) });
      expectError(res, 413);
    });

    it('415 for an unsupported content type', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .set('Content-Type', 'text/plain')
        .send('name=x');
      expectError(res, 415);
    });

    it('422 with errors keyed by field', async () => {
      const { key } = await makeAccount(t.app);
      const res = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .send({ project_id: 'seven', expires_at: 'never' });
      const body = expectError(res, 422, ['project_id', 'expires_at']);
      expect(Array.isArray(body.errors.project_id)).toBe(true);
    });

    it('404, not 400, for path ids that are not positive integers', async () => {
      const { key } = await makeAccount(t.app);
      for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
        expectError(await t.http().delete(`/api/v1/api-keys/${id}`).set('X-API-KEY', key), 404);
      }
    });

    it('404 for other spellings of an existing id (hex, exponent, leading zero, sign, spaces): the id is matched as sent', async () => {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      const id = Number(project.id);
      const spellings = [`0x${id.toString(16)}`, `0${id}`, `+${id}`, `%20${id}`, `${id}.0`, `${id}e0`];
      if (id % 10 === 0) spellings.push(`${id / 10}e1`);
      for (const spelling of spellings) {
        expectError(await t.http().get(`/api/v1/project/${spelling}`).set('X-API-KEY', key), 404);
        expectError(await t.http().delete(`/api/v1/project/${spelling}`).set('X-API-KEY', key), 404);
      }
      expectSuccess(await t.http().get(`/api/v1/project/${id}`).set('X-API-KEY', key));
    });
  });

  describe('API keys', () => {
    it('401 when the key is missing, 403 when it is unknown', async () => {
      expectError(await t.http().get('/api/v1/api-keys'), 401);
      expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', 'lg_not-a-real-key'), 403);
    });

    it('a license key is no substitute for an API key', async () => {
      expectError(
        await t.http().get('/api/v1/api-keys').set('X-LICENSE-KEY', '6a1f0a52-0000-4000-8000-000000000000'),
        401,
      );
    });

    it('403 for a revoked or an expired key', async () => {
      const user = await makeUser(t.app);
      const key = await makeApiKey(t.app, user);
      const list = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key));
      const id = list[0].id;
      const revoked = expectSuccess(await t.http().delete(`/api/v1/api-keys/${id}`).set('X-API-KEY', key));
      expect(revoked.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const res = expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key), 403);
      expect(res.message).toMatch(/revoked/i);

      const expiring = await makeApiKey(t.app, user, { expires_at: new Date(Date.now() + 1500) });
      expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', expiring));
      await new Promise((r) => setTimeout(r, 1600));
      expect(
        expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', expiring), 403).message,
      ).toMatch(/expired/i);
    });

    it('creates a key shown once, usable at once, never listed with its secret', async () => {
      const { key } = await makeAccount(t.app);
      const created = expectSuccess(
        await t
          .http()
          .post('/api/v1/api-keys')
          .set('X-API-KEY', key)
          .send({ name: 'ci', unknown: 'dropped' }),
        201,
      );
      expect(created.key).toMatch(/^lg_[A-Za-z0-9_-]{43}$/);
      expect(created.prefix).toBe(created.key.slice(0, 8));
      expect({ read_only: created.read_only, rolled_at: created.rolled_at }).toEqual({
        read_only: false,
        rolled_at: null,
      });
      expect(Object.keys(created).sort()).toEqual(
        [
          'created_at',
          'expires_at',
          'id',
          'key',
          'last_used_at',
          'name',
          'prefix',
          'project_id',
          'read_only',
          'revoked_at',
          'rolled_at',
          'updated_at',
        ].sort(),
      );
      const list = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', created.key));
      expect(list).toHaveLength(2);
      for (const item of list) {
        expect(item).not.toHaveProperty('key');
        expect(item).not.toHaveProperty('key_hash');
        expect(item).not.toHaveProperty('user_id');
      }
    });

    it("lists only the caller's own keys and cannot revoke another account's key", async () => {
      const a = await makeAccount(t.app);
      const b = await makeAccount(t.app);
      const bKeys = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', b.key));
      const aKeys = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', a.key));
      expect(aKeys.map((k: { id: number }) => k.id)).not.toContain(bKeys[0].id);
      expectError(await t.http().delete(`/api/v1/api-keys/${bKeys[0].id}`).set('X-API-KEY', a.key), 404);
      expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', b.key));
    });

    it('refuses expires_at in the past and an unknown project', async () => {
      const { key } = await makeAccount(t.app);
      expectError(
        await t
          .http()
          .post('/api/v1/api-keys')
          .set('X-API-KEY', key)
          .send({ expires_at: '2001-01-01T00:00:00Z' }),
        422,
        ['expires_at'],
      );
      expectError(
        await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ project_id: 424242 }),
        422,
        ['project_id'],
      );
    });
  });

  describe('docs and health', () => {
    it('serves the OpenAPI document with both security schemes', async () => {
      const res = await t.http().get('/api/docs-json');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual([
        'api-key',
        'license-key',
        'portal',
        'session',
      ]);
      expect(res.body.components.securitySchemes['api-key']).toMatchObject({
        type: 'apiKey',
        in: 'header',
        name: 'X-API-KEY',
      });
      expect(res.body.paths['/api/v1/api-keys']).toBeDefined();
    });

    it('serves Swagger UI', async () => {
      const res = await t.http().get('/api/docs/');
      expect(res.status).toBe(200);
      expect(res.text).toContain('swagger');
    });

    it('reports the database in health', async () => {
      const data = expectSuccess(await t.http().get('/api/v1/health'));
      expect(data.info.database.status).toBe('up');
      expect(expectSuccess(await t.http().get('/api/v1/health/live'))).toEqual({ status: 'ok' });
    });
  });
});

describe('root rate limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_ROOT_LIMIT: '3', THROTTLE_ROOT_TTL_SECONDS: '60' });
  });
  afterAll(async () => t.close());

  it('answers 429 in the envelope with Retry-After past the limit', async () => {
    for (let i = 0; i < 3; i++) expect((await t.http().get('/api/v1/')).status).toBe(200);
    const res = await t.http().get('/api/v1/');
    expectError(res, 429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
  });
});

describe('CORS for SDKs on customer sites', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('answers a preflight for the runtime headers from any origin', async () => {
    const res = await t
      .http()
      .options('/api/v1/project/has-paid')
      .set('Origin', 'https://shop.example.com')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'x-license-key, x-service-domain, content-type');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-headers'].toLowerCase()).toContain('x-license-key');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
  });

  it('exposes X-Request-Id and Retry-After to scripts', async () => {
    const res = await t.http().get('/api/v1/').set('Origin', 'https://shop.example.com');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toContain('Retry-After');
    expect(res.headers['access-control-expose-headers']).toContain('X-Request-Id');
  });
});

describe('CORS_ORIGINS as a list', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ CORS_ORIGINS: 'https://admin.example.com, https://shop.example.com' });
  });
  afterAll(async () => t.close());

  it('echoes a listed origin and varies by Origin', async () => {
    const res = await t.http().get('/api/v1/').set('Origin', 'https://shop.example.com');
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example.com');
    expect(res.headers.vary).toMatch(/Origin/i);
  });

  it('gives an unlisted origin no CORS grant', async () => {
    const res = await t
      .http()
      .options('/api/v1/project/has-paid')
      .set('Origin', 'https://evil.example.net')
      .set('Access-Control-Request-Method', 'POST');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

// One app with the default settings (MAX_UPLOAD_BYTES included) for the suites below.
describe('with default settings', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  describe('GET /metrics', () => {
    it('serves Prometheus text with the process and runtime metrics', async () => {
      const { key } = await makeAccount(t.app);
      const project = expectSuccess(
        await t
          .http()
          .post('/api/v1/project')
          .set('X-API-KEY', key)
          .send({ name: 'Metrics', has_paid: true }),
        201,
      );
      const license = expectSuccess(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/licenses`)
          .set('X-API-KEY', key)
          .send({ title: 'm' }),
        201,
      );
      expect(
        (
          await t
            .http()
            .post('/api/v1/project/has-paid?action=check_project')
            .set('X-LICENSE-KEY', license.uuid)
        ).status,
      ).toBe(200);
      expect((await t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', 'nope')).status).toBe(403);
      const res = await t.http().get('/metrics');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toContain('text/plain');
      expect(res.text).toMatch(/licensegate_runtime_checks_total\{outcome="paid"\} [1-9]/);
      expect(res.text).toMatch(/licensegate_runtime_checks_total\{outcome="refused_403"\} [1-9]/);
      expect(res.text).toContain('licensegate_process_resident_memory_bytes');
    });
  });

  describe('MAX_UPLOAD_BYTES at its default (5 MiB)', () => {
    it('parses a JSON body of exactly 5 MiB, and answers 413 to one byte more, on a management route and on the runtime check', async () => {
      expect(t.config.env.MAX_UPLOAD_BYTES).toBe(5 * 1024 * 1024);
      const { key } = await makeAccount(t.app);
      // {"name":"x","pad":"aaa…"}: the padding is an unknown field, ignored once parsed.
      const body = (size: number) =>
        `{"name":"x","pad":"${'a'.repeat(size - '{"name":"x","pad":""}'.length)}"}`;
      const send = (path: string, size: number) =>
        t
          .http()
          .post(path)
          .set('X-API-KEY', key)
          .set('X-LICENSE-KEY', 'none')
          .set('Content-Type', 'application/json')
          .send(body(size));
      expect((await send('/api/v1/api-keys', 5 * 1024 * 1024)).status).toBe(201);
      expect(expectError(await send('/api/v1/api-keys', 5 * 1024 * 1024 + 1), 413).message).toBe(
        'Request body is too large.',
      );
      expect((await send('/api/v1/project/has-paid', 5 * 1024 * 1024)).status).toBe(403);
      expect(expectError(await send('/api/v1/project/has-paid', 5 * 1024 * 1024 + 1), 413).message).toBe(
        'Request body is too large.',
      );
    });
  });

  describe('stored sizes (default MAX_UPLOAD_BYTES)', () => {
    it('422 for meta larger than 16384 characters of JSON, and for an API key expiring after the year 9999', async () => {
      const { key } = await makeAccount(t.app);
      const big = await t
        .http()
        .post('/api/v1/project')
        .set('X-API-KEY', key)
        .send({ name: 'big meta', meta: { k: 'a'.repeat(70_000) } });
      expectError(big, 422);
      expect(Object.keys(big.body.errors)).toEqual(['meta']);
      const late = await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .send({ name: 'late', expires_at: '+012000-01-01T00:00:00Z' });
      expectError(late, 422);
      expect(late.body.errors.expires_at[0]).toMatch(/before the year 10000/);
    });
  });
});
