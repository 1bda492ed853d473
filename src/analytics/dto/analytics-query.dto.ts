import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { isoDate } from '../../audit/dto/audit-query.dto.js';

export const GRANULARITIES = ['hour', 'day'] as const;
export type Granularity = (typeof GRANULARITIES)[number];
export const GROUPINGS = ['outcome', 'reason', 'domain', 'country', 'license', 'project'] as const;
export type Grouping = (typeof GROUPINGS)[number];

/** Series an answer may hold at most: 200 keys × 744 hours stays a few megabytes. */
export const MAX_SERIES = 200;
/** Series of an open-ended grouping when `limit` is not sent. */
export const DEFAULT_SERIES = 50;
const LIMIT_INVALID = `The limit field must be an integer between 1 and ${MAX_SERIES}.`;

/** The analytics' range, buckets and grouping (docs/analytics.md#the-api). */
export class AnalyticsQueryDto {
  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    example: '2026-11-01T00:00:00Z',
    description:
      'Start: the UTC bucket (hour or day) containing it is the first. Default: 7 days back from `to` (7 days, or 168 hours)',
  })
  @IsOptional()
  @Transform(isoDate)
  @IsDate({ message: 'The from field must be an ISO-8601 date or date-time.' })
  from?: Date;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    example: '2026-11-30T23:59:59Z',
    description:
      'End, inclusive: the UTC bucket containing it is the last. Default: now. At most 31 days by hour (744 buckets), 366 by day',
  })
  @IsOptional()
  @Transform(isoDate)
  @IsDate({ message: 'The to field must be an ISO-8601 date or date-time.' })
  to?: Date;

  @ApiPropertyOptional({ enum: GRANULARITIES, default: 'day', description: 'Bucket size, aligned to UTC' })
  @IsOptional()
  @IsIn(GRANULARITIES, { message: 'The selected granularity is invalid: use hour or day.' })
  granularity?: Granularity;

  @ApiPropertyOptional({
    enum: GROUPINGS,
    default: 'outcome',
    description:
      'One series per outcome, refusal reason, registered domain (id), country, license (id; from the per-license daily counts, day granularity only) or project (GET /analytics only)',
  })
  @IsOptional()
  @IsIn(GROUPINGS, {
    message: 'The selected group by is invalid: use outcome, reason, domain, country, license or project.',
  })
  group_by?: Grouping;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_SERIES,
    default: DEFAULT_SERIES,
    description:
      'Series at most, the busiest of the range first, for the open-ended groupings (domain, country, license, project); `has_more` says whether keys were left out',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: LIMIT_INVALID })
  @Min(1, { message: LIMIT_INVALID })
  @Max(MAX_SERIES, { message: LIMIT_INVALID })
  limit?: number;
}
