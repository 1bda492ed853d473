import type { paths } from '../../generated/openapi.js';

/*
 * A typed fetch over the generated `paths` (npm run openapi:types): the path, its parameters, the JSON
 * body and the answer are all checked by tsc against openapi.json. No dependency beyond fetch.
 */

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Path = keyof paths;
/** The methods a path serves (absent ones are `?: never` in the generated type). */
export type MethodOf<P extends Path> = { [M in Method]: paths[P][M] extends undefined ? never : M }[Method];
type Op<P extends Path, M extends MethodOf<P>> = NonNullable<paths[P][M]>;

type Params<O> = O extends { parameters: infer X } ? X : never;
type JsonBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Responses<O> = O extends { responses: infer R } ? R : never;
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Success<O> = {
  [S in keyof Responses<O>]: S extends 200 | 201 ? JsonOf<Responses<O>[S]> : never;
}[keyof Responses<O>];
type Failure<O> = {
  [S in keyof Responses<O>]: S extends 200 | 201 ? never : JsonOf<Responses<O>[S]>;
}[keyof Responses<O>];

export type ApiResult<O> =
  | { ok: true; status: number; headers: Headers; body: Success<O> }
  | { ok: false; status: number; headers: Headers; body: Failure<O> };

export interface CallInit<O> {
  params: Params<O>;
  body?: JsonBody<O>;
}

export interface Credentials {
  apiKey?: string;
  licenseKey?: string;
  /** A session: its lg_session cookie, and the CSRF token its writes send. */
  session?: { cookie: string; csrf: string };
}

export function createApiClient(baseUrl: string, credentials: Credentials = {}) {
  return async function call<P extends Path, M extends MethodOf<P>>(
    method: M,
    path: P,
    init: CallInit<Op<P, M>>,
  ): Promise<ApiResult<Op<P, M>>> {
    const params = init.params as {
      path?: Record<string, unknown>;
      query?: Record<string, unknown>;
      header?: Record<string, unknown>;
    };
    const url = new URL(
      String(path).replace(/\{(\w+)\}/g, (_, name: string) => {
        const value = params.path?.[name];
        if (value === undefined) throw new Error(`path parameter ${name} missing`);
        return encodeURIComponent(asText(value));
      }),
      baseUrl,
    );
    for (const [name, value] of Object.entries(params.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, asText(value));
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [name, value] of Object.entries(params.header ?? {}))
      if (value !== undefined) headers[name] = asText(value);
    if (credentials.apiKey) headers['x-api-key'] = credentials.apiKey;
    if (credentials.licenseKey) headers['x-license-key'] = credentials.licenseKey;
    if (credentials.session) {
      headers.cookie = credentials.session.cookie;
      if (method !== 'get') headers['x-csrf-token'] = credentials.session.csrf;
    }
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url, {
      method: method.toUpperCase(),
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { ok: res.ok, status: res.status, headers: res.headers, body: await res.json() } as ApiResult<
      Op<P, M>
    >;
  };
}

type Json = Record<string, any>;

/** A path, query or header value as sent: a string as it is, a number or boolean as written. */
const asText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * Where `value` departs from an OpenAPI 3.0 schema of the document: types, nullability, enums,
 * required keys, and no keys beyond `properties` unless additionalProperties allows them (so a
 * response class that forgets a field, or lists one the service never sends, is caught).
 */
export function schemaProblems(doc: Json, schema: Json, value: unknown, at = '$'): string[] {
  if (schema.$ref)
    return schemaProblems(
      doc,
      doc.components.schemas[String(schema.$ref).replace('#/components/schemas/', '')],
      value,
      at,
    );
  // A nullable reference is written {allOf: [{$ref}], nullable: true} (OpenAPI 3.0).
  if (schema.allOf && value === null && schema.nullable) return [];
  if (schema.allOf) {
    const merged: Json = { type: 'object', properties: {}, required: [] };
    for (const part of schema.allOf as Json[]) {
      let resolved = part;
      while (resolved.$ref)
        resolved = doc.components.schemas[String(resolved.$ref).replace('#/components/schemas/', '')];
      Object.assign(merged.properties, resolved.properties ?? {});
      merged.required.push(...(resolved.required ?? []));
      if (resolved.additionalProperties !== undefined)
        merged.additionalProperties = resolved.additionalProperties;
    }
    return schemaProblems(doc, merged, value, at);
  }
  if (value === null) return schema.nullable ? [] : [`${at}: null but not nullable`];
  if (schema.oneOf) {
    const matching = (schema.oneOf as Json[]).filter(
      (one) => schemaProblems(doc, one, value, at).length === 0,
    );
    return matching.length === 1
      ? []
      : [`${at}: ${JSON.stringify(value)} matches ${matching.length} of oneOf`];
  }
  if (schema.enum && !schema.enum.includes(value))
    return [`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`];
  const problems: string[] = [];
  switch (schema.type) {
    case 'string':
      if (typeof value !== 'string') problems.push(`${at}: expected a string, got ${JSON.stringify(value)}`);
      break;
    case 'integer':
      if (!Number.isInteger(value)) problems.push(`${at}: expected an integer, got ${JSON.stringify(value)}`);
      break;
    case 'number':
      if (typeof value !== 'number') problems.push(`${at}: expected a number, got ${JSON.stringify(value)}`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean')
        problems.push(`${at}: expected a boolean, got ${JSON.stringify(value)}`);
      break;
    case 'array':
      if (!Array.isArray(value)) return [`${at}: expected an array`];
      value.forEach((item, i) => problems.push(...schemaProblems(doc, schema.items, item, `${at}[${i}]`)));
      break;
    case 'object':
    case undefined: {
      if (typeof value !== 'object' || Array.isArray(value))
        return [`${at}: expected an object, got ${JSON.stringify(value)}`];
      const record = value as Json;
      const properties: Json = schema.properties ?? {};
      for (const key of schema.required ?? []) if (!(key in record)) problems.push(`${at}.${key}: missing`);
      for (const [key, item] of Object.entries(record)) {
        if (properties[key]) problems.push(...schemaProblems(doc, properties[key], item, `${at}.${key}`));
        else if (schema.additionalProperties === undefined || schema.additionalProperties === false)
          problems.push(`${at}.${key}: not documented`);
        else if (typeof schema.additionalProperties === 'object')
          problems.push(...schemaProblems(doc, schema.additionalProperties, item, `${at}.${key}`));
      }
      break;
    }
  }
  return problems;
}

/** A schema of the document, its $ref followed. */
export const resolveSchema = (doc: Json, schema: Json): Json =>
  schema.$ref ? doc.components.schemas[String(schema.$ref).split('/').pop() as string] : schema;

/**
 * The body Swagger UI's "Try it out" and a generated client's examples build from a request body's
 * schema: each property's example. A multipart upload (format binary) has none: it is a file to pick.
 */
export function exampleBody(doc: Json, schema: Json): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, property] of Object.entries((resolveSchema(doc, schema).properties ?? {}) as Json)) {
    if (property.format === 'binary') continue;
    if ('example' in property) body[name] = property.example;
  }
  return body;
}
