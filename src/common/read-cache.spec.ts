import { describe, expect, it } from '@jest/globals';
import { ProjectGenerations } from './read-cache.js';
import type { RedisService } from './redis.js';

/** A Redis stand-in: a map of counters, and a switch that makes INCR fail while "connected". */
function fakeRedis() {
  const store = new Map<string, number>();
  const state = { failIncr: false };
  const client = {
    incr: async (key: string) => {
      if (state.failIncr) throw new Error('READONLY You can not write against a read only replica.');
      store.set(key, (store.get(key) ?? 0) + 1);
      return store.get(key);
    },
    mget: async (...keys: string[]) => keys.map((k) => (store.has(k) ? String(store.get(k)) : null)),
  };
  const redis = { client, key: (name: string) => `t:${name}` } as unknown as RedisService;
  return { redis, state };
}

describe('ProjectGenerations with Redis', () => {
  it('never hands out a pre-failure generation after a bump Redis refused while connected', async () => {
    const { redis, state } = fakeRedis();
    const generations = new ProjectGenerations(redis);
    const before = await generations.get(7);
    state.failIncr = true;
    await generations.bump(7); // the write committed, but its bump was refused
    state.failIncr = false;
    const after = await generations.get(7);
    expect(after).not.toBeNull();
    expect(after).not.toBe(before);
    // Once bumped, the generation is stable again until the next write.
    expect(await generations.get(7)).toBe(after);
  });
});
