import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { freePort, stop, waitFor } from '../utils/processes.js';
import { createTestDatabase } from '../utils/test-app.js';

/**
 * Two service processes on different ports sharing one database and one Redis (a private
 * redis-server, so that stopping it here disturbs nothing else). Requests alternate between them.
 */
describe('several instances on one database and one Redis', () => {
  let db: { url: string; drop: () => Promise<void> };
  let redisPort: number;
  let redis: ChildProcess;
  const apps: ChildProcess[] = [];
  const urls: string[] = [];
  const appKey = randomBytes(32).toString('base64');
  let apiKey = '';
  let projectId = 0;
  const http = (i: number) => request(urls[i % 2]);

  const startRedis = async () => {
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor(async () => {
      try {
        execFileSync('redis-cli', ['-p', String(redisPort), 'ping'], { stdio: 'pipe' });
        return true;
      } catch {
        return false;
      }
    });
  };

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
    db = await createTestDatabase();
    redisPort = await freePort();
    await startRedis();
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      APP_KEY: appKey,
      DATABASE_URL: db.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      THROTTLE_ROOT_LIMIT: '10',
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      // The first instance runs the migrations; the second starts once the first answers.
      apps.push(spawn(process.execPath, ['dist/src/main.js'], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] }));
      urls.push(`http://127.0.0.1:${port}`);
      await waitFor(async () => (await fetch(`${urls[i]}/api/v1/health/live`)).ok);
    }
    const cli = execFileSync(process.execPath, ['dist/src/cli.js', 'users:create', '--email', 'multi@example.test'], { env: { ...env } }).toString();
    expect(JSON.parse(cli).email).toBe('multi@example.test');
    apiKey = JSON.parse(execFileSync(process.execPath, ['dist/src/cli.js', 'keys:create', '--email', 'multi@example.test'], { env: { ...env } }).toString()).key;
    const project = expectSuccess(await http(0).post('/api/v1/project').set('X-API-KEY', apiKey).send({ name: 'Multi', has_paid: true }), 201);
    projectId = project.id;
    expectSuccess(await http(1).post(`/api/v1/project/${projectId}/domains`).set('X-API-KEY', apiKey).send({ domain: 'multi.example.com', has_paid: true }), 201);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(apps.map(stop));
    if (redis) await stop(redis);
    await db?.drop();
  });

  const license = async (i: number, body: Record<string, unknown>) =>
    expectSuccess(await http(i).post(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey).send(body), 201);
  const check = (i: number, uuid: string) => http(i).post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', 'multi.example.com');

  it('a license created on A is listed fresh on B', async () => {
    const before = expectSuccess(await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey));
    const created = await license(0, { title: `fresh-${randomBytes(3).toString('hex')}` });
    const after = expectSuccess(await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey));
    expect(after.data.map((l: { id: number }) => l.id)).toContain(created.id);
    expect(after.data).toHaveLength(before.data.length + 1);
  });

  it('a revoke on B is refused on A at the very next call', async () => {
    const l = await license(0, { title: `revoke-${randomBytes(3).toString('hex')}` });
    expect(expectSuccess(await check(0, l.uuid)).has_paid).toBe(true);
    expectSuccess(await http(1).post(`/api/v1/project/${projectId}/licenses/${l.id}/revoke`).set('X-API-KEY', apiKey));
    expect(expectError(await check(0, l.uuid), 403).message).toMatch(/revoked/);
    expectSuccess(await http(0).post(`/api/v1/project/${projectId}/licenses/${l.id}/reactivate`).set('X-API-KEY', apiKey));
    expect((await check(1, l.uuid)).status).toBe(200);
  });

  it('60 parallel checks split over both instances on a daily limit of 20 give exactly 20 successes', async () => {
    for (let round = 0; round < 2; round++) {
      const l = await license(round, { title: `race-${round}-${randomBytes(3).toString('hex')}`, max_usage_per_day: 20 });
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => check(i, l.uuid)));
      const codes = results.map((r) => r.status);
      expect(codes.filter((c) => c === 200)).toHaveLength(20);
      expect(codes.filter((c) => c === 429)).toHaveLength(40);
      const usage = expectSuccess(await http(round + 1).get(`/api/v1/project/${projectId}/licenses/${l.id}/usage`).set('X-API-KEY', apiKey));
      expect(usage.today.count).toBe(20);
    }
  });

  it('a rate limit is shared: the root allowance per IP counts calls on both instances', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 11; i++) codes.push((await http(i).get('/api/v1/')).status);
    expect(codes.slice(0, 10).every((c) => c === 200)).toBe(true);
    expect(codes[10]).toBe(429);
  });

  it('stopping Redis mid-run loses no write and serves nothing stale; its return changes nothing', async () => {
    const l = await license(0, { title: `outage-${randomBytes(3).toString('hex')}` });
    // Warm both instances' caches while Redis is up.
    expectSuccess(await http(0).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey));
    expectSuccess(await http(1).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey));
    expect((await check(1, l.uuid)).status).toBe(200);

    await stop(redis);
    // Writes still land, on either instance; reads on the other instance see them at once.
    const during = await license(1, { title: `during-${randomBytes(3).toString('hex')}` });
    expectSuccess(await http(0).post(`/api/v1/project/${projectId}/licenses/${l.id}/revoke`).set('X-API-KEY', apiKey));
    expect(expectSuccess(await http(1).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey)).revoked_at).not.toBeNull();
    expect((await check(1, l.uuid)).status).toBe(403);
    const list = expectSuccess(await http(0).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey));
    expect(list.data.map((x: { id: number }) => x.id)).toContain(during.id);
    const health = await http(0).get('/api/v1/health');
    expect(health.status).toBe(503);
    expect(health.body.data.error.redis.status).toBe('down');

    await startRedis();
    await waitFor(async () => (await http(1).get('/api/v1/health')).status === 200);
    await waitFor(async () => (await http(0).get('/api/v1/health')).status === 200);
    // After the outage both instances still answer from fresh state.
    expect(expectSuccess(await http(0).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey)).revoked_at).not.toBeNull();
    expect((await check(0, l.uuid)).status).toBe(403);
    const after = expectSuccess(await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey));
    expect(after.data.map((x: { id: number }) => x.id)).toContain(during.id);
  });
});
