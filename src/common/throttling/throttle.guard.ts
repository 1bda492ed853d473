import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerRequest } from '@nestjs/throttler';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, RuntimeRefusal } from '../http/errors.js';
import { ROUTE_CLASS, RouteClass } from './throttling.js';
import type { CountingStorage, Record_ } from './throttler-storage.js';

/** What a route's calls are counted by, with the names of its headers: resolved once per handler. */
type Plan = Omit<ThrottlerRequest, 'context'> & {
  suffix: string;
  headers: { limit: string; remaining: string; reset: string };
};

/**
 * The app's one global guard: counts each call by its route's class (ThrottleAs), and answers 429 in
 * the envelope with a plain `Retry-After`.
 *
 * Routes never override a class's limit (no per-route @Throttle()), so a route's throttler is the
 * one its ThrottleAs names, with the limits the module was configured with; it is resolved once per
 * handler, and each call only counts. A route without a class is counted as a management call (the
 * route audit test keeps every route marked).
 *
 * The count itself is the library's handleRequest (same headers, same 429), written here so that it
 * answers at once when the storage does: the runtime check's count needs no round trip, and its
 * route (gate/runtime-fast-path.ts) counts through it without a promise per call.
 */
@Injectable()
export class ThrottleGuard extends ThrottlerGuard {
  private readonly plans = new WeakMap<object, Plan | null>();

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    return this.count(
      http.getRequest(),
      http.getResponse(),
      context.getHandler(),
      context.getClass(),
      context,
    );
  }

  /**
   * Counts a call to the route `handler` of `classRef` (canActivate; the runtime route calls it
   * directly): true at once when the storage answers at once, else a promise of it. `context` only
   * goes to the trackers and key of throttling.ts, which read none: the runtime route has no context.
   */
  count(
    req: IncomingMessage,
    res: ServerResponse,
    handler: object,
    classRef: object,
    context?: ExecutionContext,
  ): true | Promise<true> {
    let plan = this.plans.get(handler);
    if (plan === undefined) {
      plan = this.planFor(handler, classRef);
      this.plans.set(handler, plan);
    }
    if (plan === null) return true;
    const tracker = plan.getTracker(req as never, context as ExecutionContext) as string;
    const key = plan.generateKey(context as ExecutionContext, tracker, plan.throttler.name as string);
    const storage = this.storageService as CountingStorage;
    const record = storage.hit(key, plan.ttl, plan.limit, plan.blockDuration, plan.throttler.name as string);
    if (record instanceof Promise) return record.then((counted) => this.counted(res, plan, key, counted));
    return this.counted(res, plan, key, record);
  }

  private planFor(handler: object, classRef: object): Plan | null {
    const routeClass = this.reflector.getAllAndOverride<RouteClass | null | undefined>(ROUTE_CLASS, [
      handler as () => void,
      classRef as new () => object,
    ]);
    if (routeClass === null) return null;
    const throttler = this.throttlers.find((t) => t.name === (routeClass ?? 'api'));
    if (!throttler) throw new Error(`No throttler for the route class ${routeClass}`);
    const { limit, ttl } = throttler as { limit: number; ttl: number };
    const suffix = throttler.name === 'default' ? '' : `-${throttler.name}`;
    return {
      limit,
      ttl,
      blockDuration: (throttler.blockDuration as number | undefined) ?? ttl,
      throttler,
      getTracker: throttler.getTracker ?? this.commonOptions.getTracker,
      generateKey: throttler.generateKey ?? this.commonOptions.generateKey,
      suffix,
      headers: {
        limit: `X-RateLimit-Limit${suffix}`,
        remaining: `X-RateLimit-Remaining${suffix}`,
        reset: `X-RateLimit-Reset${suffix}`,
      },
    } as Plan;
  }

  /** The library's headers (X-RateLimit-*-{class}; Retry-After-{class} when refused), and the 429. */
  private counted(res: ServerResponse, plan: Plan, key: string, record: Record_): true {
    if (record.isBlocked) {
      res.setHeader(`Retry-After${plan.suffix}`, record.timeToBlockExpire);
      const seconds = Math.max(1, Math.ceil(record.timeToBlockExpire));
      res.setHeader('Retry-After', String(seconds));
      const message = `Too many requests. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
      // A runtime call (its key is the class and tracker, as perClass makes it) is one the analytics count.
      if (key.startsWith('runtime:'))
        throw new RuntimeRefusal({ reason: 'rate_limited', status: 429, message });
      throw new ApiError(429, message);
    }
    res.setHeader(plan.headers.limit, plan.limit);
    res.setHeader(plan.headers.remaining, Math.max(0, plan.limit - record.totalHits));
    res.setHeader(plan.headers.reset, record.timeToExpire);
    return true;
  }
}
