import { describe, expect, it } from '@jest/globals';
import { LRUCache } from 'lru-cache';
import { growingLru } from './growing-lru.js';

describe('growingLru', () => {
  it('keeps at most max entries, pushing out the least recently used', () => {
    const lru = growingLru<string, number>(3);
    for (const [i, key] of ['a', 'b', 'c'].entries()) lru.set(key, i);
    lru.get('a');
    lru.set('d', 3);
    expect([...lru.keys()].sort()).toEqual(['a', 'c', 'd']);
    expect(lru.size).toBe(3);
  });

  it('allocates nothing ahead for its bound, where lru-cache with max does', () => {
    const heapAfter = (make: () => unknown): number => {
      global.gc?.();
      const before = process.memoryUsage().heapUsed;
      const kept = make();
      const grown = process.memoryUsage().heapUsed - before;
      expect(kept).toBeDefined();
      return grown;
    };
    const preallocated = heapAfter(() => new LRUCache<string, number>({ max: 1_000_000 }));
    const growing = heapAfter(() => growingLru<string, number>(1_000_000));
    expect(preallocated).toBeGreaterThan(10_000_000); // 28 bytes an entry, minus what V8 shares
    expect(growing).toBeLessThan(100_000);
  });
});
