import { SetMetadata } from '@nestjs/common';
import { ThrottlerModuleOptions, ThrottlerOptions } from '@nestjs/throttler';
import type { Request } from 'express';
import { licenseKey, OVERSIZED_KEY } from '../http/license-key.js';
import { AppConfig } from '../../config/app-config.js';
import { sha256Hex } from '../crypto/crypto.js';
import { RedisService } from '../cache/redis.js';
import { Clock } from '../time.js';
import { MemoryThrottlerStorage, SharedThrottlerStorage } from './throttler-storage.js';

/** Route classes (docs/decisions.md#rate-limits); each route is counted by its own class only. */
export type RouteClass = 'root' | 'api' | 'runtime' | 'payments';

export const ROUTE_CLASS = 'licensegate:route-class';
/** Marks a route (or controller) as one class, counted by that class's throttler; null: never limited. */
export const ThrottleAs = (routeClass: RouteClass | null) => SetMetadata(ROUTE_CLASS, routeClass);

const ip = (req: Request) => `ip:${req.ip ?? 'unknown'}`;
const header = (req: Request, name: string) => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * One allowance per class and caller, whatever the route: the library's default key is per handler,
 * which would give an API key THROTTLE_API_LIMIT on each management route.
 */
const perClass = (_context: unknown, tracker: string, name: string) => `${name}:${tracker}`;

/**
 * Root per IP, management per API key or session, runtime per license (falling back to the address when no key
 * is sent), payment providers' events per address with the runtime's limits. Keys are hashed:
 * counters never hold credentials.
 */
export function throttlerOptions(
  config: AppConfig,
  redis: RedisService,
  clock: Clock,
): ThrottlerModuleOptions {
  const env = config.env;
  const throttlers: ThrottlerOptions[] = [
    {
      name: 'root',
      limit: env.THROTTLE_ROOT_LIMIT,
      ttl: env.THROTTLE_ROOT_TTL_SECONDS * 1000,
      getTracker: (req) => ip(req as Request),
    },
    {
      name: 'api',
      limit: env.THROTTLE_API_LIMIT,
      ttl: env.THROTTLE_API_TTL_SECONDS * 1000,
      getTracker: (req) => {
        const key = header(req as Request, 'x-api-key');
        if (key) return `key:${sha256Hex(key).slice(0, 32)}`;
        // A signed-in browser is counted per session, as a key is: colleagues behind one NAT share no allowance.
        const session = /(?:^|;\s*)lg_session=([A-Za-z0-9_-]{43})(?:;|$)/.exec(
          header(req as Request, 'cookie') ?? '',
        );
        if (session) return `session:${sha256Hex(session[1]).slice(0, 32)}`;
        // A buyer in the customer portal likewise, per portal session.
        const portal = /(?:^|;\s*)(?:__Host-)?lg_portal=([A-Za-z0-9_-]{43})(?:;|$)/.exec(
          header(req as Request, 'cookie') ?? '',
        );
        return portal ? `portal:${sha256Hex(portal[1]).slice(0, 32)}` : ip(req as Request);
      },
    },
    {
      name: 'runtime',
      limit: env.THROTTLE_RUNTIME_LIMIT,
      ttl: env.THROTTLE_RUNTIME_TTL_SECONDS * 1000,
      getTracker: (req) => {
        const sent = licenseKey(req as Request);
        if (!sent) return ip(req as Request);
        // Oversized keys are not hashed: they share one allowance per address.
        return sent.hash === OVERSIZED_KEY
          ? `oversized:${ip(req as Request)}`
          : `license:${sent.hash.slice(0, 32)}`;
      },
    },
    {
      // Per address only: the endpoint takes no license key, so one sent along (a made-up one per call)
      // must not buy a fresh allowance, nor spend a license's.
      name: 'payments',
      limit: env.THROTTLE_RUNTIME_LIMIT,
      ttl: env.THROTTLE_RUNTIME_TTL_SECONDS * 1000,
      getTracker: (req) => ip(req as Request),
    },
  ];
  return {
    throttlers: throttlers.map((throttler) => ({ ...throttler, generateKey: perClass })),
    storage: redis.client
      ? new SharedThrottlerStorage(redis.client, redis.prefix)
      : new MemoryThrottlerStorage(() => clock.nowMs()),
  };
}
