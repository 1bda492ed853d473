import { ApiPropertyOptional } from '@nestjs/swagger';
import {
  OptionalBoolean,
  OptionalFutureDate,
  OptionalInt,
  OptionalString,
} from '../../common/http/validators.js';
import { DEFAULT_ROLL_GRACE_SECONDS, MAX_ROLL_GRACE_SECONDS } from '../auth.service.js';

export class CreateApiKeyDto {
  @ApiPropertyOptional({
    maxLength: 255,
    example: 'dashboard',
    description: '"default" when omitted or blank',
  })
  @OptionalString('name', 255)
  name?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    nullable: true,
    example: null,
    description: 'Scope the key to one of your projects; omit (or null) for a global key',
  })
  @OptionalInt('project_id', 1)
  project_id?: number | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When the key stops working; null: never',
  })
  @OptionalFutureDate('expires_at')
  expires_at?: Date | null;

  @ApiPropertyOptional({
    default: false,
    example: false,
    description: 'A read-only key reads everything its scope allows; every write answers 403',
  })
  @OptionalBoolean('read_only')
  read_only?: boolean;
}

export class RollApiKeyDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_ROLL_GRACE_SECONDS,
    default: DEFAULT_ROLL_GRACE_SECONDS,
    example: 3600,
    description: 'How long the old key keeps working, in seconds from now (0: it stops at once)',
  })
  @OptionalInt('grace_seconds', 0, MAX_ROLL_GRACE_SECONDS)
  grace_seconds?: number;
}
