import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtension,
  ApiExtraModels,
  ApiParam,
  ApiQuery,
  ApiResponse,
  getSchemaPath,
  type ReferenceObject,
  type SchemaObject,
} from '@nestjs/swagger';
import { GLOBAL_KEY_REQUIRED, PROJECT_LOCKED } from '../http/errors.js';
import { errorEnvelope, type ErrorExample } from './error-examples.js';
import {
  ErrorEnvelope,
  NULL_SCHEMA,
  RefusalEnvelope,
  REQUEST_ID_HEADER,
  RETRY_AFTER,
  SuccessEnvelope,
  ValidationErrorEnvelope,
} from './envelopes.js';

/*
 * The decorators controllers describe their operations with: the success answer in the envelope, the
 * error answers, path ids, cursor queries, bodies per media type. Documentation only: nothing here
 * changes what a route does. buildOpenApiDocument (document.ts) completes what every route shares.
 */

/** The security schemes (document.ts declares them; ApiKeyAuth and LicenseKeyAuth use them). */
export const API_KEY_SCHEME = 'api-key';
export const LICENSE_KEY_SCHEME = 'license-key';
export const PORTAL_SCHEME = 'portal';

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
        next_cursor: {
          type: 'string',
          nullable: true,
          description: 'Pass it back as `cursor` for the next page; null on the last page',
        },
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
      schema: {
        allOf: [
          { $ref: getSchemaPath(SuccessEnvelope) },
          { type: 'object', required: ['data'], properties: { data } },
        ],
      },
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

/**
 * An error answer: its status, and what to say about it where the default does not fit — the
 * description of when it happens, and the example's message (`field`: the field a 422 is about;
 * `data`: the example's data). Without a message the example follows the rules of error-examples.ts.
 */
export type ErrorSpec =
  | number
  | ({
      status: number;
      description?: string;
      refusal?: boolean;
      retryAfter?: boolean;
    } & Partial<ErrorExample>);

/** Any operation that reads or writes the database (docs/operations.md, "When the database is away"). */
export const DATABASE_AWAY = {
  status: 503,
  description:
    'The database is busy or unavailable; try again after Retry-After. A change whose COMMIT went unanswered may or may not have been stored (the message says so)',
  retryAfter: true,
  message: 'The database is unavailable: try again in a moment.',
} satisfies ErrorSpec;

/**
 * Error answers in the envelope: 422 as ValidationErrorEnvelope, `refusal` ones (runtime checks) as
 * RefusalEnvelope, the rest as ErrorEnvelope; 429 and `retryAfter` ones with Retry-After. A later
 * spec of the same status replaces an earlier one.
 */
export function ApiErrors(...specs: ErrorSpec[]) {
  const byStatus = new Map<number, Exclude<ErrorSpec, number>>();
  for (const spec of specs) {
    const entry = typeof spec === 'number' ? { status: spec } : spec;
    byStatus.set(entry.status, entry);
  }
  return applyDecorators(
    ...[...byStatus.values()].map(({ status, description, refusal, retryAfter, message, field, data }) => {
      const type = status === 422 ? ValidationErrorEnvelope : refusal ? RefusalEnvelope : ErrorEnvelope;
      return ApiResponse({
        status,
        description: description ?? ERROR_DESCRIPTIONS[status] ?? 'Error',
        type,
        headers: status === 429 || retryAfter ? { ...REQUEST_ID_HEADER, ...RETRY_AFTER } : REQUEST_ID_HEADER,
        ...(message === undefined
          ? {}
          : { example: errorEnvelope(status, { message, field, data }, refusal) }),
      });
    }),
  );
}

/** Errors of every operation that takes a request body (the JSON parser and content-type checks of app.setup.ts). */
export const ApiBodyErrors = (...more: ErrorSpec[]) => ApiErrors(400, 413, 415, 422, ...more);

const FORBIDDEN_BASE = 'Invalid, revoked or expired key; no access to the project';
const GLOBAL_ONLY = 'a project-scoped key (this action needs a global key)';
/** 403 of management operations beyond the key checks of ApiKeyAuth; the example shows the cause they add. */
export const FORBIDDEN = {
  write: { status: 403, description: `${FORBIDDEN_BASE}; or the project is locked`, message: PROJECT_LOCKED },
  global: { status: 403, description: `${FORBIDDEN_BASE}; or ${GLOBAL_ONLY}`, message: GLOBAL_KEY_REQUIRED },
  globalWrite: {
    status: 403,
    description: `${FORBIDDEN_BASE}; ${GLOBAL_ONLY}; or the project is locked`,
    message: GLOBAL_KEY_REQUIRED,
  },
} satisfies Record<string, ErrorSpec>;

/**
 * A request body that differs by media type (JSON and multipart/form-data), each its own schema: what
 * one media type requires, another may not (a JSON create has no file, so it requires `content`).
 * buildOpenApiDocument puts them in place of the one schema Nest derives from the @Body() type.
 */
export const BODIES_EXTENSION = 'x-licensegate-bodies';
export const ApiBodies = (bodies: Record<string, Type<unknown>>) =>
  applyDecorators(
    ApiExtraModels(...Object.values(bodies)),
    ApiExtension(
      BODIES_EXTENSION,
      Object.fromEntries(Object.entries(bodies).map(([mediaType, type]) => [mediaType, getSchemaPath(type)])),
    ),
  );

/** A positive-integer path id (IdPipe): anything else is a 404. */
export const ApiIdParam = (name: string, description: string) =>
  ApiParam({
    name,
    description: `${description}; anything but a positive integer → 404`,
    schema: { type: 'integer', minimum: 1 },
  });

/** `per_page` and `cursor` of a cursor list (CursorQueryDto). */
export const ApiCursorQuery = (defaultPerPage: number) =>
  applyDecorators(
    ApiQuery({
      name: 'per_page',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 50, default: defaultPerPage },
      description: 'Page size, 1..50; outside → 422',
    }),
    ApiQuery({
      name: 'cursor',
      required: false,
      schema: { type: 'string', maxLength: 512 },
      description: 'The `next_cursor` of the previous page; one not made for this list → 422',
    }),
  );

/** A cursor list: its query, the page in the envelope, and the 422 of a bad `per_page` or `cursor`. */
export const ApiCursorList = (model: Type<unknown>, defaultPerPage: number) =>
  applyDecorators(ApiCursorQuery(defaultPerPage), ApiEnvelope(model, { cursor: true }), ApiErrors(422));
