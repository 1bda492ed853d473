import { describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { SharedThrottlerStorage } from './throttler-storage.js';

/**
 * A Redis stand-in that runs the storage's script the way Redis would (one window after the other,
 * atomically), answering after `latencyMs`; `calls` counts round trips.
 */
function fakeRedis(latencyMs = 1) {
  const counters = new Map<string, { hits: number; expiresAt: number }>();
  const markers = new Map<string, number>();
  const state = { calls: 0, down: false };
  const client = {
    status: 'ready',
    eval: async (_script: string, numKeys: number, ...rest: Array<string | number>) => {
      state.calls++;
      await new Promise((resolve) => setTimeout(resolve, latencyMs));
      if (state.down) throw new Error('Connection is closed.');
      const keys = rest.slice(0, numKeys) as string[];
      const args = rest.slice(numKeys).map(Number);
      const out: number[] = [];
      const now = Date.now();
      for (let w = 0; w < keys.length / 2; w++) {
        const [counter, marker] = [keys[w * 2], keys[w * 2 + 1]];
        const [n, ttl, limit, block] = args.slice(w * 4, w * 4 + 4);
        let blocked = (markers.get(marker) ?? 0) - now;
        const was = blocked > 0 ? 1 : 0;
        if (blocked <= 0) blocked = 0;
        let c = counters.get(counter);
        if (!c || c.expiresAt <= now) c = { hits: 0, expiresAt: now + ttl };
        c.hits += n;
        counters.set(counter, c);
        if (blocked === 0 && c.hits > limit) {
          markers.set(marker, now + block);
          blocked = block;
        }
        out.push(c.hits, c.expiresAt - now, blocked, was);
      }
      return out;
    },
  };
  return { client: client as unknown as Redis, state };
}

const MINUTE = 60_000;

/** `count` calls spread over `instances`, `parallel` at a time on each; returns how many were admitted. */
async function hammer(instances: SharedThrottlerStorage[], limit: number, count: number, parallel: number) {
  let admitted = 0;
  let sent = 0;
  await Promise.all(
    instances.flatMap((storage) =>
      Array.from({ length: parallel }, async () => {
        while (sent < count) {
          sent++;
          const record = await storage.increment('license:abc', MINUTE, limit, MINUTE, 'runtime');
          if (!record.isBlocked) admitted++;
          // Calls arrive over time, not all in one tick.
          if (sent % 7 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
        }
      }),
    ),
  );
  return admitted;
}

describe('SharedThrottlerStorage', () => {
  it('over two instances admits at least the limit and at most 10 % more, with far fewer round trips than calls', async () => {
    const { client, state } = fakeRedis();
    const instances = [new SharedThrottlerStorage(client, 't:'), new SharedThrottlerStorage(client, 't:')];
    const admitted = await hammer(instances, 1000, 3000, 20);
    expect(admitted).toBeGreaterThanOrEqual(1000);
    expect(admitted).toBeLessThanOrEqual(1000 - 1 + 2 * 50);
    expect(state.calls).toBeLessThan(3000 / 5);
  });

  it('on one instance admits exactly the limit', async () => {
    const { client } = fakeRedis();
    expect(await hammer([new SharedThrottlerStorage(client, 't:')], 1000, 3000, 20)).toBe(1000);
  });

  it('counts every call in Redis under a limit of 20 or less: calls alternating between two instances get exactly the limit', async () => {
    const { client, state } = fakeRedis();
    const [a, b] = [new SharedThrottlerStorage(client, 't:'), new SharedThrottlerStorage(client, 't:')];
    const blockedAnswers: boolean[] = [];
    for (let i = 0; i < 13; i++)
      blockedAnswers.push((await (i % 2 ? b : a).increment('key:k', MINUTE, 10, MINUTE, 'api')).isBlocked);
    expect(blockedAnswers).toEqual([...Array(10).fill(false), true, true, true]);
    // B learns of the block from Redis with the 12th; A knew it from the 11th and refuses the 13th from memory.
    expect(state.calls).toBe(12);
  });

  it('keeps a refused window blocked for the block duration, and says how long', async () => {
    const { client } = fakeRedis();
    const storage = new SharedThrottlerStorage(client, 't:');
    for (let i = 0; i < 3; i++) await storage.increment('ip:1', 10_000, 3, 30_000, 'root');
    const refused = await storage.increment('ip:1', 10_000, 3, 30_000, 'root');
    expect({ isBlocked: refused.isBlocked, timeToBlockExpire: refused.timeToBlockExpire }).toEqual({
      isBlocked: true,
      timeToBlockExpire: 30,
    });
  });

  it('counts in this process, and says so once, while Redis does not answer', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { client, state } = fakeRedis();
    state.down = true;
    const storage = new SharedThrottlerStorage(client, 't:');
    const answers = [];
    for (let i = 0; i < 4; i++)
      answers.push((await storage.increment('key:k', MINUTE, 3, MINUTE, 'api')).isBlocked);
    expect(answers).toEqual([false, false, false, true]);
    expect(warned.mock.calls.map(([message]) => message)).toEqual([
      'Redis unavailable for rate limits, counting in this process: Connection is closed.',
    ]);
    warned.mockRestore();
  });

  it('counts in this process without trying while the connection is down', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { client, state } = fakeRedis();
    (client as unknown as { status: string }).status = 'reconnecting';
    const storage = new SharedThrottlerStorage(client, 't:');
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push((await storage.increment('key:k', MINUTE, 2, MINUTE, 'api')).isBlocked);
    expect(answers).toEqual([false, false, true]);
    expect(state.calls).toBe(0);
    expect(warned.mock.calls.map(([message]) => message)).toEqual([
      'Redis unavailable for rate limits, counting in this process: Redis is not connected',
    ]);
    warned.mockRestore();
  });
});
