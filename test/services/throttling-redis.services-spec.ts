import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { makeAccount } from '../factories/index.js';
import { TEST_REDIS_URL } from '../utils/processes.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const LIMITS = { THROTTLE_API_LIMIT: '5', THROTTLE_RUNTIME_LIMIT: '4', THROTTLE_ROOT_LIMIT: '3' };

describe('rate limits shared across instances through Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const env = { ...LIMITS, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `lgtest:${randomBytes(4).toString('hex')}:` };
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
    for (let i = 0; i < 6; i++) alternate.push((await (i % 2 ? b : a).http().get('/api/v1/api-keys').set('X-API-KEY', key)).status);
    expect(alternate).toEqual([200, 200, 200, 200, 200, 429]);
  });
});
