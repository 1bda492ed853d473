import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail, ThrottlerRequest } from '@nestjs/throttler';
import {
  THROTTLER_BLOCK_DURATION,
  THROTTLER_KEY_GENERATOR,
  THROTTLER_LIMIT,
  THROTTLER_SKIP,
  THROTTLER_TRACKER,
  THROTTLER_TTL,
} from '@nestjs/throttler/dist/throttler.constants.js';
import type { Response } from 'express';
import { ApiError } from '../http/errors.js';

type Plan = Omit<ThrottlerRequest, 'context'>[];

/**
 * ThrottlerGuard that answers 429 in the envelope with a plain `Retry-After` for every throttler.
 *
 * The library reads five metadata keys per throttler on every request; a route's throttlers never
 * change, so this guard resolves them once per handler and then only counts.
 */
@Injectable()
export class ThrottleGuard extends ThrottlerGuard {
  private readonly plans = new WeakMap<object, Plan | null>();

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler();
    let plan = this.plans.get(handler);
    if (plan === undefined) {
      plan = this.planFor(handler, context.getClass());
      this.plans.set(handler, plan);
    }
    // A throttler configured with functions of the request is resolved per request by the library.
    if (plan === null) return super.canActivate(context);
    for (const step of plan) await this.handleRequest({ context, ...step });
    return true;
  }

  private planFor(handler: object, classRef: object): Plan | null {
    const targets = [handler, classRef] as Parameters<typeof this.reflector.getAllAndOverride>[1];
    const read = <T>(key: string, name: string) => this.reflector.getAllAndOverride<T>(key + name, targets);
    const plan: Plan = [];
    for (const throttler of this.throttlers) {
      if (throttler.skipIf || this.commonOptions.skipIf) return null;
      if (read<boolean>(THROTTLER_SKIP, throttler.name as string)) continue;
      const limit = read<unknown>(THROTTLER_LIMIT, throttler.name as string) ?? throttler.limit;
      const ttl = read<unknown>(THROTTLER_TTL, throttler.name as string) ?? throttler.ttl;
      const blockDuration = read<unknown>(THROTTLER_BLOCK_DURATION, throttler.name as string) ?? throttler.blockDuration ?? ttl;
      if (typeof limit !== 'number' || typeof ttl !== 'number' || typeof blockDuration !== 'number') return null;
      plan.push({
        limit,
        ttl,
        blockDuration,
        throttler,
        getTracker: read(THROTTLER_TRACKER, throttler.name as string) ?? throttler.getTracker ?? this.commonOptions.getTracker,
        generateKey: read(THROTTLER_KEY_GENERATOR, throttler.name as string) ?? throttler.generateKey ?? this.commonOptions.generateKey,
      } as Plan[number]);
    }
    return plan;
  }

  protected override async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const seconds = Math.max(1, Math.ceil(detail.timeToBlockExpire));
    context.switchToHttp().getResponse<Response>().setHeader('Retry-After', String(seconds));
    throw new ApiError(429, `Too many requests. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`);
  }
}
