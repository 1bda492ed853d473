import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import request, { type Response } from 'supertest';
import { expectSuccess } from '../utils/envelope.js';
import { freePort, stop, TEST_REDIS_URL, waitFor } from '../utils/processes.js';
import { createTestApp, createTestDatabase, type TestApp } from '../utils/test-app.js';

/**
 * Two service processes on one MariaDB database and no Redis (docs/security.md): a revoke, a lock, a delete
 * or a domain set unpaid made through the first stops working on the second within 5 s, the
 * runtime caches' age bound without Redis (docs/security.md). Real processes, so a bounded wait.
 */
describe('two instances on one MariaDB without REDIS_URL', () => {
  let db: { url: string; drop: () => Promise<void> };
  const apps: ChildProcess[] = [];
  const urls: string[] = [];
  let apiKey = '';
  const http = (i: number) => request(urls[i]);
  const BOUND_MS = 5000;

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
    db = await createTestDatabase();
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      APP_KEY: randomBytes(32).toString('base64'),
      DATABASE_URL: db.url,
      REDIS_URL: '',
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      apps.push(
        spawn(process.execPath, ['dist/src/main.js'], {
          env: { ...env, PORT: String(port) },
          stdio: ['ignore', 'ignore', 'inherit'],
        }),
      );
      urls.push(`http://127.0.0.1:${port}`);
      await waitFor(async () => (await fetch(`${urls[i]}/api/v1/health/live`).catch(() => null))?.ok, 60_000);
    }
    const email = `nored-${randomBytes(3).toString('hex')}@example.test`;
    execFileSync(process.execPath, ['dist/src/cli.js', 'users:create', '--email', email], { env });
    apiKey = JSON.parse(
      execFileSync(process.execPath, ['dist/src/cli.js', 'keys:create', '--email', email], {
        env,
      }).toString(),
    ).key;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(apps.map(stop));
    await db?.drop();
  });

  const api = (method: 'post' | 'patch' | 'delete', path: string, body?: object) =>
    http(0)[method](`/api/v1${path}`).set('X-API-KEY', apiKey).send(body);
  const check = (i: number, uuid: string, domain: string) =>
    http(i).post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', domain);

  it.each([
    ['a license revoked', (p: number, l: number) => api('post', `/project/${p}/licenses/${l}/revoke`)],
    ['a project locked', (p: number) => api('post', `/project/${p}/lock`, { reason: 'overdue' })],
    ['a project deleted', (p: number) => api('delete', `/project/${p}`)],
    [
      'a domain set unpaid',
      (p: number, _l: number, d: number) => api('patch', `/project/${p}/domains/${d}`, { has_paid: false }),
    ],
  ] as const)(
    '%s through one instance stops working on the other within 5 s',
    async (_name, change) => {
      const project = expectSuccess(
        await api('post', '/project', { name: `p-${randomBytes(3).toString('hex')}`, has_paid: true }),
        201,
      );
      const domain = expectSuccess(
        await api('post', `/project/${project.id}/domains`, {
          domain: `d-${randomBytes(3).toString('hex')}.example.com`,
          has_paid: true,
        }),
        201,
      );
      const license = expectSuccess(
        await api('post', `/project/${project.id}/licenses`, { title: 'l' }),
        201,
      );
      const paid = (res: Response) => res.status === 200 && res.body.data?.has_paid === true;
      for (let i = 0; i < 20; i++) expect(paid(await check(1, license.uuid, domain.domain))).toBe(true);
      expect((await change(project.id, license.id, domain.id)).status).toBe(200);
      const written = Date.now();
      let lastPaid = -1;
      while (Date.now() - written < BOUND_MS + 1500) {
        const sent = Date.now() - written;
        if (paid(await check(1, license.uuid, domain.domain))) lastPaid = sent;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(lastPaid).toBeLessThan(BOUND_MS);
    },
    30_000,
  );
});

/** With REDIS_URL the count of unknown keys is shared: two instances together allow the limit, not twice it. */
describe('unknown keys counted per address across instances through Redis', () => {
  let one: TestApp;
  let two: TestApp;

  beforeAll(async () => {
    const env = {
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `lgtest:${randomBytes(4).toString('hex')}:`,
      THROTTLE_AUTH_FAILURES_LIMIT: '10',
      TRUST_PROXY: 'loopback',
    };
    one = await createTestApp(env);
    two = await createTestApp(env, { databaseUrl: one.config.env.DATABASE_URL });
  }, 60_000);
  afterAll(async () => {
    await two?.close();
    await one?.close();
  });

  it('the 11th unknown key from one address, spread over two instances, is a 429', async () => {
    const guess = (t: TestApp) =>
      t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', randomUUID());
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await guess(i % 2 === 0 ? one : two)).status);
    expect(statuses).toEqual(Array(10).fill(403));
    // Redis hears each instance's counts within a few hundred milliseconds.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const refused = await guess(one);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('one key sent to both instances again and again counts once', async () => {
    const from = '198.51.100.77';
    const repeated = randomUUID();
    const send = (t: TestApp, key: string) =>
      t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', key).set('X-Forwarded-For', from);
    for (let i = 0; i < 30; i++) expect((await send(i % 2 === 0 ? one : two, repeated)).status).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // 1 counted: 9 more distinct keys are still answered 403, the 11th distinct is refused.
    for (let i = 0; i < 9; i++) expect((await send(i % 2 === 0 ? one : two, randomUUID())).status).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await send(one, randomUUID())).status).toBe(429);
  });
});
