import { ApiProperty, ApiSchema, OmitType } from '@nestjs/swagger';
import { INJECTABLE_MODES, INJECTABLE_TYPES } from '../injectable.entity.js';

const ENCRYPTED = 'base64("LG1" ‖ salt ‖ iv ‖ tag ‖ ciphertext), encrypted with the secret given at upload';

@ApiSchema({ name: 'Injectable' })
export class InjectableResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty()
  slug: string;

  @ApiProperty({ type: 'string', nullable: true })
  title: string | null;

  @ApiProperty({ enum: INJECTABLE_TYPES })
  type: string;

  @ApiProperty({ enum: INJECTABLE_MODES })
  mode: string;

  @ApiProperty({ type: 'string', nullable: true })
  target_path: string | null;

  @ApiProperty({ type: 'string', format: 'uri', nullable: true })
  validate_endpoint: string | null;

  @ApiProperty({ format: 'byte', description: ENCRYPTED })
  content: string;

  @ApiProperty({ format: 'byte', description: 'The same value as content' })
  encrypted_content: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'type=file: the original file name, encrypted like content; null otherwise',
  })
  file_path: string | null;

  @ApiProperty({
    description:
      'SHA-256 (hex) of the encrypted blob that content carries (base64-decoded); the signature covers it',
  })
  content_hash: string;

  @ApiProperty({ description: 'Ed25519 signature (base64), verifiable with the project signing key' })
  signature: string;

  @ApiProperty()
  is_active: boolean;

  @ApiProperty()
  only_if_paid: boolean;

  @ApiProperty({ type: 'object', additionalProperties: true })
  meta: Record<string, unknown>;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({
  name: 'InjectableListItem',
  description:
    'An injectable without its payload: read the injectable itself for content and encrypted_content.',
})
export class InjectableListItemResponse extends OmitType(InjectableResponse, [
  'content',
  'encrypted_content',
] as const) {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: "Size in bytes of the payload as uploaded (the content's UTF-8 bytes or the file's bytes)",
  })
  content_size: number;
}

/** The stream's item keys (docs/decisions.md#injectables). */
@ApiSchema({ name: 'StreamInjectable' })
export class StreamInjectableResponse {
  @ApiProperty()
  slug: string;

  @ApiProperty({ enum: INJECTABLE_TYPES })
  type: string;

  @ApiProperty({ enum: INJECTABLE_MODES })
  mode: string;

  @ApiProperty({ format: 'byte', description: ENCRYPTED })
  encrypted_content: string;

  @ApiProperty({ type: 'string', nullable: true })
  file_path: string | null;

  @ApiProperty({ type: 'string', nullable: true })
  target_path: string | null;

  @ApiProperty()
  signature: string;

  @ApiProperty({ type: 'object', additionalProperties: true })
  meta: Record<string, unknown>;
}

@ApiSchema({ name: 'InjectableStreamPage' })
export class InjectableStreamPageResponse {
  @ApiProperty({
    type: () => StreamInjectableResponse,
    isArray: true,
    description: 'Active injectables in id order; paid-only ones once the project is paid',
  })
  injectables: StreamInjectableResponse[];

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Pass it back as `cursor`; null on the last page',
  })
  next_cursor: string | null;

  @ApiProperty()
  has_more: boolean;
}
