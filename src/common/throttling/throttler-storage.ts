import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

interface Record_ {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/**
 * Fixed-window counters in process: O(1) per request and one small entry per key, where the
 * library's default keeps a timestamp per hit (6000 a minute per busy license). At most WINDOWS
 * keys are kept: calls with made-up keys cannot grow it, and what they push out are the least
 * recently used windows (theirs), not a busy caller's.
 */
const WINDOWS = 100_000;

export class MemoryThrottlerStorage implements ThrottlerStorage {
  private readonly windows = new LRUCache<string, { hits: number; resetAt: number; blockedUntil: number }>({ max: WINDOWS });

  async increment(key: string, ttl: number, limit: number, blockDuration: number): Promise<Record_> {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || (w.resetAt <= now && w.blockedUntil <= now)) {
      w = { hits: 0, resetAt: now + ttl, blockedUntil: 0 };
      this.windows.set(key, w);
    }
    if (w.resetAt <= now) {
      w.hits = 0;
      w.resetAt = now + ttl;
    }
    w.hits++;
    if (w.blockedUntil <= now && w.hits > limit) w.blockedUntil = now + blockDuration;
    const blocked = w.blockedUntil > now;
    return {
      totalHits: w.hits,
      timeToExpire: Math.ceil((w.resetAt - now) / 1000),
      isBlocked: blocked,
      timeToBlockExpire: blocked ? Math.ceil((w.blockedUntil - now) / 1000) : 0,
    };
  }

}

// One round trip: count the hit, start the window on the first one, block past the limit.
const SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
local blocked = redis.call('PTTL', KEYS[2])
if blocked <= 0 and hits > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  blocked = tonumber(ARGV[3])
end
return {hits, ttl, blocked}
`;

/**
 * Throttle counters in Redis, shared by every instance. While Redis is unreachable the
 * counters fall back to this process, with a logged warning, rather than failing the request.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('Throttler');
  private readonly fallback = new MemoryThrottlerStorage();
  private warned = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async increment(key: string, ttl: number, limit: number, blockDuration: number, name: string): Promise<Record_> {
    try {
      const k = `${this.prefix}throttle:${name}:${key}`;
      const [hits, ttlMs, blockedMs] = (await this.redis.eval(SCRIPT, 2, k, `${k}:blocked`, ttl, limit, blockDuration)) as [number, number, number];
      this.warned = false;
      return {
        totalHits: hits,
        timeToExpire: Math.max(0, Math.ceil(ttlMs / 1000)),
        isBlocked: blockedMs > 0,
        timeToBlockExpire: blockedMs > 0 ? Math.ceil(blockedMs / 1000) : 0,
      };
    } catch (error) {
      if (!this.warned) this.logger.warn(`Redis unavailable for rate limits, counting in this process: ${(error as Error).message}`);
      this.warned = true;
      return this.fallback.increment(key, ttl, limit, blockDuration);
    }
  }
}
