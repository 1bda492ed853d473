import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import { growingLru } from '../cache/growing-lru.js';
import { within } from '../cache/redis.js';
import { PeriodicTask } from '../periodic-task.js';
import { JOBS } from '../jobs.js';

export interface Record_ {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/**
 * ThrottlerStorage, plus `hit`: the same count, answered at once when it needs no round trip (the
 * runtime check's count almost always), a promise otherwise (common/throttling/throttle.guard.ts).
 */
export interface CountingStorage extends ThrottlerStorage {
  hit(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Record_ | Promise<Record_>;
}

/**
 * Fixed-window counters in process: O(1) per request and one small entry per key, where the
 * library's default keeps a timestamp per hit (6000 a minute per busy license). At most WINDOWS
 * keys are kept: calls with made-up keys cannot grow it, and what they push out are the least
 * recently used windows (theirs), not a busy caller's.
 */
const WINDOWS = 100_000;

export class MemoryThrottlerStorage implements CountingStorage {
  private readonly windows = growingLru<string, { hits: number; resetAt: number; blockedUntil: number }>(
    WINDOWS,
  );

  /** `now`: the service's clock (common/time.ts), so that a test moves the window instead of racing it. */
  constructor(private readonly now: () => number = Date.now) {}

  // eslint-disable-next-line @typescript-eslint/require-await -- ThrottlerStorage is async; memory has nothing to await
  async increment(key: string, ttl: number, limit: number, blockDuration: number): Promise<Record_> {
    return this.hit(key, ttl, limit, blockDuration);
  }

  hit(key: string, ttl: number, limit: number, blockDuration: number): Record_ {
    const now = this.now();
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

/**
 * Rate limits shared by every instance through Redis, without a round trip per call (the method and
 * its bound: docs/decisions.md#rate-limits).
 *
 * Each instance decides alone while it is far from the limit, and tells Redis what it admitted a few
 * times a second; Redis adds up every instance's counts and answers the window's total, which is all
 * an instance knows of the others. An instance admits a call by itself only while
 *   - fewer than `slack` (a twentieth of the limit) of its admissions are not yet counted in Redis, and
 *   - the total Redis last answered, plus those, is below the limit;
 * otherwise the call is counted in Redis first and its place in the total decides it, exactly as if
 * every call went to Redis (which is what happens for limits under 20, where the slack is 0).
 *
 * Bound: once Redis's total reaches the limit, an instance can still admit at most the `slack` calls
 * not yet counted there before its next answer from Redis tells it the window is spent; so a window
 * admits at most limit - 1 + N × slack calls over N instances: 10 % over at 2 instances, and exactly
 * the limit on one. It never refuses a call before the limit is reached.
 *
 * While Redis is unreachable the counters fall back to this process, with a logged warning, rather
 * than failing the request.
 */
export class SharedThrottlerStorage implements CountingStorage, OnApplicationShutdown {
  private readonly logger = new Logger('Throttler');
  private readonly fallback = new MemoryThrottlerStorage();
  private readonly windows = growingLru<string, SharedWindow>(WINDOWS);
  /** Windows with admissions or calls Redis has not heard of yet. */
  private readonly dirty = new Set<SharedWindow>();
  private warned = false;
  /** One sync at a time; calls that arrive meanwhile go in the next one, right after. */
  // Every JOBS.throttlerSync.everyMs, sooner when half the slack is used.
  private readonly sync = new PeriodicTask({
    ...JOBS.throttlerSync,
    logger: this.logger,
    run: async () => {
      // The calls of this tick go in one script.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await this.flush();
    },
  });

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    this.sync.start();
  }

  // Nest calls it: the throttler module provides the storage it is given.
  async onApplicationShutdown(): Promise<void> {
    await this.sync.stop();
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Promise<Record_> {
    return this.hit(key, ttl, limit, blockDuration, name);
  }

  hit(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Record_ | Promise<Record_> {
    if (this.redis.status !== 'ready')
      return this.fallbackFor(key, ttl, limit, blockDuration, 'Redis is not connected');
    const now = Date.now();
    const k = `${this.prefix}throttle:${name}:${key}`;
    let w = this.windows.get(k);
    if (!w || (w.resetAt <= now && w.blockedUntil <= now)) {
      w = {
        key: k,
        ttl,
        limit,
        blockDuration,
        resetAt: now + ttl,
        total: 0,
        unsent: 0,
        sent: 0,
        waiting: [],
        deciding: 0,
        blockedUntil: 0,
      };
      this.windows.set(k, w);
    }
    if (w.blockedUntil > now) return blocked(w, now);
    const slack = Math.floor(limit / SLACK_DIVISOR);
    const uncounted = w.unsent + w.sent;
    if (uncounted < slack && w.total + uncounted + w.deciding < limit) {
      w.unsent++;
      this.dirty.add(w);
      // Half the slack used: tell Redis now rather than at the next tick, so calls rarely wait.
      if (uncounted + 1 >= slack / 2) this.flushSoon();
      return {
        totalHits: w.total + uncounted + 1,
        timeToExpire: secondsUntil(w.resetAt, now),
        isBlocked: false,
        timeToBlockExpire: 0,
      };
    }
    return this.decided(w, key, ttl, limit, blockDuration);
  }

  /** Near the limit (by what this instance knows): Redis counts the call, and its place decides. */
  private async decided(
    w: SharedWindow,
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
  ): Promise<Record_> {
    w.deciding++;
    const admitted = await new Promise<boolean | null>((resolve) => {
      w.waiting.push(resolve);
      this.dirty.add(w);
      this.flushSoon();
    }).finally(() => w.deciding--);
    if (admitted === null) return this.fallbackFor(key, ttl, limit, blockDuration, 'Redis did not answer');
    const at = Date.now();
    return admitted
      ? {
          totalHits: w.total,
          timeToExpire: secondsUntil(w.resetAt, at),
          isBlocked: false,
          timeToBlockExpire: 0,
        }
      : blocked(w, at);
  }

  private fallbackFor(key: string, ttl: number, limit: number, blockDuration: number, why: string): Record_ {
    if (!this.warned) this.logger.warn(`Redis unavailable for rate limits, counting in this process: ${why}`);
    this.warned = true;
    return this.fallback.hit(key, ttl, limit, blockDuration);
  }

  private flushSoon(): void {
    void this.sync.runNow();
  }

  private async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const windows = [...this.dirty];
    this.dirty.clear();
    const batches: Array<Promise<void>> = [];
    for (let i = 0; i < windows.length; i += BATCH) batches.push(this.send(windows.slice(i, i + BATCH)));
    await Promise.all(batches);
  }

  /** Adds each window's new calls to Redis in one script, and settles the calls that wait on it. */
  private async send(windows: SharedWindow[]): Promise<void> {
    const taken = windows.map((w) => {
      const take = { admitted: w.unsent, waiting: w.waiting.splice(0) };
      w.unsent = 0;
      w.sent += take.admitted;
      return take;
    });
    const keys: string[] = [];
    const args: Array<number> = [];
    windows.forEach((w, i) => {
      keys.push(w.key, `${w.key}:blocked`);
      args.push(taken[i].admitted + taken[i].waiting.length, w.ttl, w.limit, w.blockDuration);
    });
    let replies: number[];
    try {
      replies = (await within(
        SYNC_DEADLINE_MS,
        this.redis.eval(SYNC, keys.length, ...keys, ...args),
      )) as number[];
    } catch (error) {
      windows.forEach((w, i) => {
        w.sent -= taken[i].admitted; // admitted already: Redis will not hear of them
        for (const resolve of taken[i].waiting) resolve(null);
      });
      if (!this.warned)
        this.logger.warn(
          `Redis unavailable for rate limits, counting in this process: ${(error as Error).message}`,
        );
      this.warned = true;
      return;
    }
    this.warned = false;
    const now = Date.now();
    windows.forEach((w, i) => {
      const [total, ttlMs, blockedMs, wasBlocked] = replies.slice(i * 4, i * 4 + 4);
      w.sent -= taken[i].admitted;
      w.total = total;
      if (ttlMs > 0) w.resetAt = now + ttlMs;
      if (blockedMs > 0) w.blockedUntil = now + blockedMs;
      // The waiting calls are the last of this batch's hits, in the order they came.
      const first = total - taken[i].waiting.length + 1;
      taken[i].waiting.forEach((resolve, j) => resolve(wasBlocked === 0 && first + j <= w.limit));
    });
  }
}

/** A window of one key as this instance knows it. */
interface SharedWindow {
  key: string;
  ttl: number;
  limit: number;
  blockDuration: number;
  resetAt: number;
  /** The total of every instance's calls, as Redis last answered it. */
  total: number;
  /** Admitted here, not yet sent to Redis. */
  unsent: number;
  /** Admitted here, sent to Redis, not yet answered. */
  sent: number;
  /** Calls near the limit, to be counted in Redis before they are decided (true: admitted; null: Redis failed). */
  waiting: Array<(admitted: boolean | null) => void>;
  /** Calls waiting for Redis's decision, sent or not: they may take the last places. */
  deciding: number;
  blockedUntil: number;
}

/** The slack of a limit: a twentieth, the calls an instance may admit that Redis has not counted yet. */
const SLACK_DIVISOR = 20;
/** A Redis that does not answer within this is taken as away: the waiting calls are counted in process. */
const SYNC_DEADLINE_MS = 1000;
/** Windows per script call. */
const BATCH = 500;

const secondsUntil = (at: number, now: number) => Math.max(0, Math.ceil((at - now) / 1000));
const blocked = (w: SharedWindow, now: number): Record_ => ({
  totalHits: w.total + w.unsent + w.sent,
  timeToExpire: secondsUntil(w.resetAt, now),
  isBlocked: true,
  timeToBlockExpire: secondsUntil(w.blockedUntil, now),
});

// For each window (KEYS: counter, block marker; ARGV: calls, ttl ms, limit, block ms): add the calls,
// start the window on its first ones, block past the limit; answer total, ms left, ms blocked, and
// whether it was blocked before these calls.
const SYNC = `
local out = {}
for w = 0, #KEYS / 2 - 1 do
  local counter, marker = KEYS[w * 2 + 1], KEYS[w * 2 + 2]
  local n, ttl, limit, block = tonumber(ARGV[w * 4 + 1]), tonumber(ARGV[w * 4 + 2]), tonumber(ARGV[w * 4 + 3]), tonumber(ARGV[w * 4 + 4])
  local blocked = redis.call('PTTL', marker)
  local was = 0
  if blocked > 0 then was = 1 else blocked = 0 end
  local hits = redis.call('INCRBY', counter, n)
  local left = redis.call('PTTL', counter)
  if left < 0 then
    redis.call('PEXPIRE', counter, ttl)
    left = ttl
  end
  if blocked == 0 and hits > limit then
    redis.call('SET', marker, '1', 'PX', block)
    blocked = block
  end
  out[#out + 1] = hits
  out[#out + 1] = left
  out[#out + 1] = blocked
  out[#out + 1] = was
end
return out
`;
