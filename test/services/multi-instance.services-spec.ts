import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request, { type Response } from 'supertest';
import { expectSuccess } from '../utils/envelope.js';
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
    redis = spawn(
      'redis-server',
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
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
      apps.push(
        spawn(process.execPath, ['dist/src/main.js'], {
          env: { ...env, PORT: String(port) },
          stdio: ['ignore', 'ignore', 'inherit'],
        }),
      );
      urls.push(`http://127.0.0.1:${port}`);
      await waitFor(async () => (await fetch(`${urls[i]}/api/v1/health/live`)).ok);
    }
    const cli = execFileSync(
      process.execPath,
      ['dist/src/cli.js', 'users:create', '--email', 'multi@example.test'],
      { env: { ...env } },
    ).toString();
    expect(JSON.parse(cli).email).toBe('multi@example.test');
    apiKey = JSON.parse(
      execFileSync(process.execPath, ['dist/src/cli.js', 'keys:create', '--email', 'multi@example.test'], {
        env: { ...env },
      }).toString(),
    ).key;
    const project = expectSuccess(
      await http(0).post('/api/v1/project').set('X-API-KEY', apiKey).send({ name: 'Multi', has_paid: true }),
      201,
    );
    projectId = project.id;
    expectSuccess(
      await http(1)
        .post(`/api/v1/project/${projectId}/domains`)
        .set('X-API-KEY', apiKey)
        .send({ domain: 'multi.example.com', has_paid: true }),
      201,
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all(apps.map(stop));
    if (redis) await stop(redis);
    await db?.drop();
  });

  const license = async (i: number, body: Record<string, unknown>) =>
    expectSuccess(
      await http(i).post(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey).send(body),
      201,
    );
  const check = (i: number, uuid: string) =>
    http(i)
      .post('/api/v1/project/has-paid')
      .set('X-LICENSE-KEY', uuid)
      .set('X-Service-Domain', 'multi.example.com');

  it('a license created on A is listed fresh on B', async () => {
    const before = expectSuccess(
      await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey),
    );
    const created = await license(0, { title: `fresh-${randomBytes(3).toString('hex')}` });
    const after = expectSuccess(
      await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey),
    );
    expect(after.data.map((l: { id: number }) => l.id)).toContain(created.id);
    expect(after.data).toHaveLength(before.data.length + 1);
  });

  /**
   * How long after a write on B instance A still answers from before it. The write's answer leaves B
   * after its commit and after B has published it; from then on A is polled as fast as it answers.
   * Answers A gave to calls sent later than FRESH_MS after that are all fresh, or this fails.
   */
  const FRESH_MS = 50;
  async function staleFor(uuid: string, write: () => Promise<unknown>, fresh: (res: Response) => boolean) {
    for (let i = 0; i < 2; i++) expect(fresh(await check(0, uuid))).toBe(false); // warm on A, and served from its cache
    await write();
    const written = performance.now();
    let lastStale = -1;
    let freshInARow = 0;
    while (freshInARow < 5) {
      const sent = performance.now() - written;
      if (fresh(await check(0, uuid))) freshInARow++;
      else {
        lastStale = sent;
        freshInARow = 0;
      }
      if (sent > 5000) break;
    }
    return lastStale; // -1: the very next call was fresh
  }

  it(`a write on B reaches A within ${FRESH_MS} ms: revoke, lock, payment flip, delete of a license and of a project`, async () => {
    const refusal = (message: RegExp) => (res: Response) =>
      res.status === 403 && message.test(res.body.message);
    const lags: Record<string, number> = {};
    const revoked = await license(0, { title: `revoke-${randomBytes(3).toString('hex')}` });
    lags.revoke = await staleFor(
      revoked.uuid,
      async () =>
        expectSuccess(
          await http(1)
            .post(`/api/v1/project/${projectId}/licenses/${revoked.id}/revoke`)
            .set('X-API-KEY', apiKey),
        ),
      refusal(/revoked/),
    );
    // The instance that writes sees its write at its very next call.
    expectSuccess(
      await http(0)
        .post(`/api/v1/project/${projectId}/licenses/${revoked.id}/reactivate`)
        .set('X-API-KEY', apiKey),
    );
    expect((await check(0, revoked.uuid)).status).toBe(200);
    const deleted = await license(0, { title: `delete-${randomBytes(3).toString('hex')}` });
    lags['license delete'] = await staleFor(
      deleted.uuid,
      async () =>
        expectSuccess(
          await http(1)
            .delete(`/api/v1/project/${projectId}/licenses/${deleted.id}`)
            .set('X-API-KEY', apiKey),
        ),
      refusal(/^Invalid license key\.$/),
    );

    // A project of its own for the project-wide writes.
    const other = expectSuccess(
      await http(0)
        .post('/api/v1/project')
        .set('X-API-KEY', apiKey)
        .send({ name: `Fresh ${randomBytes(3).toString('hex')}`, has_paid: true }),
      201,
    );
    const domain = expectSuccess(
      await http(1)
        .post(`/api/v1/project/${other.id}/domains`)
        .set('X-API-KEY', apiKey)
        .send({ domain: 'multi.example.com', has_paid: true }),
      201,
    );
    const make = async () =>
      expectSuccess(
        await http(0)
          .post(`/api/v1/project/${other.id}/licenses`)
          .set('X-API-KEY', apiKey)
          .send({ title: `f-${randomBytes(3).toString('hex')}` }),
        201,
      );
    const paidFalse = (res: Response) => res.status === 200 && res.body.data.has_paid === false;
    const flipped = await make();
    lags['payment flip'] = await staleFor(
      flipped.uuid,
      async () =>
        expectSuccess(
          await http(1)
            .patch(`/api/v1/project/${other.id}/domains/${domain.id}`)
            .set('X-API-KEY', apiKey)
            .send({ has_paid: false }),
        ),
      paidFalse,
    );
    const locked = await make();
    const back = async () =>
      expectSuccess(
        await http(1)
          .patch(`/api/v1/project/${other.id}/domains/${domain.id}`)
          .set('X-API-KEY', apiKey)
          .send({ has_paid: true }),
      );
    await back();
    lags.lock = await staleFor(
      locked.uuid,
      async () =>
        expectSuccess(
          await http(1).post(`/api/v1/project/${other.id}/lock`).set('X-API-KEY', apiKey).send({}),
        ),
      refusal(/^Project is locked\.$/),
    );
    expectSuccess(await http(1).post(`/api/v1/project/${other.id}/unlock`).set('X-API-KEY', apiKey));
    lags['project delete'] = await staleFor(
      locked.uuid,
      async () => expectSuccess(await http(1).delete(`/api/v1/project/${other.id}`).set('X-API-KEY', apiKey)),
      refusal(/no longer exists/),
    );

    console.log(
      `stale on the other instance after the write's answer, ms (-1: the very next call was fresh): ${JSON.stringify(lags)}`,
    );
    for (const lag of Object.values(lags)) expect(lag).toBeLessThanOrEqual(FRESH_MS);
    // And measured inside A, from the commit on B to A applying it: every one within the bound.
    const metrics = await (await fetch(`${urls[0]}/metrics`)).text();
    const bucket = (le: string) =>
      Number(
        new RegExp(`^licensegate_cache_invalidation_delay_seconds_bucket\\{le="${le}"\\} (\\d+)$`, 'm').exec(
          metrics,
        )?.[1],
      );
    const count = Number(/^licensegate_cache_invalidation_delay_seconds_count (\d+)$/m.exec(metrics)?.[1]);
    console.log(
      `A applied ${count} invalidations: ${bucket('0.001')} within 1 ms, ${bucket('0.005')} within 5 ms, ${bucket('0.05')} within 50 ms`,
    );
    expect(count).toBeGreaterThanOrEqual(6);
    expect(bucket('0.05')).toBe(count);
  });

  it('60 parallel checks split over both instances on a daily limit of 20 give exactly 20 successes', async () => {
    for (let round = 0; round < 2; round++) {
      const l = await license(round, {
        title: `race-${round}-${randomBytes(3).toString('hex')}`,
        max_usage_per_day: 20,
      });
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => check(i, l.uuid)));
      const codes = results.map((r) => r.status);
      expect(codes.filter((c) => c === 200)).toHaveLength(20);
      expect(codes.filter((c) => c === 429)).toHaveLength(40);
      const usage = expectSuccess(
        await http(round + 1)
          .get(`/api/v1/project/${projectId}/licenses/${l.id}/usage`)
          .set('X-API-KEY', apiKey),
      );
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
    expectSuccess(
      await http(0).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey),
    );
    expectSuccess(
      await http(1).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey),
    );
    expect((await check(1, l.uuid)).status).toBe(200);

    await stop(redis);
    // Writes still land, on either instance; reads on the other instance see them at once.
    const during = await license(1, { title: `during-${randomBytes(3).toString('hex')}` });
    expectSuccess(
      await http(0).post(`/api/v1/project/${projectId}/licenses/${l.id}/revoke`).set('X-API-KEY', apiKey),
    );
    expect(
      expectSuccess(
        await http(1).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey),
      ).revoked_at,
    ).not.toBeNull();
    expect((await check(1, l.uuid)).status).toBe(403);
    const list = expectSuccess(
      await http(0).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey),
    );
    expect(list.data.map((x: { id: number }) => x.id)).toContain(during.id);
    const health = await http(0).get('/api/v1/health');
    expect(health.status).toBe(503);
    expect(health.body.data.error.redis.status).toBe('down');

    await startRedis();
    await waitFor(async () => (await http(1).get('/api/v1/health')).status === 200);
    await waitFor(async () => (await http(0).get('/api/v1/health')).status === 200);
    // After the outage both instances still answer from fresh state.
    expect(
      expectSuccess(
        await http(0).get(`/api/v1/project/${projectId}/licenses/${l.id}`).set('X-API-KEY', apiKey),
      ).revoked_at,
    ).not.toBeNull();
    expect((await check(0, l.uuid)).status).toBe(403);
    const after = expectSuccess(
      await http(1).get(`/api/v1/project/${projectId}/licenses`).set('X-API-KEY', apiKey),
    );
    expect(after.data.map((x: { id: number }) => x.id)).toContain(during.id);
  });
});
