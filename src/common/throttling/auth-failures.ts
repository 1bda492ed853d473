import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { growingLru } from '../cache/growing-lru.js';
import { AppConfig } from '../../config/app-config.js';
import { RedisService, within } from '../cache/redis.js';
import { ApiError } from '../http/errors.js';
import { clientGroup } from '../net/address-lists.js';
import { Clock } from '../time.js';
import { MemoryThrottlerStorage, SharedThrottlerStorage } from './throttler-storage.js';

/** Addresses past their allowance kept in process: bounded, so made-up addresses cannot grow it. */
const MAX_BLOCKED = 100_000;
/** (address, key) pairs already counted in this window, in process: bounded likewise. */
const MAX_COUNTED = 200_000;
/** How long the shared first-sighting mark may take before the failure goes uncounted. */
const REDIS_DEADLINE_MS = 500;

export const tooManyFailures = (seconds: number) =>
  `Too many requests with unknown or malformed keys from this address. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;

/**
 * Unknown or malformed license keys and API keys, counted per client address — an IPv6 address by
 * its /64 — THROTTLE_AUTH_FAILURES_LIMIT distinct keys per THROTTLE_AUTH_FAILURES_TTL_SECONDS
 * (docs/security.md#unknown-keys). A key sent again within the window does not count again, so a
 * buyer's script retrying one deleted key cannot lock out its neighbours. Past the limit the
 * address gets 429 with Retry-After, for the rest of the window, on every key that turns out not to
 * be valid; a valid key is never refused for it — the guards call `failed` only once a key is known
 * to be unknown. Counted in Redis with REDIS_URL (every instance sees the same count), else in
 * process.
 */
@Injectable()
export class AuthFailures implements OnApplicationShutdown {
  private readonly limit: number;
  private readonly ttlMs: number;
  private readonly storage: ThrottlerStorage & Partial<OnApplicationShutdown>;
  /** Address → when its block ends (ms): answered from memory, with or without Redis. */
  private readonly blocked = growingLru<string, number>(MAX_BLOCKED);
  /** "address key-hash" → when it may count again (ms). */
  private readonly counted = growingLru<string, number>(MAX_COUNTED);

  constructor(
    config: AppConfig,
    private readonly redis: RedisService,
    private readonly clock: Clock,
  ) {
    this.limit = config.env.THROTTLE_AUTH_FAILURES_LIMIT;
    this.ttlMs = config.env.THROTTLE_AUTH_FAILURES_TTL_SECONDS * 1000;
    this.storage = redis.client
      ? new SharedThrottlerStorage(redis.client, redis.prefix)
      : new MemoryThrottlerStorage(() => clock.nowMs());
  }

  onApplicationShutdown(): void {
    void this.storage.onApplicationShutdown?.();
  }

  /**
   * Counts `keyHash`, a key found to be unknown or malformed, against the caller's address unless
   * it was counted already in this window; 429 instead of the guard's refusal while the address is
   * past its allowance (or this key makes it so).
   */
  async failed(req: Request, keyHash: string): Promise<void> {
    const group = clientGroup(req.ip ?? 'unknown');
    const until = this.blocked.get(group);
    const now = this.clock.nowMs();
    if (until !== undefined && until > now) throw refusal(until - now);
    let record: Awaited<ReturnType<ThrottlerStorage['increment']>>;
    try {
      if (!(await this.firstSighting(group, keyHash, now))) return;
      record = await this.storage.increment(
        `authfail:${group}`,
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
    this.blocked.set(group, now + ms);
    throw refusal(ms);
  }

  /** True the first time (address, key) is seen in a window: in Redis when shared, else here. */
  private async firstSighting(group: string, keyHash: string, now: number): Promise<boolean> {
    const id = `${group} ${keyHash}`;
    const again = this.counted.get(id);
    if (again !== undefined && again > now) return false;
    this.counted.set(id, now + this.ttlMs);
    const client = this.redis.client;
    if (!client) return true;
    // A Redis that hangs must not hang the refusal: past the deadline the caller's catch counts nothing.
    const set = await within(
      REDIS_DEADLINE_MS,
      client.set(`${this.redis.prefix}authfail:seen:${id}`, '1', 'PX', this.ttlMs, 'NX'),
    );
    return set === 'OK';
  }
}

function refusal(ms: number): ApiError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ApiError(429, tooManyFailures(seconds), null, null, { 'Retry-After': String(seconds) });
}
