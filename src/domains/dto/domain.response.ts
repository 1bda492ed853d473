import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({ name: 'Domain' })
export class DomainResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ example: 'shop.example.com', description: 'Lowercased, punycode, no trailing dot' })
  domain: string;

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

  @ApiProperty()
  is_active: boolean;

  @ApiProperty({ description: 'At most one domain of a project is primary' })
  is_primary: boolean;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}
