import { describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { memoryStore } from './cache.module.js';
import { ChangeCounterGenerations } from './change-counter-generations.js';
import { RedisGenerations } from './redis-generations.js';
import type { RedisService } from './redis.js';

/** A Redis stand-in: counters bumped by the scripts' INCR, what they PUBLISH, and a switch that makes writes fail while "connected". */
function fakeRedis() {
  const store = new Map<string, number>();
  const published: string[] = [];
  const state = { failWrites: false };
  const client = {
    status: 'ready',
    // Both scripts INCR KEYS[1] and PUBLISH ARGV[1] on KEYS[2].
    eval: async (_script: string, _keys: number, counter: string, _channel: string, message: string) => {
      if (state.failWrites) throw new Error('READONLY You can not write against a read only replica.');
      store.set(counter, (store.get(counter) ?? 0) + 1);
      published.push(message.split(' ').slice(1, 2).join(''));
      return 0;
    },
    mget: async (...keys: string[]) => keys.map((k) => (store.has(k) ? String(store.get(k)) : null)),
  };
  const redis = { client, key: (name: string) => `t:${name}` } as unknown as RedisService;
  return { redis, state, published };
}

describe('ProjectGenerations with Redis', () => {
  it('never hands out a pre-failure shared generation after a bump Redis refused while connected, and says so', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { redis, state, published } = fakeRedis();
    const generations = new RedisGenerations(redis);
    const before = await generations.shared(7);
    state.failWrites = true;
    await generations.bump(7); // the write committed, but its bump was refused
    state.failWrites = false;
    const after = await generations.shared(7);
    expect(after).not.toBeNull();
    expect(after).not.toBe(before);
    // Once bumped, the generation is stable again until the next write.
    expect(await generations.shared(7)).toBe(after);
    // Every instance was told to drop everything it cached ('*'), since none heard of project 7's write.
    expect(published).toEqual(['*']);
    expect(warned.mock.calls.map(([message]) => message)).toEqual([
      'could not bump generation of project 7: READONLY You can not write against a read only replica.',
      'Redis answers again: every instance drops what it cached, so nothing cached before the failure is served',
    ]);
    warned.mockRestore();
  });

  it('trusts nothing cached in process until its subscription is confirmed', () => {
    const generations = new RedisGenerations(fakeRedis().redis);
    expect(generations.current(7)).toBeNull();
  });
});

describe('ProjectGenerations without Redis', () => {
  it('answers from memory, and a bump makes the project, and only it, stale at once', async () => {
    const generations = new ChangeCounterGenerations();
    const seven = generations.current(7);
    const eight = generations.current(8);
    expect(seven).not.toBeNull();
    await generations.bump(7);
    expect(generations.current(7)).not.toBe(seven);
    expect(generations.current(8)).toBe(eight);
    expect(generations.current(7)).toBe(generations.current(7));
  });
});

describe('the read cache in process', () => {
  it('serves the stored answer itself, frozen, not a copy made through JSON', async () => {
    const store = memoryStore(2);
    const answer = { data: [{ id: 1, created_at: new Date(0) }] };
    await store.set('read:1', answer, 60_000);
    const hit = (await store.get('read:1')) as typeof answer;
    expect(hit).toBe(answer);
    expect(Object.isFrozen(hit.data[0])).toBe(true);
    expect(hit.data[0].created_at).toBeInstanceOf(Date);
    expect(JSON.stringify(hit)).toBe('{"data":[{"id":1,"created_at":"1970-01-01T00:00:00.000Z"}]}');
  });

  it('keeps at most its bound of answers, and forgets an answer past its TTL', async () => {
    const store = memoryStore(2);
    await store.set('a', { n: 1 });
    await store.set('b', { n: 2 });
    await store.set('c', { n: 3 });
    expect(await store.get('a')).toBeUndefined();
    expect(await store.get('c')).toEqual({ n: 3 });
    jest.useFakeTimers({ now: Date.now() });
    try {
      await store.set('short', { n: 4 }, 1_000);
      jest.advanceTimersByTime(999);
      expect(await store.get('short')).toEqual({ n: 4 });
      jest.advanceTimersByTime(2);
      expect(await store.get('short')).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });
});
