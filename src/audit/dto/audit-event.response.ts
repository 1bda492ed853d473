import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

@ApiSchema({
  name: 'AuditActor',
  description:
    "Who made the write: an API key (with its owner), a person signed in (user), the admin CLI, a license holder, a payment provider's event (a payment connector), or a buyer in the customer portal",
})
export class AuditActorResponse {
  @ApiProperty({ enum: ['api_key', 'cli', 'license', 'payment', 'user', 'portal'] })
  type: 'api_key' | 'cli' | 'license' | 'payment' | 'user' | 'portal';

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'The API key; null for the CLI and a license',
  })
  api_key_id: number | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'lg_AbCdE',
    description: 'The first characters of the API key',
  })
  api_key_prefix: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: "The API key's owner, or the person signed in; null for the CLI and a license",
  })
  user_id: number | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    example: 'stripe',
    description: 'Type payment only: the provider whose event made the write',
  })
  provider?: string | null;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description: 'Type payment only: the payment connector that received it (null once deleted)',
  })
  connector_id?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description:
      'Type portal only: the customer whose portal made the write (null for a portal opened on one license without a customer)',
  })
  customer_id?: number | null;
}

@ApiSchema({
  name: 'AuditEvent',
  description: 'One management write, recorded in the same transaction as the change',
})
export class AuditEventResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({
    example: 'license.revoked',
    description:
      'A webhook event name, or api_key.created|revoked|rolled, webhook_delivery.retried, portal_session.created|opened',
  })
  action: string;

  @ApiProperty({
    example: 'license',
    enum: [
      'project',
      'domain',
      'license',
      'injectable',
      'api_key',
      'webhook_delivery',
      'payment_connector',
      'portal_session',
    ],
  })
  resource_type: string;

  @ApiProperty({ type: 'integer', nullable: true })
  resource_id: number | null;

  @ApiProperty({ type: 'integer', nullable: true, description: 'null for an API key of no project' })
  project_id: number | null;

  @ApiProperty({ type: () => AuditActorResponse })
  actor: AuditActorResponse;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { revoked_at: [null, '2026-11-23T10:12:00Z'] },
    description:
      'field → [before, after] of every field the write changed; secrets appear as "[redacted]", payloads never',
  })
  changes: Record<string, [unknown, unknown]>;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The X-Request-Id of the write; null for the CLI',
  })
  request_id: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: '203.0.113.7' })
  ip: string | null;

  @ApiProperty({ type: 'string', nullable: true })
  user_agent: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;
}
