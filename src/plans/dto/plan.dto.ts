import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Matches } from 'class-validator';
import type { SchemaObject } from '@nestjs/swagger';
import { applyDecorators } from '@nestjs/common';
import { OptionalInt, RequiredString } from '../../common/http/validators.js';
import { type Entitlements, PLAN_CODE, PLAN_CODE_INVALID } from '../entitlements.js';
import { EntitlementsField } from './entitlements.validator.js';

const Limit = (field: string, example: number) =>
  applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      minimum: 0,
      nullable: true,
      example,
      description: 'Taken by a license on this plan that leaves its own null',
    }),
    OptionalInt(field, 0),
  );

export const ENTITLEMENTS_SCHEMA: {
  type: 'object';
  additionalProperties: SchemaObject;
  maxProperties: number;
  example: Record<string, unknown>;
  description: string;
} = {
  type: 'object',
  additionalProperties: {
    oneOf: [
      { type: 'boolean' },
      { type: 'integer', minimum: 0, maximum: 2147483647 },
      { type: 'string', maxLength: 200 },
    ],
  },
  maxProperties: 100,
  example: { sso: true, seats: 5, support: 'email', 'meter.ai_credits': 1000 },
  description:
    'Codes matching `^[a-z0-9][a-z0-9_.-]{0,63}$`, each a boolean, an integer 0–2147483647 or a string of at most 200 characters; an integer whose code starts with `meter.` is a monthly quota',
};

export class CreatePlanDto {
  @ApiProperty({ pattern: PLAN_CODE.source, example: 'pro', description: 'Unique within the project' })
  @RequiredString('code', 64)
  @Matches(PLAN_CODE, { message: PLAN_CODE_INVALID })
  code: string;

  @ApiProperty({ maxLength: 255, example: 'Pro' })
  @RequiredString('name', 255)
  name: string;

  @ApiPropertyOptional({ ...ENTITLEMENTS_SCHEMA, default: {} })
  @EntitlementsField(false)
  entitlements?: Entitlements;

  @Limit('max_domains', 3)
  max_domains?: number | null;

  @Limit('max_subdomains_per_domain', 10)
  max_subdomains_per_domain?: number | null;

  @Limit('max_usage_per_day', 100000)
  max_usage_per_day?: number | null;
}

export class UpdatePlanDto extends PartialType(CreatePlanDto) {}
