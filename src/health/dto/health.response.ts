import { ApiProperty, ApiPropertyOptional, ApiSchema, type SchemaObject } from '@nestjs/swagger';

const INDICATOR: SchemaObject = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', example: 'up' } },
  additionalProperties: true,
};
const INDICATORS = {
  type: 'object' as const,
  additionalProperties: INDICATOR,
  example: { database: { status: 'up' } },
};

/** @nestjs/terminus' HealthCheckResult. */
@ApiSchema({ name: 'Health' })
export class HealthResponse {
  @ApiProperty({ enum: ['ok', 'error', 'shutting_down'] })
  status: string;

  @ApiPropertyOptional({ ...INDICATORS, nullable: true, description: 'The checks that are up' })
  info?: Record<string, { status: string }> | null;

  @ApiPropertyOptional({ ...INDICATORS, nullable: true, description: 'The checks that are down' })
  error?: Record<string, { status: string }> | null;

  @ApiProperty({ ...INDICATORS, description: 'Every check' })
  details: Record<string, { status: string }>;
}

@ApiSchema({ name: 'Liveness' })
export class LivenessResponse {
  @ApiProperty({ enum: ['ok'] })
  status: 'ok';
}
