import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';

/**
 * The shared Redis connection when REDIS_URL is set; `client` is null otherwise. Commands fail fast
 * while Redis is down (no offline queue), so callers can fall back to the database at once.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  readonly client: Redis | null;
  readonly prefix: string;
  private readonly logger = new Logger('Redis');
  private down = false;

  constructor(config: AppConfig) {
    this.prefix = config.env.REDIS_KEY_PREFIX;
    const url = config.env.REDIS_URL;
    this.client = url
      ? new Redis(url, {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 2000,
          retryStrategy: (times) => Math.min(times * 200, 2000),
        })
      : null;
    this.client?.on('error', (error: Error) => {
      if (!this.down) this.logger.warn(`Redis unavailable: ${error.message}`);
      this.down = true;
    });
    this.client?.on('ready', () => {
      if (this.down) this.logger.log('Redis reachable again');
      this.down = false;
    });
  }

  /** Waits (briefly) for the first connection, so that the first requests do not fall back needlessly. */
  async onModuleInit(): Promise<void> {
    const client = this.client;
    if (!client || client.status === 'ready') return;
    // Not events.once: it rejects on the first 'error', and a Redis that is down at start-up must not
    // stop the service (the 'error' handler above reports it; ioredis keeps reconnecting).
    let ready = () => undefined as void;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      ready = resolve;
      client.once('ready', ready);
      timer = setTimeout(resolve, 3000);
    });
    client.off('ready', ready);
    clearTimeout(timer);
    if ((client.status as string) !== 'ready')
      this.logger.warn('Redis is not reachable yet: answering from the database meanwhile');
  }

  key(name: string): string {
    return this.prefix + name;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.client?.quit().catch(() => undefined);
  }
}

/** `promise`, or a rejection after `ms`: a Redis that hangs without closing its connection must not hang a caller. */
export function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('Redis did not answer in time')), Math.max(0, ms));
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
