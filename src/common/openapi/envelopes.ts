import { ApiProperty, ApiSchema, type HeadersObject } from '@nestjs/swagger';

/*
 * The envelope (docs/decisions.md#the-envelope-and-errors) as OpenAPI schemas. Documentation only:
 * nothing here changes what a route does. A generated client reads `data` of a success answer as the
 * model the operation names, and `errors` of a 422 as field → messages. The example of each error
 * answer is set per operation (error-examples.ts), so the schemas carry none of their own.
 */

export const REQUEST_ID_HEADER: HeadersObject = {
  'X-Request-Id': {
    description: 'The request id: echoed when the request sent a valid one, generated otherwise',
    schema: { type: 'string' },
  },
};

export const RETRY_AFTER: HeadersObject = {
  'Retry-After': {
    description: 'Seconds to wait before trying again (429: until the limit resets)',
    schema: { type: 'integer', minimum: 1 },
  },
};

/** A property that is always JSON `null` (OpenAPI 3.0 has no null type: a nullable object whose only value is null). */
export const NULL_SCHEMA = {
  type: 'object' as const,
  additionalProperties: false,
  nullable: true,
  enum: [null],
  example: null,
};

@ApiSchema({
  name: 'SuccessEnvelope',
  description: 'Every successful answer; each operation describes `data`.',
})
export class SuccessEnvelope {
  @ApiProperty({ enum: ['success'], example: 'success' })
  status: 'success';

  @ApiProperty({ example: 'Success' })
  message: string;

  @ApiProperty({ ...NULL_SCHEMA, description: 'Always null on success' })
  errors: null;
}

@ApiSchema({
  name: 'ErrorEnvelope',
  description:
    'Every error answer except 422 (ValidationErrorEnvelope) and runtime refusals (RefusalEnvelope).',
})
export class ErrorEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ description: 'What went wrong, as a sentence' })
  message: string;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'Null, except where an operation says otherwise (503: the failing checks)',
  })
  data: Record<string, unknown> | null;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: { type: 'array', items: { type: 'string' } },
    description: 'Null outside 422',
  })
  errors: Record<string, string[]> | null;
}

@ApiSchema({
  name: 'ValidationErrorEnvelope',
  description: '422: `errors` maps each invalid field to its messages.',
})
export class ValidationErrorEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ description: 'The first field message' })
  message: string;

  @ApiProperty({ ...NULL_SCHEMA })
  data: null;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    description: 'Each invalid field → its messages (one per field)',
  })
  errors: Record<string, string[]>;
}

@ApiSchema({ name: 'RefusalData' })
export class RefusalData {
  @ApiProperty({
    type: 'string',
    nullable: true,
    description: "The project's default_redirect_url; null when the project is unknown or has none",
  })
  redirect_url: string | null;
}

@ApiSchema({
  name: 'RefusalEnvelope',
  description:
    'A runtime refusal (license-key endpoints): `data.redirect_url` says where to send the visitor.',
})
export class RefusalEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ description: 'Why the license was refused' })
  message: string;

  @ApiProperty({ type: () => RefusalData })
  data: RefusalData;

  @ApiProperty({ ...NULL_SCHEMA })
  errors: null;
}

@ApiSchema({ name: 'RootEnvelope', description: 'The connectivity answer of GET /api/v1/.' })
export class RootEnvelope {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status: 'ok';

  @ApiProperty({ example: 'LicenseGate API v1' })
  message: string;

  @ApiProperty({ ...NULL_SCHEMA })
  data: null;

  @ApiProperty({ ...NULL_SCHEMA })
  errors: null;
}
