import { LRUCache } from 'lru-cache';

/**
 * A bounded in-process store for Keyv. Keyv calls `set(key, value, ttlMs)` with a number, which
 * lru-cache expects inside an options object; this adapter translates.
 */
export class LruStore {
  private readonly lru: LRUCache<string, object>;

  /** At most `max` entries and about `maxBytes` of JSON, whichever comes first. */
  constructor(max: number, maxBytes = 32 * 1024 * 1024) {
    this.lru = new LRUCache<string, object>({
      max,
      maxSize: maxBytes,
      sizeCalculation: (value) => Math.max(1, JSON.stringify(value)?.length ?? 1),
    });
  }

  get(key: string): object | undefined {
    return this.lru.get(key);
  }

  set(key: string, value: object, ttl?: number): boolean {
    this.lru.set(key, value, typeof ttl === 'number' && ttl > 0 ? { ttl } : undefined);
    return true;
  }

  delete(key: string): boolean {
    return this.lru.delete(key);
  }

  has(key: string): boolean {
    return this.lru.has(key);
  }

  clear(): void {
    this.lru.clear();
  }
}
