import { LRUCache } from 'lru-cache';

/**
 * A bounded in-process store for Keyv. Keyv calls `set(key, value, ttlMs)` with a number, which
 * lru-cache expects inside an options object; this adapter translates.
 */
export class LruStore {
  private readonly lru: LRUCache<string, object>;

  constructor(max: number) {
    this.lru = new LRUCache<string, object>({ max, ttlAutopurge: false });
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
