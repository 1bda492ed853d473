import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
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
    // Measured in a process of its own with the collector at hand: in this one, a collection of other
    // garbage during the measurement would blur it.
    const retained = (make: string) =>
      Number(
        execFileSync(process.execPath, [
          '--expose-gc',
          '--input-type=module',
          '-e',
          `
          import { LRUCache } from 'lru-cache';
          import { growingLru } from ${JSON.stringify(resolve('dist/src/common/cache/growing-lru.js'))};
          const used = () => { gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
          const before = used();
          globalThis.kept = ${make};
          console.log(used() - before);`,
        ]).toString(),
      );
    expect(retained('new LRUCache({ max: 1_000_000 })')).toBeGreaterThan(20_000_000); // 28 bytes an entry
    expect(retained('growingLru(1_000_000)')).toBeLessThan(100_000);
  });
});
