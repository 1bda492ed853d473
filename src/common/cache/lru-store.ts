import { LRUCache } from 'lru-cache';

/** What an answer kept as objects takes in the heap, per byte of its JSON (measured: 1.42). */
const OBJECT_BYTES_PER_JSON_BYTE = 1.5;

/**
 * A bounded in-process store for Keyv. Keyv calls `set(key, value, ttlMs)` with a number, which
 * lru-cache expects inside an options object; this adapter translates.
 *
 * The read cache keeps its answers here as objects, not JSON (cache.module.ts), and every read of
 * one gets the same object: `set` freezes what it keeps, so code that changes a served answer throws
 * instead of changing the next one. An answer's size is taken as 1.5 × the length of its JSON:
 * measured for a page of 50 licenses, the objects took 1.42 × the bytes of their JSON in V8's heap,
 * so `maxBytes` bounds the heap they hold, not their JSON.
 */
export class LruStore {
  private readonly lru: LRUCache<string, object>;

  /** At most `max` entries and about `maxBytes` of heap, whichever comes first. */
  constructor(max: number, maxBytes = 32 * 1024 * 1024) {
    this.lru = new LRUCache<string, object>({
      max,
      maxSize: maxBytes,
      sizeCalculation: (value) =>
        Math.max(1, Math.ceil(OBJECT_BYTES_PER_JSON_BYTE * (JSON.stringify(value)?.length ?? 1))),
    });
  }

  get(key: string): object | undefined {
    return this.lru.get(key);
  }

  set(key: string, value: object, ttl?: number): boolean {
    this.lru.set(key, frozen(value), typeof ttl === 'number' && ttl > 0 ? { ttl } : undefined);
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

/**
 * `value` and the objects and arrays in it, frozen (the service runs in strict mode, so a change
 * throws). What freezing cannot stop: a Date changed through its setters, a Buffer's bytes. The read
 * cache's answers hold neither (their times are ISO strings by then, `IsoTimestamp` in
 * common/http/serialization.ts). An object already frozen is not walked.
 */
export function frozen<T>(value: T): T {
  // A typed array (a Buffer) cannot be frozen: it is left as it is.
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value) && !ArrayBuffer.isView(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) frozen(inner);
  }
  return value;
}
