import { CacheModule } from '@nestjs/cache-manager';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { createKeyvNonBlocking } from '@keyv/redis';
import { Keyv } from 'keyv';
import { AppConfig } from '../config/app-config.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { HttpDrain } from './http/http-server.js';
import { LruStore } from './cache/lru-store.js';
import { Cursors } from '../database/pagination.js';
import { ProjectGenerations } from './cache/generations.js';
import { RedisService } from './cache/redis.js';
import { Clock } from './time.js';
import { AuthFailures } from './throttling/auth-failures.js';

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
  return new Keyv({ store: new LruStore(10_000) });
}

/** Process-wide singletons: configuration, the clock, cursors, Redis, the read cache and its invalidation. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, clock: Clock): DynamicModule {
    return {
      module: CoreModule,
      imports: [
        CacheModule.register({ stores: [cacheStore(config)], ttl: config.env.CACHE_TTL_SECONDS * 1000 }),
      ],
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Clock, useValue: clock },
        { provide: Cursors, useFactory: () => new Cursors(config.appKey) },
        RedisService,
        ProjectGenerations,
        UnitOfWork,
        HttpDrain,
        AuthFailures,
      ],
      exports: [
        AppConfig,
        Clock,
        Cursors,
        RedisService,
        ProjectGenerations,
        UnitOfWork,
        CacheModule,
        AuthFailures,
      ],
    };
  }
}
