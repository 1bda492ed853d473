import type { OpenAPIObject, OperationObject, SchemaObject } from '@nestjs/swagger';
import { resourceName, segmentsOf } from './operation-ids.js';

/*
 * One example per error answer of every operation, reading as the server answers that status on that
 * operation: "License not found." on …/licenses/{license}, "API key missing: …" where the API key is
 * the credential. An error spec may give its own (ApiErrors({ status, message })); every other error
 * answer gets the answer to its most common cause, by the rules below, which
 * test/e2e/openapi-examples.e2e-spec.ts holds against the running app.
 */

export interface ErrorExample {
  message: string;
  /** 422: the field the message is about (errors = {field: [message]}). */
  field?: string;
  data?: Record<string, unknown> | null;
}

/** The example answer: the error envelope around `example`. */
export function errorEnvelope(
  status: number,
  example: ErrorExample,
  refusal = false,
): Record<string, unknown> {
  return {
    status: 'error',
    message: example.message,
    data: example.data !== undefined ? example.data : refusal ? { redirect_url: null } : null,
    errors: status === 422 ? { [example.field ?? 'field']: [example.message] } : null,
  };
}

const MESSAGES: Record<number, string> = {
  413: 'Request body is too large.',
  415: 'Unsupported content type: send application/json (or multipart/form-data where a file is uploaded).',
  429: 'Too many requests. Retry after 60 seconds.',
  500: 'Internal server error.',
  503: 'The database is unavailable: try again in a moment.',
};

const BY_SCHEME: Record<string, Record<number, string>> = {
  'api-key': { 401: 'API key missing: send it in the X-API-KEY header.', 403: 'Invalid API key.' },
  'license-key': {
    401: 'License key missing: send it in the X-LICENSE-KEY header.',
    403: 'Invalid license key.',
  },
};

const label = (field: string) => field.replace(/_/g, ' ');

function resolve(
  doc: OpenAPIObject,
  schema: SchemaObject | { $ref: string } | undefined,
): SchemaObject | undefined {
  if (schema && '$ref' in schema)
    return doc.components?.schemas?.[schema.$ref.split('/').pop() as string] as SchemaObject;
  return schema;
}

/** 422 of a JSON body: its first required field left out, else its first field of the wrong kind. */
function validationExample(doc: OpenAPIObject, op: OperationObject): ErrorExample {
  const body = resolve(
    doc,
    op.requestBody && 'content' in op.requestBody
      ? op.requestBody.content['application/json']?.schema
      : undefined,
  );
  const required = body?.required?.[0];
  if (required) return { field: required, message: `The ${label(required)} field is required.` };
  const [field, property] = Object.entries(body?.properties ?? {})[0] ?? [];
  const kind = (resolve(doc, property) ?? {}).type;
  const kinds: Record<string, string> = {
    string: 'a string',
    integer: 'an integer',
    boolean: 'true or false',
    object: 'a JSON object',
  };
  if (field && typeof kind === 'string' && kinds[kind])
    return { field, message: `The ${label(field)} field must be ${kinds[kind]}.` };
  if ((op.parameters ?? []).some((p) => 'name' in p && p.name === 'per_page'))
    return { field: 'per_page', message: 'The per page field must be between 1 and 50.' };
  return { field: 'field', message: 'The given data was invalid.' };
}

/** The example of `status` on an operation that gave none of its own; undefined when no rule covers it. */
export function defaultErrorExample(
  doc: OpenAPIObject,
  path: string,
  op: OperationObject,
  status: number,
): ErrorExample | undefined {
  const scheme = Object.keys(op.security?.[0] ?? {})[0];
  const byScheme = scheme ? BY_SCHEME[scheme]?.[status] : undefined;
  if (byScheme) return { message: byScheme };
  switch (status) {
    case 400:
      return { message: op.requestBody ? 'Malformed JSON in request body.' : 'The Host header is required.' };
    case 404: {
      // The innermost resource the path names: "License not found." on …/licenses/{license}.
      const segments = segmentsOf(path);
      const index = segments.findLastIndex((segment, i) => segment.startsWith('{') && i > 0);
      return { message: index > 0 ? `${resourceName(segments[index - 1])} not found.` : 'Not found.' };
    }
    case 422:
      return validationExample(doc, op);
    default:
      return MESSAGES[status] ? { message: MESSAGES[status] } : undefined;
  }
}
