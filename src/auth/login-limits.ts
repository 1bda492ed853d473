import { Injectable } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { growingLru } from '../common/cache/growing-lru.js';
import { RedisService, within } from '../common/cache/redis.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import { canonicalIp } from '../common/net/address-lists.js';
import { Clock } from '../common/time.js';

/** Failed sign-ins allowed per window (docs/security.md#sessions). */
export const LOGIN_WINDOW_MS = 15 * 60_000;
export const FAILURES_PER_EMAIL_AND_ADDRESS = 10;
export const FAILURES_PER_ADDRESS = 30;

/** Counters kept in process without Redis: bounded, so made-up emails and addresses only push out each other. */
const MAX_COUNTERS = 100_000;

/**
 * An IPv6 client is counted by its /64: one host is usually given a whole /64, and counting single
 * addresses would give it 2^64 allowances.
 */
export function addressGroup(ip: string | undefined): string {
  const address = canonicalIp(ip ?? 'unknown');
  if (!isIPv6(address)) return address;
  const [head, tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * Failed sign-ins, per (email, address) and per address, in fixed windows of LOGIN_WINDOW_MS. An
 * unknown email is counted like a known one, so that the answers say nothing about which exist. In
 * Redis with REDIS_URL (every instance sees the same counts), else in process on the app's Clock.
 */
@Injectable()
export class LoginLimits {
  private readonly memory = growingLru<string, { count: number; until: number }>(MAX_COUNTERS);

  constructor(
    private readonly clock: Clock,
    private readonly redis: RedisService,
  ) {}

  private keys(email: string, ip: string | undefined): Array<[string, number]> {
    const group = addressGroup(ip);
    return [
      [
        `login:e:${sha256Hex(`${email.trim().toLowerCase()}\n${group}`).slice(0, 32)}`,
        FAILURES_PER_EMAIL_AND_ADDRESS,
      ],
      [`login:a:${sha256Hex(group).slice(0, 32)}`, FAILURES_PER_ADDRESS],
    ];
  }

  /** Milliseconds until this email may be tried again from this address; 0: now. */
  async retryAfterMs(email: string, ip: string | undefined): Promise<number> {
    let wait = 0;
    for (const [key, limit] of this.keys(email, ip)) {
      const { count, remainingMs } = await this.read(key);
      if (count >= limit) wait = Math.max(wait, remainingMs);
    }
    return wait;
  }

  async failed(email: string, ip: string | undefined): Promise<void> {
    for (const [key] of this.keys(email, ip)) await this.increment(key);
  }

  /** A success clears the (email, address) count; the address's count stands. */
  async succeeded(email: string, ip: string | undefined): Promise<void> {
    const [key] = this.keys(email, ip)[0];
    const client = this.redis.client;
    if (client) await within(1000, client.del(this.redis.prefix + key)).catch(() => undefined);
    else this.memory.delete(key);
  }

  private async read(key: string): Promise<{ count: number; remainingMs: number }> {
    const client = this.redis.client;
    if (client) {
      try {
        const [count, ttl] = await within(
          1000,
          Promise.all([client.get(this.redis.prefix + key), client.pttl(this.redis.prefix + key)]),
        );
        return { count: Number(count ?? 0), remainingMs: Math.max(1000, ttl) };
      } catch {
        // Redis away: fall through to this instance's own count rather than refuse or admit everyone.
      }
    }
    const now = this.clock.nowMs();
    const entry = this.memory.get(key);
    if (!entry || entry.until <= now) return { count: 0, remainingMs: 0 };
    return { count: entry.count, remainingMs: entry.until - now };
  }

  private async increment(key: string): Promise<void> {
    const client = this.redis.client;
    if (client) {
      try {
        const full = this.redis.prefix + key;
        const count = await within(1000, client.incr(full));
        if (count === 1) await within(1000, client.pexpire(full, LOGIN_WINDOW_MS));
        return;
      } catch {
        // counted in process below
      }
    }
    const now = this.clock.nowMs();
    const entry = this.memory.get(key);
    if (!entry || entry.until <= now) this.memory.set(key, { count: 1, until: now + LOGIN_WINDOW_MS });
    else entry.count++;
  }
}
