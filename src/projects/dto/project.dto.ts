import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, Matches } from 'class-validator';
import { MaxChars, MetaObject, OptionalBoolean, OptionalString, OptionalUrl } from '../../common/validators.js';

/** Seed 4.4. The same rules serve create, PATCH (every field optional) and PUT. */
export class CreateProjectDto {
  @ApiProperty({ maxLength: 255, example: 'Acme Shop' })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsNotEmpty({ message: 'The name field is required.' })
  @IsString({ message: 'The name field must be a string.' })
  @MaxChars(255, { message: 'The name field must not be greater than 255 characters.' })
  name: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 255, pattern: '^[A-Za-z0-9_-]+$', description: 'Generated from name when omitted' })
  @IsOptional()
  @IsString({ message: 'The slug field must be a string.' })
  @MaxChars(255, { message: 'The slug field must not be greater than 255 characters.' })
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'The slug field must only contain letters, numbers, dashes, and underscores.' })
  slug?: string | null;

  @ApiPropertyOptional({ type: 'string', maxLength: 1000, nullable: true })
  @OptionalString('description', 1000)
  description?: string | null;

  @ApiPropertyOptional({ type: 'string', format: 'uri', nullable: true })
  @OptionalUrl('default_redirect_url')
  default_redirect_url?: string | null;

  @ApiPropertyOptional({ type: 'string', format: 'uri', nullable: true })
  @OptionalUrl('webhook_url')
  webhook_url?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 255, description: 'Accepted, stored encrypted, never returned', writeOnly: true })
  @OptionalString('webhook_secret', 255)
  webhook_secret?: string | null;

  @ApiPropertyOptional({ type: 'string', format: 'uri', nullable: true })
  @OptionalUrl('logo_url')
  logo_url?: string | null;

  @ApiPropertyOptional({ type: 'object', nullable: true, additionalProperties: true, description: 'A JSON object, or a JSON string that decodes to one; null stores {}' })
  @MetaObject()
  meta?: Record<string, unknown> | null;

  @ApiPropertyOptional({ default: false })
  @OptionalBoolean('has_paid')
  has_paid?: boolean;

  @ApiPropertyOptional({ default: true })
  @OptionalBoolean('is_active')
  is_active?: boolean;
}

// Null is checked like any value (not skipped as "omitted"): only the nullable fields take it.
export class UpdateProjectDto extends PartialType(CreateProjectDto, { skipNullProperties: false }) {}

export class LockProjectDto {
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 1000 })
  @OptionalString('reason', 1000)
  reason?: string | null;
}
