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

  @ApiProperty({ description: 'A read-only key may not write' })
  read_only: boolean;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'When the key stops working; null: never. A rolled key stops when its grace period ends',
  })
  expires_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  revoked_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'Kept within a minute' })
  last_used_at: string | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'When the key was rolled (replaced by a new one)',
  })
  rolled_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

/** The create answer: the only time the plaintext key is shown. */
@ApiSchema({ name: 'ApiKeyCreated' })
export class ApiKeyCreatedResponse extends ApiKeyResponse {
  @ApiProperty({
    example: 'lg_0123456789abcdefghijABCDEFGHIJ-_0123456789a',
    description: 'The plaintext key, shown once: lg_ + 43 base64url characters',
  })
  key: string;
}

/** The roll answer: the new key (its plaintext shown once) and the old one, working until its expires_at. */
@ApiSchema({ name: 'ApiKeyRolled' })
export class ApiKeyRolledResponse extends ApiKeyCreatedResponse {
  @ApiProperty({
    type: () => ApiKeyResponse,
    description: 'The rolled key: it works until its expires_at, then answers 403',
  })
  previous_key: ApiKeyResponse;
}
