import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema, OmitType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsNotEmpty, IsOptional, IsString, Matches, ValidateIf } from 'class-validator';
import {
  MaxChars,
  MetaObject,
  MinChars,
  OptionalString,
  OptionalUrl,
  label,
} from '../../common/http/validators.js';
import { INJECTABLE_MODES, INJECTABLE_TYPES } from '../injectable.entity.js';

/** The shortest injectable secret accepted (docs/security.md). */
export const MIN_SECRET_CHARS = 12;

/** Multipart sends every field as text: true/false/1/0 become booleans. */
const toBoolean = ({ value }: { value: unknown }) => {
  if (value === 'true' || value === '1' || value === 1) return true;
  if (value === 'false' || value === '0' || value === 0) return false;
  return value;
};

const FormBoolean = (field: string, example: boolean) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'boolean', example }),
    Transform(toBoolean),
    ValidateIf((_, value) => value !== undefined),
    IsBoolean({ message: `The ${label(field)} field must be true or false.` }),
  );

/** Fields shared by create and update (only supplied fields change; docs/decisions.md#injectables). */
class InjectableFieldsDto {
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 255, example: 'Pro badge' })
  @OptionalString('title', 255)
  title?: string | null;

  @ApiPropertyOptional({
    enum: INJECTABLE_TYPES,
    example: 'script',
    description: 'snippet when omitted (file with an uploaded file)',
  })
  @IsOptional()
  @IsIn(INJECTABLE_TYPES, {
    message: `The selected type is invalid: use one of ${INJECTABLE_TYPES.join(', ')}.`,
  })
  type?: string;

  @ApiPropertyOptional({ enum: INJECTABLE_MODES, example: 'inject', description: 'inject when omitted' })
  @IsOptional()
  @IsIn(INJECTABLE_MODES, {
    message: `The selected mode is invalid: use one of ${INJECTABLE_MODES.join(', ')}.`,
  })
  mode?: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 1024, example: 'body' })
  @OptionalString('target_path', 1024)
  target_path?: string | null;

  @ApiPropertyOptional({ type: 'string', format: 'uri', nullable: true, example: null })
  @OptionalUrl('validate_endpoint')
  validate_endpoint?: string | null;

  @ApiPropertyOptional({
    writeOnly: true,
    example: 'correct horse battery staple',
    description:
      'Encryption secret; required with new content, a file, or a switch to type file. Never stored.',
    minLength: MIN_SECRET_CHARS,
    maxLength: 1024,
  })
  @IsOptional()
  @IsString({ message: 'The secret field must be a string.' })
  // Every license holder receives the sealed payloads and can try secrets offline (docs/security.md).
  @MinChars(MIN_SECRET_CHARS, {
    message: `The secret field must be at least ${MIN_SECRET_CHARS} characters.`,
  })
  @MaxChars(1024, { message: 'The secret field must not be greater than 1024 characters.' })
  @Matches(/\S/, { message: 'The secret field must not be only white space.' })
  secret?: string;

  @ApiPropertyOptional({
    example: '<script>window.ACME_PRO = true;</script>',
    description: 'Plain content to encrypt (non-file injectables); exclusive with file',
  })
  @IsOptional()
  @IsString({ message: 'The content field must be a string.' })
  content?: string;

  @FormBoolean('only_if_paid', true)
  only_if_paid?: boolean;

  @FormBoolean('is_active', true)
  is_active?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    example: {},
    description: 'A JSON object or a JSON string of one',
  })
  @MetaObject()
  meta?: Record<string, unknown> | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'binary',
    description: 'multipart/form-data only: the file of a type=file injectable',
  })
  file?: unknown;
}

const SLUG_RULES = [
  IsString({ message: 'The slug field must be a string.' }),
  MaxChars(255, { message: 'The slug field must not be greater than 255 characters.' }),
  Matches(/^[A-Za-z0-9_-]+$/, {
    message: 'The slug field must only contain letters, numbers, dashes, and underscores.',
  }),
];

export class CreateInjectableDto extends InjectableFieldsDto {
  @ApiProperty({
    maxLength: 255,
    pattern: '^[A-Za-z0-9_-]+$',
    example: 'pro-badge',
    description: 'Unique within the project',
  })
  @IsNotEmpty({ message: 'The slug field is required.' })
  @applyDecorators(...SLUG_RULES)
  slug: string;
}

export class UpdateInjectableDto extends InjectableFieldsDto {
  @ApiPropertyOptional({
    maxLength: 255,
    pattern: '^[A-Za-z0-9_-]+$',
    example: 'pro-badge',
    description: 'Unique within the project',
  })
  @IsOptional()
  @applyDecorators(...SLUG_RULES)
  slug?: string;
}

/*
 * The bodies as documented, per media type (ApiBodies): what the server requires of each. JSON carries
 * no file, so a JSON create requires `content`; a multipart create takes `content` or a `file`.
 * Documentation only: requests are validated with the DTOs above.
 */

const SECRET =
  'Encryption secret; never stored. Later payloads need the secret they were sealed with to be decrypted.';

@ApiSchema({ name: 'CreateInjectableJson', description: 'Create with the payload as `content`.' })
export class CreateInjectableJsonBody extends OmitType(CreateInjectableDto, [
  'file',
  'secret',
  'content',
] as const) {
  @ApiProperty({
    writeOnly: true,
    example: 'correct horse battery staple',
    description: SECRET,
    minLength: MIN_SECRET_CHARS,
    maxLength: 1024,
  })
  secret: string;

  @ApiProperty({
    example: '<script>window.ACME_PRO = true;</script>',
    description: 'Plain content to encrypt',
  })
  content: string;
}

@ApiSchema({
  name: 'CreateInjectableMultipart',
  description: 'Create with the payload as `content`, or as an uploaded `file` (type file).',
})
export class CreateInjectableMultipartBody extends OmitType(CreateInjectableDto, [
  'secret',
  'content',
  'file',
] as const) {
  @ApiProperty({
    writeOnly: true,
    example: 'correct horse battery staple',
    description: SECRET,
    minLength: MIN_SECRET_CHARS,
    maxLength: 1024,
  })
  secret: string;

  @ApiPropertyOptional({
    example: '<script>window.ACME_PRO = true;</script>',
    description: 'Plain content to encrypt; required unless a file is uploaded',
  })
  content?: string;

  @ApiPropertyOptional({
    type: 'string',
    format: 'binary',
    description: 'The payload of a type=file injectable (then type may be omitted); exclusive with content',
  })
  file?: unknown;
}

@ApiSchema({
  name: 'UpdateInjectableJson',
  description: 'Only the fields sent change; new `content` needs `secret`.',
})
export class UpdateInjectableJsonBody extends OmitType(UpdateInjectableDto, ['file'] as const) {}

@ApiSchema({
  name: 'UpdateInjectableMultipart',
  description: 'Only the fields sent change; new `content` or a `file` needs `secret`.',
})
export class UpdateInjectableMultipartBody extends UpdateInjectableDto {}
