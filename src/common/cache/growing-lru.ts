import { LRUCache } from 'lru-cache';

/**
 * An LRU of at most `max` entries whose memory grows with its use. Given `max`, lru-cache sizes its
 * arrays for that many entries when it is made (28 bytes each: 5.6 MB for 200,000); the runtime's
 * caches, bounded at 50,000 to 200,000 against made-up keys, held about 20 MB that way from the start
 * while holding a few thousand entries (docs/benchmarks.md#memory). Every entry counted as size 1
 * under `maxSize` bounds it the same, with nothing allocated ahead.
 */
export function growingLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  max: number,
  options: Pick<LRUCache.Options<K, V, unknown>, 'dispose' | 'ttl' | 'ttlResolution' | 'perf'> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: max, sizeCalculation: () => 1 });
}
