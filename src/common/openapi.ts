import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiParam,
  ApiProperty,
  ApiQuery,
  ApiResponse,
  ApiSchema,
  getSchemaPath,
  type HeadersObject,
  type ReferenceObject,
  type SchemaObject,
} from '@nestjs/swagger';

/*
 * OpenAPI descriptions of the envelope (docs/decisions.md#the-envelope-and-errors) shared by every controller. Documentation only: nothing
 * here changes what a route does. A generated client reads `data` of a success answer as the model the
 * operation names, and `errors` of a 422 as field → messages.
 */

export const REQUEST_ID_HEADER: HeadersObject = {
  'X-Request-Id': { description: 'The request id: echoed when the request sent a valid one, generated otherwise', schema: { type: 'string' } },
};

const RETRY_AFTER: HeadersObject = {
  'Retry-After': { description: 'Seconds to wait before trying again (429: until the limit resets)', schema: { type: 'integer', minimum: 1 } },
};

/** A property that is always JSON `null` (OpenAPI 3.0 has no null type: a nullable object whose only value is null). */
const NULL_SCHEMA = { type: 'object' as const, additionalProperties: false, nullable: true, enum: [null], example: null };

@ApiSchema({ name: 'SuccessEnvelope', description: 'Every successful answer; each operation describes `data`.' })
export class SuccessEnvelope {
  @ApiProperty({ enum: ['success'], example: 'success' })
  status: 'success';

  @ApiProperty({ example: 'Success' })
  message: string;

  @ApiProperty({ ...NULL_SCHEMA, description: 'Always null on success' })
  errors: null;
}

@ApiSchema({ name: 'ErrorEnvelope', description: 'Every error answer except 422 (ValidationErrorEnvelope) and runtime refusals (RefusalEnvelope).' })
export class ErrorEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ example: 'Project not found.' })
  message: string;

  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true, description: 'Null, except where an operation says otherwise (503: the failing checks)' })
  data: Record<string, unknown> | null;

  @ApiProperty({ type: 'object', nullable: true, additionalProperties: { type: 'array', items: { type: 'string' } }, description: 'Null outside 422' })
  errors: Record<string, string[]> | null;
}

@ApiSchema({ name: 'ValidationErrorEnvelope', description: '422: `errors` maps each invalid field to its messages.' })
export class ValidationErrorEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ example: 'The slug has already been taken.' })
  message: string;

  @ApiProperty({ ...NULL_SCHEMA })
  data: null;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    example: { slug: ['The slug has already been taken.'] },
  })
  errors: Record<string, string[]>;
}

@ApiSchema({ name: 'RefusalData' })
export class RefusalData {
  @ApiProperty({ type: 'string', nullable: true, description: "The project's default_redirect_url; null when the project is unknown or has none" })
  redirect_url: string | null;
}

@ApiSchema({ name: 'RefusalEnvelope', description: 'A runtime refusal (license-key endpoints): `data.redirect_url` says where to send the visitor.' })
export class RefusalEnvelope {
  @ApiProperty({ enum: ['error'], example: 'error' })
  status: 'error';

  @ApiProperty({ example: 'This license has been revoked.' })
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

export interface EnvelopeOptions {
  /** HTTP status of the answer; 200 unless given. */
  status?: number;
  description?: string;
  /** `data` is an array of the model. */
  isArray?: boolean;
  /** `data` is a cursor page: `{data: Model[], next_cursor}`. */
  cursor?: boolean;
}

/**
 * The success answer: the envelope with `data` as `model` (or an array / a cursor page of it), or
 * `data: null` when `model` is null (deletes).
 */
export function ApiEnvelope(model: Type<unknown> | null, options: EnvelopeOptions = {}) {
  let data: SchemaObject | ReferenceObject;
  if (model === null) {
    data = { ...NULL_SCHEMA, description: 'Always null' };
  } else if (options.cursor) {
    data = {
      type: 'object',
      required: ['data', 'next_cursor'],
      properties: {
        data: { type: 'array', items: { $ref: getSchemaPath(model) } },
        next_cursor: { type: 'string', nullable: true, description: 'Pass it back as `cursor` for the next page; null on the last page' },
      },
    };
  } else if (options.isArray) {
    data = { type: 'array', items: { $ref: getSchemaPath(model) } };
  } else {
    data = { $ref: getSchemaPath(model) };
  }
  const status = options.status ?? 200;
  return applyDecorators(
    ApiExtraModels(SuccessEnvelope, ...(model ? [model] : [])),
    ApiResponse({
      status,
      description: options.description ?? (status === 201 ? 'Created' : 'Success'),
      headers: REQUEST_ID_HEADER,
      schema: { allOf: [{ $ref: getSchemaPath(SuccessEnvelope) }, { type: 'object', required: ['data'], properties: { data } }] },
    }),
  );
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed JSON, or a JSON body that is not an object',
  401: 'Missing credentials',
  403: 'Forbidden',
  404: 'Not found, or a path id that is not a positive integer',
  409: 'Conflict',
  413: 'The body is larger than MAX_UPLOAD_BYTES',
  415: 'Unsupported content type: send application/json',
  422: 'Validation failed; `errors` maps each field to its messages',
  429: 'Too many requests; Retry-After says when to try again',
  500: 'Unexpected failure (generic message; logged with the request id)',
  503: 'A dependency is down',
};

export type ErrorSpec = number | { status: number; description?: string; refusal?: boolean; retryAfter?: boolean };

/** Any operation that reads or writes the database (README, "When the database is away"). */
export const DATABASE_AWAY = {
  status: 503,
  description: 'The database is busy or unavailable; try again after Retry-After. A change whose COMMIT went unanswered may or may not have been stored (the message says so)',
  retryAfter: true,
} satisfies ErrorSpec;

/**
 * Error answers in the envelope: 422 as ValidationErrorEnvelope, `refusal` ones (runtime checks) as
 * RefusalEnvelope, the rest as ErrorEnvelope; 429 and `retryAfter` ones with Retry-After. A later
 * spec of the same status replaces an earlier one.
 */
export function ApiErrors(...specs: ErrorSpec[]) {
  const byStatus = new Map<number, { status: number; description?: string; refusal?: boolean; retryAfter?: boolean }>();
  for (const spec of specs) {
    const entry = typeof spec === 'number' ? { status: spec } : spec;
    byStatus.set(entry.status, entry);
  }
  return applyDecorators(
    ...[...byStatus.values()].map(({ status, description, refusal, retryAfter }) => {
      const type = status === 422 ? ValidationErrorEnvelope : refusal ? RefusalEnvelope : ErrorEnvelope;
      return ApiResponse({
        status,
        description: description ?? ERROR_DESCRIPTIONS[status] ?? 'Error',
        type,
        headers: status === 429 || retryAfter ? { ...REQUEST_ID_HEADER, ...RETRY_AFTER } : REQUEST_ID_HEADER,
      });
    }),
  );
}

/** Errors of every operation that takes a request body (the JSON parser and content-type checks of app.setup.ts). */
export const ApiBodyErrors = (...more: ErrorSpec[]) => ApiErrors(400, 413, 415, 422, ...more);

const FORBIDDEN_BASE = 'Invalid, revoked or expired key; no access to the project';
const GLOBAL_ONLY = 'a project-scoped key (this action needs a global key)';
/** 403 descriptions of management operations beyond the key checks of ApiKeyAuth. */
export const FORBIDDEN = {
  write: { status: 403, description: `${FORBIDDEN_BASE}; or the project is locked` },
  global: { status: 403, description: `${FORBIDDEN_BASE}; or ${GLOBAL_ONLY}` },
  globalWrite: { status: 403, description: `${FORBIDDEN_BASE}; ${GLOBAL_ONLY}; or the project is locked` },
} satisfies Record<string, ErrorSpec>;

/** A positive-integer path id (IdPipe): anything else is a 404. */
export const ApiIdParam = (name: string, description: string) =>
  ApiParam({ name, description: `${description}; anything but a positive integer → 404`, schema: { type: 'integer', minimum: 1 } });

/** `per_page` and `cursor` of a cursor list (CursorQueryDto). */
export const ApiCursorQuery = (defaultPerPage: number) =>
  applyDecorators(
    ApiQuery({ name: 'per_page', required: false, schema: { type: 'integer', minimum: 1, maximum: 50, default: defaultPerPage }, description: 'Page size, 1..50; outside → 422' }),
    ApiQuery({ name: 'cursor', required: false, schema: { type: 'string', maxLength: 512 }, description: 'The `next_cursor` of the previous page; one not made for this list → 422' }),
  );
