import { ApiProperty, ApiSchema, OmitType } from '@nestjs/swagger';

/** A project as answered by GET, PATCH, PUT, lock and unlock (ProjectEntity without its hidden fields). */
@ApiSchema({ name: 'Project' })
export class ProjectResponse {
  @ApiProperty({ type: 'integer', example: 1 })
  id: number;

  @ApiProperty({ example: 'Acme Shop' })
  name: string;

  @ApiProperty({ example: 'acme-shop' })
  slug: string;

  @ApiProperty({ type: 'string', nullable: true })
  description: string | null;

  @ApiProperty({
    type: 'string',
    format: 'uri',
    nullable: true,
    description: 'Where runtime clients send visitors when has_paid is false',
  })
  default_redirect_url: string | null;

  @ApiProperty({ type: 'string', format: 'uri', nullable: true })
  webhook_url: string | null;

  @ApiProperty({
    type: 'array',
    items: { type: 'string' },
    example: ['*'],
    description: 'The events the webhook is sent; ["*"]: every one',
  })
  webhook_events: string[];

  @ApiProperty({ description: 'false: no event is sent' })
  webhook_enabled: boolean;

  @ApiProperty({ type: 'string', format: 'uri', nullable: true })
  logo_url: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true, example: {} })
  meta: Record<string, unknown>;

  @ApiProperty()
  is_active: boolean;

  @ApiProperty()
  has_paid: boolean;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description:
      "A payment connector's unpaid event: has_paid stays true until then, then becomes false (docs/payments.md); null when no grace runs",
  })
  grace_until: string | null;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: 720,
    example: 72,
    description: 'Hours an offline token stays valid; 0 issues none',
  })
  offline_grace_hours: number;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'Set while the project is locked',
  })
  locked_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', example: '2025-12-01T10:12:00Z' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time', example: '2025-12-01T10:12:00Z' })
  updated_at: string;
}

/** The create answer lists the project without `locked_at` (docs/decisions.md#projects). */
@ApiSchema({ name: 'ProjectCreated' })
export class ProjectCreatedResponse extends OmitType(ProjectResponse, ['locked_at'] as const) {}

@ApiSchema({
  name: 'SigningKey',
  description: "The Ed25519 public key that verifies the project's injectable signatures",
})
export class SigningKeyResponse {
  @ApiProperty({ enum: ['Ed25519'] })
  algorithm: 'Ed25519';

  @ApiProperty({ description: 'SPKI PEM' })
  public_key_pem: string;

  @ApiProperty({ format: 'byte', description: 'The raw 32-byte key, base64' })
  public_key: string;
}
