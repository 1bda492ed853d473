import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsNotEmpty, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { OptionalNonNullInt } from '../../common/http/validators.js';

export const IDEMPOTENCY_KEY_TRAILING_SPACE = 'The idempotency key field must not end with a space.';

@ApiSchema({ name: 'UsageRecordRequest' })
export class RecordUsageDto {
  @ApiProperty({ example: 'meter.ai_credits', description: 'A meter entitlement of the license (`meter.*`)' })
  @IsNotEmpty({ message: 'The meter field is required.' })
  @IsString({ message: 'The meter field must be a string.' })
  @MaxLength(64, { message: 'The meter field must not be greater than 64 characters.' })
  meter: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1_000_000, default: 1, example: 1 })
  @OptionalNonNullInt('amount', 1, 1_000_000)
  amount?: number;

  @ApiProperty({
    minLength: 1,
    maxLength: 100,
    example: 'job-7f3a2c',
    description:
      'Bound to (license, meter, amount) for 35 days: sent again it counts nothing and answers the first answer; with another meter or amount it is a 422',
  })
  @IsNotEmpty({ message: 'The idempotency key field is required.' })
  @IsString({ message: 'The idempotency key field must be a string.' })
  @MinLength(1, { message: 'The idempotency key field is required.' })
  @MaxLength(100, { message: 'The idempotency key field must not be greater than 100 characters.' })
  // MariaDB compares strings padded with spaces: "k1 " would be taken for "k1" and count nothing.
  @Matches(/[^ ]$/, { message: IDEMPOTENCY_KEY_TRAILING_SPACE })
  idempotency_key: string;

  @ApiPropertyOptional({
    description: 'The license key, when neither X-LICENSE-KEY nor the `license` query parameter is sent',
  })
  license?: string;
}

@ApiSchema({ name: 'UsageRecord' })
export class UsageRecordResponse {
  @ApiProperty({ example: 'meter.ai_credits' })
  meter: string;

  @ApiProperty({ type: 'integer', description: 'Used this UTC calendar month, this call included' })
  used: number;

  @ApiProperty({ type: 'integer', description: 'The monthly quota' })
  limit: number;

  @ApiProperty({ type: 'integer' })
  remaining: number;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'The start of the next UTC month' })
  resets_at: string;
}
