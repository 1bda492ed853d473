import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
} from '../factories/index.js';
import { TEST_REDIS_URL } from '../utils/processes.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const LIMITS = { THROTTLE_API_LIMIT: '5', THROTTLE_RUNTIME_LIMIT: '4', THROTTLE_ROOT_LIMIT: '3' };

describe('rate limits shared across instances through Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const env = {
      ...LIMITS,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `lgtest:${randomBytes(4).toString('hex')}:`,
    };
    a = await createTestApp(env);
    b = await createTestApp(env, { databaseUrl: a.config.env.DATABASE_URL });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('counts a key’s calls on both instances together', async () => {
    const { key } = await makeAccount(a.app);
    const alternate: number[] = [];
    for (let i = 0; i < 6; i++)
      alternate.push((await (i % 2 ? b : a).http().get('/api/v1/api-keys').set('X-API-KEY', key)).status);
    expect(alternate).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

/**
 * `count` requests spread over `urls` (alternating), `parallel` in flight on each, as fast as the
 * instances answer; returns how many got each status, and the Retry-After of the refusals.
 */
async function hammer(
  urls: string[],
  count: number,
  parallel: number,
  init: (i: number) => [string, RequestInit],
) {
  const statuses = new Map<number, number>();
  const retryAfter = new Set<string | null>();
  let next = 0;
  await Promise.all(
    urls.flatMap((url) =>
      Array.from({ length: parallel }, async () => {
        while (next < count) {
          const [path, options] = init(next++);
          const res = await fetch(url + path, options);
          await res.arrayBuffer();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 429) retryAfter.add(res.headers.get('retry-after'));
        }
      }),
    ),
  );
  return {
    ok: statuses.get(200) ?? 0,
    refused: statuses.get(429) ?? 0,
    other: count - (statuses.get(200) ?? 0) - (statuses.get(429) ?? 0),
    retryAfter,
  };
}

/**
 * Each instance counts in process and reconciles with Redis (docs/decisions.md#rate-limits): with the
 * default limits, two instances taking calls for one caller at once admit at least the limit and at
 * most 10 % more in a window, and refuse the rest with Retry-After.
 */
describe('rate limits at their defaults, two instances counting in process', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const env = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `lgtest:${randomBytes(4).toString('hex')}:` };
    a = await createTestApp(env);
    b = await createTestApp(env, { databaseUrl: a.config.env.DATABASE_URL });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('management calls of one API key (600 a minute): between 600 and 660 admitted', async () => {
    expect(a.config.env.THROTTLE_API_LIMIT).toBe(600);
    const key = await makeApiKey(a.app, await makeUser(a.app));
    const result = await hammer([a.url, b.url], 900, 16, () => [
      '/api/v1/api-keys',
      { headers: { 'x-api-key': key } },
    ]);
    console.log(`management, limit 600, two instances: ${result.ok} admitted, ${result.refused} refused`);
    expect(result.other).toBe(0);
    expect(result.ok).toBeGreaterThanOrEqual(600);
    expect(result.ok).toBeLessThanOrEqual(660);
    expect([...result.retryAfter].every((seconds) => Number(seconds) >= 1 && Number(seconds) <= 60)).toBe(
      true,
    );
  }, 60_000);

  it('runtime checks of one license (6000 a minute): between 6000 and 6600 admitted', async () => {
    expect(a.config.env.THROTTLE_RUNTIME_LIMIT).toBe(6000);
    const { key } = await makeAccount(a.app);
    const project = await makeProject(a, key, { has_paid: true });
    const domain = await makeDomain(a, key, project.id, { has_paid: true });
    const license = await makeLicense(a, key, project.id);
    const headers = { 'x-license-key': license.uuid, 'x-service-domain': domain.domain };
    const result = await hammer([a.url, b.url], 8000, 16, () => [
      '/api/v1/project/has-paid',
      { method: 'POST', headers },
    ]);
    console.log(`runtime, limit 6000, two instances: ${result.ok} admitted, ${result.refused} refused`);
    expect(result.other).toBe(0);
    expect(result.ok).toBeGreaterThanOrEqual(6000);
    expect(result.ok).toBeLessThanOrEqual(6600);
  }, 120_000);
});
