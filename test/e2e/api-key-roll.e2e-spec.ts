import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeApiKey, makeProject } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** Rolling an API key with an overlap (docs/decisions.md#accounts-and-api-keys). */

const sleepUntil = async (time: number) => {
  const wait = time - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
};

describe('POST /api-keys/{id}/roll', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  const roll = (key: string, id: number, body?: object) => {
    const req = t.http().post(`/api/v1/api-keys/${id}/roll`).set('X-API-KEY', key);
    return body === undefined ? req : req.send(body);
  };
  const use = (key: string) => t.http().get('/api/v1/project').set('X-API-KEY', key);
  const keyId = async (key: string) =>
    expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key)).find(
      (k: { prefix: string }) => key.startsWith(k.prefix),
    ).id;

  it('by default keeps the old key working for a day, and gives a new key of the same name, scope and read_only', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key);
    const scoped = expectSuccess(
      await t
        .http()
        .post('/api/v1/api-keys')
        .set('X-API-KEY', key)
        .send({ name: 'deploy', project_id: project.id, read_only: true }),
      201,
    );
    const started = Date.now();
    const rolled = expectSuccess(await roll(key, scoped.id), 201);
    expect(rolled).toMatchObject({
      name: 'deploy',
      project_id: project.id,
      read_only: true,
      expires_at: null,
      revoked_at: null,
      rolled_at: null,
    });
    expect(rolled.key).toMatch(/^lg_[A-Za-z0-9_-]{43}$/);
    expect(rolled.prefix).toBe(rolled.key.slice(0, 8));
    expect(rolled.id).not.toBe(scoped.id);
    expect(rolled.previous_key).toMatchObject({
      id: scoped.id,
      name: 'deploy',
      revoked_at: null,
      rolled_at: expect.any(String),
    });
    expect(rolled.previous_key).not.toHaveProperty('key');
    // Whole seconds from now.
    const graceEnd = Date.parse(rolled.previous_key.expires_at);
    expect(graceEnd).toBeGreaterThan(started + 86_400_000 - 2000);
    expect(graceEnd).toBeLessThanOrEqual(Date.now() + 86_400_000);
    // Both work during the overlap, each in its scope.
    expectSuccess(await use(scoped.key));
    expect(expectSuccess(await use(rolled.key)).data.map((p: { id: number }) => p.id)).toEqual([project.id]);
    expect(
      expectError(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/domains`)
          .set('X-API-KEY', rolled.key)
          .send({ domain: 'a.example.com' }),
        403,
      ).message,
    ).toBe('This API key is read-only.');
    // Listings show both, with the old key's end.
    const listed = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key));
    expect(listed.find((k: { id: number }) => k.id === scoped.id)).toMatchObject({
      expires_at: rolled.previous_key.expires_at,
      rolled_at: rolled.previous_key.rolled_at,
    });
    expect(listed.find((k: { id: number }) => k.id === rolled.id)).toMatchObject({
      expires_at: null,
      rolled_at: null,
    });
  });

  it('stops the old key at the second its grace ends, and not before', async () => {
    const { key } = await makeAccount(t.app);
    const old = expectSuccess(
      await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'short' }),
      201,
    );
    const rolled = expectSuccess(await roll(key, old.id, { grace_seconds: 2 }), 201);
    const end = Date.parse(rolled.previous_key.expires_at);
    expect(end - Date.now()).toBeGreaterThan(900);
    expect(end - Date.now()).toBeLessThanOrEqual(2000);
    expectSuccess(await use(old.key));
    await sleepUntil(end - 300);
    expectSuccess(await use(old.key));
    await sleepUntil(end + 10);
    expect(expectError(await use(old.key), 403).message).toBe(
      'This API key has been rolled and its grace period is over: use the key that replaced it.',
    );
    expectSuccess(await use(rolled.key));
  });

  it('with grace_seconds 0 stops the old key at once', async () => {
    const { key } = await makeAccount(t.app);
    const rolled = expectSuccess(await roll(key, await keyId(key), { grace_seconds: 0 }), 201);
    expect(expectError(await use(key), 403).message).toMatch(/^This API key has been rolled/);
    expectSuccess(await use(rolled.key));
  });

  it('keeps an earlier expiry of the old key, and gives the new key the old expiry', async () => {
    const { user, key } = await makeAccount(t.app);
    const expiring = await makeApiKey(t.app, user, { expires_at: new Date(Date.now() + 3_600_000) });
    const id = await keyId(expiring);
    const expiresAt = expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key)).find(
      (k: { id: number }) => k.id === id,
    ).expires_at;
    const rolled = expectSuccess(await roll(key, id, { grace_seconds: 604_800 }), 201);
    expect({ previous: rolled.previous_key.expires_at, replacement: rolled.expires_at }).toEqual({
      previous: expiresAt,
      replacement: expiresAt,
    });
  });

  it('refuses a revoked, expired or already rolled key (409), another account’s (404), a scoped or read-only caller (403)', async () => {
    const { user, key } = await makeAccount(t.app);
    const other = await makeAccount(t.app);
    const project = await makeProject(t, key);
    const revoked = expectSuccess(
      await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'r' }),
      201,
    );
    expectSuccess(await t.http().delete(`/api/v1/api-keys/${revoked.id}`).set('X-API-KEY', key));
    expect(expectError(await roll(key, revoked.id), 409).message).toBe(
      'This API key has been revoked: it cannot be rolled.',
    );
    const expiring = await makeApiKey(t.app, user, { expires_at: new Date(Date.now() + 1200) });
    const expiringId = await keyId(expiring);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(expectError(await roll(key, expiringId), 409).message).toBe(
      'This API key has expired: it cannot be rolled.',
    );
    const once = expectSuccess(
      await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'once' }),
      201,
    );
    expectSuccess(await roll(key, once.id), 201);
    expect(expectError(await roll(key, once.id), 409).message).toBe(
      'This API key has already been rolled: roll its replacement instead.',
    );
    expect(expectError(await roll(other.key, once.id), 404).message).toBe('API key not found.');
    const scoped = await makeApiKey(t.app, user, { project_id: project.id });
    expect(expectError(await roll(scoped, once.id), 403).message).toBe(
      'This action requires a global API key; project-scoped keys cannot perform it.',
    );
    const readOnly = await makeApiKey(t.app, user, { read_only: true });
    expect(expectError(await roll(readOnly, await keyId(readOnly)), 403).message).toBe(
      'This API key is read-only.',
    );
    expectError(await roll(key, 999_999), 404);
  });

  it('answers 422 for a grace outside 0..604800 or not an integer', async () => {
    const { key } = await makeAccount(t.app);
    const id = expectSuccess(
      await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'g' }),
      201,
    ).id;
    for (const [grace, message] of [
      [-1, 'The grace seconds field must be at least 0.'],
      [604_801, 'The grace seconds field must not be greater than 604800.'],
      [1.5, 'The grace seconds field must be an integer.'],
      ['60', 'The grace seconds field must be an integer.'],
    ] as const) {
      expect({
        grace,
        errors: expectError(await roll(key, id, { grace_seconds: grace }), 422, ['grace_seconds']).errors,
      }).toEqual({ grace, errors: { grace_seconds: [message] } });
    }
    // Nothing was rolled.
    expect(
      expectSuccess(await t.http().get('/api/v1/api-keys').set('X-API-KEY', key)).find(
        (k: { id: number }) => k.id === id,
      ).rolled_at,
    ).toBeNull();
  });
});
