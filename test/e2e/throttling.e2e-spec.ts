import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { makeAccount, makeLicense, makeProject } from '../factories/index.js';
import { expectError } from '../utils/envelope.js';
import { ManualClock } from '../utils/clock.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const LIMITS = { THROTTLE_API_LIMIT: '5', THROTTLE_RUNTIME_LIMIT: '4', THROTTLE_ROOT_LIMIT: '3' };

/** Sends `n` requests one after the other and returns their statuses. */
async function statuses(n: number, send: () => Promise<{ status: number }>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}

describe('rate limits per route class', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(LIMITS);
  });
  afterAll(async () => t.close());

  it('counts management calls per API key, with 429 and Retry-After in the envelope', async () => {
    const a = await makeAccount(t.app);
    const b = await makeAccount(t.app);
    expect(await statuses(5, () => t.http().get('/api/v1/api-keys').set('X-API-KEY', a.key))).toEqual([
      200, 200, 200, 200, 200,
    ]);
    const limited = await t.http().get('/api/v1/api-keys').set('X-API-KEY', a.key);
    expectError(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another key has its own allowance, and the root's per-IP limit is a separate counter.
    expect((await t.http().get('/api/v1/api-keys').set('X-API-KEY', b.key)).status).toBe(200);
    expect((await t.http().get('/api/v1/')).status).toBe(200);
  });

  it('counts runtime calls per license, and per address when no key is sent', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const one = await makeLicense(t, key, project.id, { title: 'one' });
    const two = await makeLicense(t, key, project.id, { title: 'two' });
    const check = (license?: string) => {
      const req = t.http().post('/api/v1/project/has-paid?action=check_project');
      return license ? req.set('X-LICENSE-KEY', license) : req;
    };
    expect(await statuses(4, () => check(one.uuid))).toEqual([200, 200, 200, 200]);
    const limited = await check(one.uuid);
    expectError(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await check(two.uuid)).status).toBe(200);
    // The same license sent as a body parameter is the same license.
    expect(
      (await t.http().post('/api/v1/project/has-paid?action=check_project').send({ license: one.uuid }))
        .status,
    ).toBe(429);
    // Without a key: 401 until the address is over the limit, then 429.
    expect(await statuses(5, () => check())).toEqual([401, 401, 401, 401, 429]);
  });

  it('counts keys too long to be a license key per address, not one allowance per made-up key', async () => {
    const oversized = () =>
      t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', randomBytes(60).toString('hex'));
    const answers = await Promise.all(Array.from({ length: 5 }, () => oversized()));
    expect(answers.map((res) => res.status).sort()).toEqual([403, 403, 403, 403, 429]);
    for (const res of answers.filter((r) => r.status === 403))
      expect(expectError(res, 403).message).toBe('Invalid license key.');
  });

  it('gives a key one allowance for the whole class, not one per route', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key);
    const calls = [
      () => t.http().get('/api/v1/api-keys').set('X-API-KEY', key),
      () => t.http().get('/api/v1/project').set('X-API-KEY', key),
      () => t.http().get(`/api/v1/project/${project.id}/domains`).set('X-API-KEY', key),
    ];
    // makeProject spent one call; four more on three different routes reach the limit of five.
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) seen.push((await calls[i % 3]()).status);
    expect(seen).toEqual([200, 200, 200, 200]);
    expectError(await calls[2](), 429);
    expectError(await calls[1](), 429);
  });

  it('counts has-paid and the injectable stream against the same license allowance', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { title: 'shared' });
    const hasPaid = () =>
      t.http().post('/api/v1/project/has-paid?action=check_project').set('X-LICENSE-KEY', license.uuid);
    const stream = () => t.http().get('/api/v1/injectable/stream').set('X-LICENSE-KEY', license.uuid);
    expect([
      (await hasPaid()).status,
      (await stream()).status,
      (await hasPaid()).status,
      (await stream()).status,
    ]).toEqual([200, 200, 200, 200]);
    expectError(await stream(), 429);
    expectError(await hasPaid(), 429);
  });

  it('counts payment deliveries per address: a license key sent along buys no allowance and spends none', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { title: 'bystander' });
    const deliver = (license: string, where: 'header' | 'query' = 'header') => {
      const path = '/api/v1/payments/stripe/no-such-token';
      const req = t.http().post(where === 'query' ? `${path}?license=${license}` : path);
      if (where === 'header') req.set('X-LICENSE-KEY', license);
      return req.set('Content-Type', 'application/json').send('{}');
    };
    // A made-up key per call, in the header or the query: still one allowance, the address's.
    const madeUp = [
      await deliver(randomUUID()),
      await deliver(randomUUID(), 'query'),
      await deliver(randomUUID()),
      await deliver(randomUUID(), 'query'),
    ];
    expect(madeUp.map((res) => res.status)).toEqual([404, 404, 404, 404]);
    for (let i = 0; i < 4; i++) {
      const limited = await deliver(license.uuid);
      expect(expectError(limited, 429).message).toMatch(/^Too many requests\. Retry after \d+ seconds?\.$/);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    }
    // The license sent along four times has its whole runtime allowance left.
    const check = () =>
      t.http().post('/api/v1/project/has-paid?action=check_project').set('X-LICENSE-KEY', license.uuid);
    expect(await statuses(4, check)).toEqual([200, 200, 200, 200]);
  });

  it('keeps the health endpoints out of every limit', async () => {
    expect(await statuses(8, () => t.http().get('/api/v1/health/live'))).toEqual(Array(8).fill(200));
  });
});

/** `n` calls, `width` at a time; the statuses in the order the calls were made. */
async function statusesInParallel(
  n: number,
  width: number,
  send: () => Promise<Response>,
): Promise<number[]> {
  const out: number[] = [];
  for (let done = 0; done < n; done += width) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(width, n - done) }, async () => {
        const res = await send();
        await res.arrayBuffer();
        return res.status;
      }),
    );
    out.push(...batch);
  }
  return out;
}

// Every other suite raises or lowers the limits; these run with the documented ones (README
// "Configuration": root 60, management 600, runtime 6000, each per 60 s). An empty value is the default.
describe('rate limits with the documented defaults', () => {
  let t: TestApp;
  // The window is the app's clock's: standing still, thousands of calls on a loaded machine all fall in
  // one window however long they take, and a test moves it on to see the window end.
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_ROOT_LIMIT: '' }, { clock });
  });
  afterAll(async () => t.close());

  const expect429 = async (res: Response) => {
    expect(res.status).toBe(429);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await res.json()).toEqual({
      status: 'error',
      message: expect.stringMatching(/too many requests/i),
      data: null,
      errors: null,
    });
  };

  it('GET / answers 60 times a minute per address, then 429 with Retry-After', async () => {
    expect(t.config.env.THROTTLE_ROOT_LIMIT).toBe(60);
    const root = () => fetch(`${t.url}/api/v1/`);
    expect(await statusesInParallel(60, 10, root)).toEqual(Array(60).fill(200));
    await expect429(await root());
  });

  it('management calls: 600 a minute per API key, then 429 with Retry-After', async () => {
    const { key } = await makeAccount(t.app);
    const list = () => fetch(`${t.url}/api/v1/api-keys`, { headers: { 'X-API-KEY': key } });
    expect(await statusesInParallel(600, 25, list)).toEqual(Array(600).fill(200));
    await expect429(await list());
  }, 60_000);

  it('runtime checks: 6000 a minute per license, then 429 with Retry-After', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id);
    const check = () =>
      fetch(`${t.url}/api/v1/project/has-paid?action=check_project`, {
        method: 'POST',
        headers: { 'X-LICENSE-KEY': license.uuid },
      });
    expect(await statusesInParallel(6000, 50, check)).toEqual(Array(6000).fill(200));
    await expect429(await check());
    // A minute on, the license has its 6000 again.
    clock.advance(60_000);
    expect((await check()).status).toBe(200);
  }, 120_000);

  it('payment deliveries: 6000 a minute per address, whatever license key is sent along, then 429', async () => {
    expect(t.config.env.THROTTLE_RUNTIME_LIMIT).toBe(6000);
    const deliver = () =>
      fetch(`${t.url}/api/v1/payments/stripe/no-such-token`, {
        method: 'POST',
        headers: { 'X-LICENSE-KEY': randomUUID(), 'Content-Type': 'application/json' },
        body: '{}',
      });
    expect(await statusesInParallel(6000, 50, deliver)).toEqual(Array(6000).fill(404));
    await expect429(await deliver());
  }, 120_000);
});
