import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail, ThrottlerRequest } from '@nestjs/throttler';
import type { Response } from 'express';
import { ApiError, RuntimeRefusal } from '../http/errors.js';
import { ROUTE_CLASS, RouteClass } from './throttling.js';

/**
 * The app's one global guard: counts each call by its route's class (ThrottleAs), and answers 429 in
 * the envelope with a plain `Retry-After`.
 *
 * Routes never override a class's limit (no per-route @Throttle()), so a route's throttler is the
 * one its ThrottleAs names, with the limits the module was configured with; it is resolved once per
 * handler, and each call only counts. A route without a class is counted as a management call (the
 * route audit test keeps every route marked).
 */
@Injectable()
export class ThrottleGuard extends ThrottlerGuard {
  private readonly plans = new WeakMap<object, Omit<ThrottlerRequest, 'context'> | null>();

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler();
    let plan = this.plans.get(handler);
    if (plan === undefined) {
      plan = this.planFor(handler, context.getClass());
      this.plans.set(handler, plan);
    }
    if (plan !== null) await this.handleRequest({ context, ...plan });
    return true;
  }

  private planFor(handler: object, classRef: object): Omit<ThrottlerRequest, 'context'> | null {
    const routeClass = this.reflector.getAllAndOverride<RouteClass | null | undefined>(ROUTE_CLASS, [
      handler as () => void,
      classRef as new () => object,
    ]);
    if (routeClass === null) return null;
    const throttler = this.throttlers.find((t) => t.name === (routeClass ?? 'api'));
    if (!throttler) throw new Error(`No throttler for the route class ${routeClass}`);
    const { limit, ttl } = throttler as { limit: number; ttl: number };
    return {
      limit,
      ttl,
      blockDuration: (throttler.blockDuration as number | undefined) ?? ttl,
      throttler,
      getTracker: throttler.getTracker ?? this.commonOptions.getTracker,
      generateKey: throttler.generateKey ?? this.commonOptions.generateKey,
    } as Omit<ThrottlerRequest, 'context'>;
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- overrides an async method: the throw must be a rejection
  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    const seconds = Math.max(1, Math.ceil(detail.timeToBlockExpire));
    context.switchToHttp().getResponse<Response>().setHeader('Retry-After', String(seconds));
    const message = `Too many requests. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
    // A runtime call (its key is the class and tracker, as perClass makes it) is one the analytics count.
    if (detail.key.startsWith('runtime:')) throw new RuntimeRefusal('rate_limited', 429, message, null);
    throw new ApiError(429, message);
  }
}
