import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({ name: 'ApiKey' })
export class ApiKeyResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty()
  name: string;

  @ApiProperty({ example: 'lg_AbCdE', description: 'The first characters of the key, to tell keys apart' })
  prefix: string;

  @ApiProperty({ type: 'integer', nullable: true, description: 'null: a global key' })
  project_id: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  expires_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  revoked_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  last_used_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

/** The create answer: the only time the plaintext key is shown. */
@ApiSchema({ name: 'ApiKeyCreated' })
export class ApiKeyCreatedResponse extends ApiKeyResponse {
  @ApiProperty({ example: 'lg_0123456789abcdefghijABCDEFGHIJ-_0123456789a', description: 'The plaintext key, shown once: lg_ + 43 base64url characters' })
  key: string;
}
