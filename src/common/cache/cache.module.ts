import { CacheModule as ReadCacheStoreModule } from '@nestjs/cache-manager';
import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createKeyvNonBlocking } from '@keyv/redis';
import { Keyv } from 'keyv';
import { AppConfig } from '../../config/app-config.js';
import { ChangeCounterGenerations } from './change-counter-generations.js';
import { ProjectGenerations } from './generations.js';
import { LruStore } from './lru-store.js';
import { RedisService } from './redis.js';
import { RedisGenerations } from './redis-generations.js';
import { RedisModule } from './redis.module.js';

/** The read cache's store: Redis when configured (shared by every instance), else a bounded LRU. */
function cacheStore(config: AppConfig): Keyv {
  const { REDIS_URL, REDIS_KEY_PREFIX } = config.env;
  if (REDIS_URL) {
    return createKeyvNonBlocking(
      {
        url: REDIS_URL,
        disableOfflineQueue: true,
        socket: { connectTimeout: 2000, reconnectStrategy: (n: number) => Math.min(n * 200, 2000) },
      },
      {
        namespace: `${REDIS_KEY_PREFIX}cache`,
        throwOnConnectError: false,
        throwOnErrors: false,
        connectionTimeout: 1000,
      },
    );
  }
  return memoryStore();
}

/**
 * The in-process store keeps each answer as the object it is, not as JSON: with Keyv's default
 * serializers a cached `per_page=50` list spent 15 % of its time in the reviver of JSON.parse
 * (docs/benchmarks.md#cached-reads-without-a-json-round-trip-2026-11-28). The store freezes what it
 * keeps (lru-store.ts), so a change to a served answer throws.
 */
export function memoryStore(max = 10_000): Keyv {
  return new Keyv({ store: new LruStore(max), serialize: undefined, deserialize: undefined });
}

/**
 * The project generations every cache is checked against (generations.ts) and the management read
 * cache's store (read-cache.ts): imported by the modules whose routes are a ProjectResource and by
 * those that keep a cache of their own.
 */
@Module({
  imports: [
    RedisModule,
    ReadCacheStoreModule.registerAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        stores: [cacheStore(config)],
        ttl: config.env.CACHE_TTL_SECONDS * 1000,
      }),
    }),
  ],
  providers: [
    {
      // How instances hear of each other's writes: Redis's pub/sub when configured, else the projects'
      // change counters (generations.ts).
      provide: ProjectGenerations,
      inject: [RedisService, { token: DataSource, optional: true }],
      useFactory: (redis: RedisService, dataSource?: DataSource): ProjectGenerations =>
        redis.client ? new RedisGenerations(redis) : new ChangeCounterGenerations(dataSource),
    },
  ],
  exports: [ProjectGenerations, ReadCacheStoreModule],
})
export class CacheModule {}
