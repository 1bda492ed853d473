import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { GRANULARITIES, GROUPINGS } from './analytics-query.dto.js';

@ApiSchema({
  name: 'AnalyticsPoint',
  description: 'The count of one bucket; by license, also split into paid and unpaid',
})
export class AnalyticsPointResponse {
  @ApiProperty({
    format: 'date-time',
    example: '2026-11-24T00:00:00Z',
    description: 'Start of the UTC bucket',
  })
  t: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'The answers of the bucket; with group_by=license, the checks answered (paid + unpaid)',
  })
  count: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    nullable: true,
    required: false,
    description:
      'group_by=license only: of `count`, the checks answered paid; null on a day counted before paid answers were (docs/analytics.md)',
  })
  paid?: number | null;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    nullable: true,
    required: false,
    description:
      'group_by=license only: of `count`, the checks answered unpaid (count - paid); null when `paid` is',
  })
  unpaid?: number | null;
}

@ApiSchema({
  name: 'AnalyticsSeries',
  description: 'One key of the grouping, with a point for every bucket (zeros included)',
})
export class AnalyticsSeriesResponse {
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'paid',
    description:
      'The outcome, the reason, the domain id, the country code, the license id or the project id; null: answers without a registered domain or a country',
  })
  key: string | null;

  @ApiProperty({ type: [AnalyticsPointResponse] })
  points: AnalyticsPointResponse[];
}

@ApiSchema({ name: 'AnalyticsTotals', description: 'All runtime answers of the range, by outcome' })
export class AnalyticsTotalsResponse {
  @ApiProperty({ type: 'integer', minimum: 0 })
  paid: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  unpaid: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  refused: number;
}

@ApiSchema({
  name: 'Analytics',
  description: 'What the gate answered, counted by bucket and key (docs/analytics.md)',
})
export class AnalyticsResponse {
  @ApiProperty({
    format: 'date-time',
    example: '2026-11-18T00:00:00Z',
    description: 'Start of the first bucket',
  })
  from: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-24T00:00:00Z',
    description: 'Start of the last bucket (inclusive)',
  })
  to: string;

  @ApiProperty({ enum: GRANULARITIES })
  granularity: string;

  @ApiProperty({ enum: GROUPINGS })
  group_by: string;

  @ApiProperty({
    type: [AnalyticsSeriesResponse],
    description:
      'Fixed groupings (outcome, reason): every key. Open-ended ones: at most `limit` keys, the busiest first',
  })
  series: AnalyticsSeriesResponse[];

  @ApiProperty({
    description:
      'Whether keys busy in the range were left out of `series` (beyond `limit`); `totals` counts them',
  })
  has_more: boolean;

  @ApiProperty({ type: AnalyticsTotalsResponse })
  totals: AnalyticsTotalsResponse;
}
