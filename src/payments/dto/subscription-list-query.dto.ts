import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { CursorQueryDto } from '../../database/pagination.js';
import type { SubscriptionKind, SubscriptionStatus } from '../subscription.entity.js';

export const SUBSCRIPTION_KINDS = ['subscription', 'order'] as const satisfies readonly SubscriptionKind[];
export const SUBSCRIPTION_STATUSES = [
  'active',
  'trialing',
  'past_due',
  'paused',
  'canceled',
  'expired',
  'refunded',
  'disputed',
  'paid',
] as const satisfies readonly SubscriptionStatus[];

/** A query id: digits become a number; anything else stays as sent, for IsInt to refuse. */
const QueryId = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value,
  );

/** The subscription list's filters besides per_page and cursor; each narrows the list. */
export class SubscriptionListQueryDto extends CursorQueryDto {
  @ApiPropertyOptional({ enum: SUBSCRIPTION_STATUSES })
  @IsOptional()
  @IsIn(SUBSCRIPTION_STATUSES, {
    message: `The selected status is invalid: use ${SUBSCRIPTION_STATUSES.join(', ')}.`,
  })
  status?: SubscriptionStatus;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: "Only this customer's purchases" })
  @IsOptional()
  @QueryId()
  @IsInt({ message: 'The customer id field must be a positive integer.' })
  @Min(1, { message: 'The customer id field must be a positive integer.' })
  @Max(2_147_483_647, { message: 'The customer id field must be a positive integer.' })
  customer_id?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: "Only this payment connector's purchases",
  })
  @IsOptional()
  @QueryId()
  @IsInt({ message: 'The connector id field must be a positive integer.' })
  @Min(1, { message: 'The connector id field must be a positive integer.' })
  @Max(2_147_483_647, { message: 'The connector id field must be a positive integer.' })
  connector_id?: number;
}
