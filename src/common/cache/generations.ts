import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { RedisService } from './redis.js';

/*
 * Cache generations: how every cache of this service stays fresh (docs/architecture.md#caches-and-generations).
 *
 * Each project has a generation, a number that every write to the project (or to anything in it:
 * domains, licenses, injectables, its webhook settings) bumps right after it commits. A cached value
 * that depends on a project's rows is kept together with the generation it was loaded under, and
 * served only while that generation is still the current one: the first read after a write reloads.
 *
 * The one rule every cache follows: read the generation BEFORE the rows. A write that commits while
 * a load is under way bumps the generation after its commit; the load, which may have read the rows
 * from before the write, is then filed under a generation that is already stale and never served.
 * Reading the generation after the rows would file pre-write rows under the post-write generation.
 *
 * Where the generation lives: in this process without Redis; with REDIS_URL in Redis, so that a write
 * on one instance makes every instance's caches stale. While Redis cannot be reached the generation is
 * unknown (null): callers skip their cache and read the database. A bump Redis did not take, or an
 * outage, makes the instance bump a global epoch (part of every generation) at its first answer from
 * Redis again, so nothing cached before the failure is ever served after it.
 *
 * Users: the read cache of the management reads (cache/read-cache.ts: the generation is part of the
 * key in a store shared by every instance), the runtime lookups (payments/runtime-lookup.service.ts)
 * and the runtime's payload pages (injectables/injectables.service.ts), the last two in process with
 * ProjectScopedCache below, and the activations the counters remember (payments/counters.service.ts:
 * kept under the generation of the runtime entry they were recorded for).
 */

@Injectable()
export class ProjectGenerations {
  private readonly local = new Map<number, number>();
  private readonly logger = new Logger('ProjectGenerations');
  private sawOutage = false;

  constructor(private readonly redis: RedisService) {}

  /**
   * The current generation when this process alone keeps it (no Redis), without waiting; undefined
   * when it must be asked with get().
   */
  known(projectId: number): string | undefined {
    return this.redis.client ? undefined : String(this.local.get(projectId) ?? 0);
  }

  /** The current generation, or null when it cannot be known (Redis down): do not use the cache then. */
  async get(projectId: number): Promise<string | null> {
    const client = this.redis.client;
    if (!client) return String(this.local.get(projectId) ?? 0);
    try {
      if (this.sawOutage) {
        // First answer after a failure (the connection dropped, or a bump was refused while it stayed
        // up): bump the epoch before trusting anything cached.
        await client.incr(this.redis.key('gen:epoch'));
        this.sawOutage = false;
        this.logger.warn('Redis answers again: bumped the cache epoch, so nothing cached before the failure is served');
      }
      const [epoch, generation] = await client.mget(this.redis.key('gen:epoch'), this.redis.key(`gen:${projectId}`));
      return `${epoch ?? 0}.${generation ?? 0}`;
    } catch {
      this.sawOutage = true;
      return null;
    }
  }

  async bump(projectId: number): Promise<void> {
    this.local.set(projectId, (this.local.get(projectId) ?? 0) + 1);
    const client = this.redis.client;
    if (!client) return;
    try {
      await client.incr(this.redis.key(`gen:${projectId}`));
    } catch (error) {
      this.sawOutage = true;
      this.logger.warn(`could not bump generation of project ${projectId}: ${(error as Error).message}`);
    }
  }
}


/**
 * A bounded in-process cache of values that each depend on one project's rows, kept with the
 * generation read before they were loaded and served only while it is current.
 */
export class ProjectScopedCache<K extends {}, V extends {}> {
  private readonly lru: LRUCache<K, { generation: string; value: V }>;

  constructor(
    private readonly generations: ProjectGenerations,
    /** At most `max` entries, or at most `maxSize` by `sizeOf` (payloads: their bytes). */
    bound: { max: number } | { maxSize: number; sizeOf: (value: V) => number },
  ) {
    this.lru =
      'max' in bound
        ? new LRUCache({ max: bound.max })
        : new LRUCache({ maxSize: bound.maxSize, sizeCalculation: (entry) => Math.max(1, bound.sizeOf(entry.value)) });
  }

  /** The value for `key` of `projectId`'s rows: cached while current, else loaded (and kept when the generation is known). */
  async get(projectId: number, key: K, load: () => Promise<V>): Promise<V> {
    const generation = this.generations.known(projectId) ?? (await this.generations.get(projectId));
    const cached = generation === null ? undefined : this.lru.get(key);
    if (cached && cached.generation === generation) return cached.value;
    const value = await load();
    if (generation !== null) this.lru.set(key, { generation, value });
    return value;
  }
}
