import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeApiKey, makeProject } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** GET /server: what the console needs to warn that no payment provider can reach an endpoint URL. */
describe('GET /server', () => {
  const apps: TestApp[] = [];
  afterAll(async () => Promise.all(apps.map((a) => a.close())));
  const app = async (env: Record<string, string>) => {
    const t = await createTestApp(env);
    apps.push(t);
    return t;
  };

  let local: TestApp;
  beforeAll(async () => {
    local = await app({});
  });

  it('without PUBLIC_URL: the local fallback endpoint URLs use, not set, not https', async () => {
    const { key } = await makeAccount(local.app);
    const info = expectSuccess(await local.http().get('/api/v1/server').set('X-API-KEY', key));
    expect(info).toEqual({
      public_url: expect.stringMatching(/^http:\/\/localhost:\d+$/),
      public_url_set: false,
      public_url_https: false,
    });
  });

  it.each([
    ['https://Licenses.Example.com/', 'https://licenses.example.com', true],
    ['http://10.0.0.5:8080', 'http://10.0.0.5:8080', false],
  ])('with PUBLIC_URL=%s: %s, set, https %s', async (env, public_url, https) => {
    const t = await app({ PUBLIC_URL: env });
    const { key } = await makeAccount(t.app);
    expect(expectSuccess(await t.http().get('/api/v1/server').set('X-API-KEY', key))).toEqual({
      public_url,
      public_url_set: true,
      public_url_https: https,
    });
  });

  it('answers a scoped read-only key; 401 without a key, 403 with an unknown one', async () => {
    const { user, key } = await makeAccount(local.app);
    const project = await makeProject(local, key);
    const scoped = await makeApiKey(local.app, user, { project_id: project.id, read_only: true });
    expect(
      expectSuccess(await local.http().get('/api/v1/server').set('X-API-KEY', scoped)).public_url_set,
    ).toBe(false);
    expect(expectError(await local.http().get('/api/v1/server'), 401).message).toBe(
      'API key missing: send it in the X-API-KEY header.',
    );
    expect(
      expectError(await local.http().get('/api/v1/server').set('X-API-KEY', 'lg_unknown'), 403).message,
    ).toBe('Invalid API key.');
  });
});
