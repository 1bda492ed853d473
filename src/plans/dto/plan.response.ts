import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { Entitlements } from '../entitlements.js';
import { ENTITLEMENTS_SCHEMA } from './plan.dto.js';

@ApiSchema({ name: 'Plan' })
export class PlanResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ example: 'pro' })
  code: string;

  @ApiProperty({ example: 'Pro' })
  name: string;

  @ApiProperty(ENTITLEMENTS_SCHEMA)
  entitlements: Entitlements;

  @ApiProperty({ type: 'integer', nullable: true })
  max_domains: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_usage_per_day: number | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

/** A license's plan as licenses answer it. */
@ApiSchema({ name: 'PlanRef' })
export class PlanRefResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ example: 'pro' })
  code: string;

  @ApiProperty({ example: 'Pro' })
  name: string;
}
