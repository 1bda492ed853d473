import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { growingLru } from '../cache/growing-lru.js';
import { AppConfig } from '../../config/app-config.js';
import { RedisService } from '../cache/redis.js';
import { ApiError } from '../http/errors.js';
import { MemoryThrottlerStorage, SharedThrottlerStorage } from './throttler-storage.js';

/** Addresses past their allowance kept in process: bounded, so made-up addresses cannot grow it. */
const MAX_BLOCKED = 100_000;

export const tooManyFailures = (seconds: number) =>
  `Too many requests with unknown or malformed keys from this address. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;

/**
 * Unknown or malformed license keys and API keys, counted per client address
 * (THROTTLE_AUTH_FAILURES_LIMIT per THROTTLE_AUTH_FAILURES_TTL_SECONDS, docs/security.md): each
 * guess would otherwise get a fresh per-key allowance and a database lookup. Past the limit the
 * address gets 429 with Retry-After for the rest of the window on every call whose key is not
 * already known to be valid in this process, before any lookup. Counted in Redis with REDIS_URL
 * (every instance sees the same count), else in process.
 */
@Injectable()
export class AuthFailures implements OnApplicationShutdown {
  private readonly limit: number;
  private readonly ttlMs: number;
  private readonly storage: ThrottlerStorage & Partial<OnApplicationShutdown>;
  /** Address → when its block ends (ms): answered from memory, with or without Redis. */
  private readonly blocked = growingLru<string, number>(MAX_BLOCKED);

  constructor(config: AppConfig, redis: RedisService) {
    this.limit = config.env.THROTTLE_AUTH_FAILURES_LIMIT;
    this.ttlMs = config.env.THROTTLE_AUTH_FAILURES_TTL_SECONDS * 1000;
    this.storage = redis.client
      ? new SharedThrottlerStorage(redis.client, redis.prefix)
      : new MemoryThrottlerStorage();
  }

  onApplicationShutdown(): void {
    void this.storage.onApplicationShutdown?.();
  }

  /** 429 when the caller's address is past its allowance of failures. */
  assertAllowed(req: Request): void {
    const until = this.blocked.get(address(req));
    if (until === undefined) return;
    const now = Date.now();
    if (until > now) throw refusal(until - now);
    this.blocked.delete(address(req));
  }

  /** Counts a failure of the caller's address; 429 instead of the refusal when it is one too many. */
  async failed(req: Request): Promise<void> {
    let record: Awaited<ReturnType<ThrottlerStorage['increment']>>;
    try {
      record = await this.storage.increment(
        `authfail:${address(req)}`,
        this.ttlMs,
        this.limit,
        this.ttlMs,
        'auth_failures',
      );
    } catch {
      return; // a counter that cannot be reached refuses nobody: the refusal itself still stands
    }
    if (!record.isBlocked) return;
    const ms = Math.max(1000, record.timeToBlockExpire * 1000);
    this.blocked.set(address(req), Date.now() + ms);
    throw refusal(ms);
  }
}

const address = (req: Request) => req.ip ?? 'unknown';

function refusal(ms: number): ApiError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ApiError(429, tooManyFailures(seconds), null, null, { 'Retry-After': String(seconds) });
}
