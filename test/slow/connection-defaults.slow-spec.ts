import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import { makeAccount } from '../factories/index.js';
import { bigInjectable, neverRead } from '../utils/stalling-clients.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

// npm run test:slow: the connection timeouts at their defaults take 30-60 s of real time to show.
// The same behaviour with a 1 s timeout is in test/e2e/http-edges.e2e-spec.ts.

describe('connection timeouts with the defaults', () => {
  let t: TestApp;
  let key: string;
  let injectablePath: string;
  beforeAll(async () => {
    t = await createTestApp();
    ({ key } = await makeAccount(t.app));
    injectablePath = await bigInjectable(t, key);
  }, 60_000);
  afterAll(async () => t.close());

  // node finds a write stuck only at its second look (the first sees it moved since it began), so a
  // client that stops reading is dropped after one to two idle timeouts.
  it('idle 30 s, headers 20 s, whole request 300 s, keep-alive 65 s: a client that never reads is dropped after 30-60 s', async () => {
    expect(t.config.env.HTTP_IDLE_TIMEOUT_MS).toBe(30_000);
    const server = t.app.getHttpServer() as Server;
    expect({
      idle: server.timeout,
      headers: server.headersTimeout,
      request: server.requestTimeout,
      keepAlive: server.keepAliveTimeout,
    }).toEqual({
      idle: 30_000,
      headers: 20_000,
      request: 300_000,
      keepAlive: 65_000,
    });
    const after = await neverRead(t, injectablePath, key, 80_000);
    expect(after).toBeGreaterThanOrEqual(29_000);
    expect(after).toBeLessThan(75_000);
  }, 100_000);
});
