import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Response } from 'express';
import { ApiError } from './errors.js';

/** ThrottlerGuard that answers 429 in the envelope with a plain `Retry-After` for every throttler. */
@Injectable()
export class ThrottleGuard extends ThrottlerGuard {
  protected override async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const seconds = Math.max(1, Math.ceil(detail.timeToBlockExpire));
    context.switchToHttp().getResponse<Response>().setHeader('Retry-After', String(seconds));
    throw new ApiError(429, `Too many requests. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`);
  }
}
