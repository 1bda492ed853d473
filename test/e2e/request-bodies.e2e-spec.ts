import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { makeAccount, makeDomain, makeLicense, makeProject } from '../factories/index.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Every request body of openapi.json, walked as a client generated from it would send them: the
 * documented example works as sent, and each field's problems get one clear message — a missing
 * required field "is required", a value of the wrong kind says what kind it must be.
 */

type Schema = { $ref?: string; type?: string; format?: string; enum?: unknown[]; properties?: Record<string, Schema>; required?: string[]; example?: unknown; nullable?: boolean };
type Operation = { operationId?: string; security?: Array<Record<string, unknown>>; requestBody?: { content: Record<string, { schema: Schema }> } };

const doc = JSON.parse(readFileSync('openapi.json', 'utf8')) as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };
const resolve = (schema: Schema): Schema => (schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop() as string] : schema);
const label = (field: string) => field.replace(/_/g, ' ');

interface BodyOperation {
  method: string;
  path: string;
  schema: Schema;
}

/** The management operations (API key) that take a JSON body. */
const operations: BodyOperation[] = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods)
    .filter(([, op]) => op.requestBody?.content['application/json'] && op.security?.some((s) => 'api-key' in s))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, schema: resolve(op.requestBody!.content['application/json'].schema) })),
);

/** The body a generated client or Swagger UI builds from the documented examples. */
function exampleBody(schema: Schema): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (property.format === 'binary') continue; // a multipart upload, not a JSON field
    if ('example' in property) body[name] = property.example;
  }
  return body;
}

/** A value of the wrong kind for the property, and the message that must answer it. */
function wrongKind(name: string, property: Schema): [unknown, string | RegExp] | null {
  if (property.enum) return ['not-one-of-them', new RegExp(`^The selected ${label(name)} is invalid`)];
  switch (property.format === 'date-time' ? 'date' : property.type) {
    case 'string':
      return [12345, new RegExp(`^The ${label(name)} field must be a string[ .]`)];
    case 'date':
      return [12345, `The ${label(name)} field must be a valid date.`];
    case 'integer':
      return ['twelve', `The ${label(name)} field must be an integer.`];
    case 'boolean':
      return ['maybe', `The ${label(name)} field must be true or false.`];
    case 'object':
      return [42, `The ${label(name)} field must be a JSON object.`];
    default:
      return null;
  }
}

describe('request bodies as openapi.json documents them', () => {
  it('covers every management operation that takes a JSON body', () => {
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      [
        'POST /api/v1/api-keys',
        'POST /api/v1/api-keys/{id}/roll',
        'POST /api/v1/project',
        'PATCH /api/v1/project/{project}',
        'PUT /api/v1/project/{project}',
        'POST /api/v1/project/{project}/lock',
        'POST /api/v1/project/{project}/domains',
        'PATCH /api/v1/project/{project}/domains/{domain}',
        'PUT /api/v1/project/{project}/domains/{domain}',
        'POST /api/v1/project/{project}/licenses',
        'PATCH /api/v1/project/{project}/licenses/{license}',
        'PUT /api/v1/project/{project}/licenses/{license}',
        'POST /api/v1/project/{project}/injectables',
        'PUT /api/v1/project/{project}/injectables/{injectable}',
      ].sort(),
    );
    for (const op of operations) {
      for (const [name, property] of Object.entries(op.schema.properties ?? {})) {
        if (property.format !== 'binary') expect({ op: `${op.method} ${op.path}`, name, example: 'example' in property }).toEqual({ op: `${op.method} ${op.path}`, name, example: true });
      }
    }
  });

  describe('the documented examples work when sent as they are, in the order a newcomer tries them', () => {
    let t: TestApp;
    let key: string;
    const ids: Record<string, number> = {};
    beforeAll(async () => {
      t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
      key = (await makeAccount(t.app)).key;
    });
    afterAll(async () => t.close());

    const order = [
      ['POST', '/api/v1/project', 201, 'project'],
      ['PUT', '/api/v1/project/{project}', 200, null],
      ['PATCH', '/api/v1/project/{project}', 200, null],
      ['POST', '/api/v1/project/{project}/domains', 201, 'domain'],
      ['PUT', '/api/v1/project/{project}/domains/{domain}', 200, null],
      ['PATCH', '/api/v1/project/{project}/domains/{domain}', 200, null],
      ['POST', '/api/v1/project/{project}/licenses', 201, 'license'],
      ['PUT', '/api/v1/project/{project}/licenses/{license}', 200, null],
      ['PATCH', '/api/v1/project/{project}/licenses/{license}', 200, null],
      ['POST', '/api/v1/project/{project}/injectables', 201, 'injectable'],
      ['PUT', '/api/v1/project/{project}/injectables/{injectable}', 200, null],
      ['POST', '/api/v1/api-keys', 201, 'id'],
      ['POST', '/api/v1/api-keys/{id}/roll', 201, null],
      ['POST', '/api/v1/project/{project}/lock', 200, null],
    ] as const;

    it('walks every operation', () => {
      expect(order.map(([m, p]) => `${m} ${p}`).sort()).toEqual(operations.map((o) => `${o.method} ${o.path}`).sort());
    });

    // Each row has four cells: jest would take a fourth parameter the row lacks for a done callback.
    it.each(order)('%s %s', async (method, path, status, names) => {
      const op = operations.find((o) => o.method === method && o.path === path)!;
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => String(ids[name]));
      const res = await t.http()[method.toLowerCase() as 'post'](url).set('X-API-KEY', key).send(exampleBody(op.schema));
      expect({ status: res.status, message: res.body.message, errors: res.body.errors }).toEqual({ status, message: 'Success', errors: null });
      if (names) ids[names] = res.body.data.id;
    });
  });

  describe('one message per field: missing, or of the wrong kind', () => {
    let t: TestApp;
    let key: string;
    const ids: Record<string, number> = {};
    beforeAll(async () => {
      t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
      const account = await makeAccount(t.app);
      key = account.key;
      const project = await makeProject(t, key);
      ids.project = project.id;
      ids.domain = (await makeDomain(t, key, project.id)).id;
      ids.license = (await makeLicense(t, key, project.id)).id;
      const injectable = await t.http().post(`/api/v1/project/${project.id}/injectables`).set('X-API-KEY', key).send({ slug: 'fixture', content: 'x', secret: 's' });
      ids.injectable = injectable.body.data.id;
      ids.id = (await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'to roll' })).body.data.id;
    });
    afterAll(async () => t.close());

    const cases = operations.flatMap((op) =>
      Object.entries(op.schema.properties ?? {}).flatMap(([name, property]) => {
        if (property.format === 'binary') return [];
        const out: Array<[string, string, string, unknown, string | RegExp]> = [];
        if (op.schema.required?.includes(name)) out.push([`${op.method} ${op.path}`, name, 'missing', undefined, `The ${label(name)} field is required.`]);
        const wrong = wrongKind(name, property);
        if (wrong) out.push([`${op.method} ${op.path}`, name, `sent as ${JSON.stringify(wrong[0])}`, wrong[0], wrong[1]]);
        return out;
      }),
    );

    it.each(cases)('%s: %s %s', async (operation, name, _how, value, message) => {
      const [method, path] = operation.split(' ');
      const op = operations.find((o) => o.method === method && o.path === path)!;
      const body = { ...exampleBody(op.schema), [name]: value };
      if (value === undefined) delete body[name];
      // Keep the other fields valid and free: the example's slug or title may be taken by a fixture.
      const url = path.replace(/\{(\w+)\}/g, (_, param: string) => String(ids[param]));
      const res = await t.http()[method.toLowerCase() as 'post'](url).set('X-API-KEY', key).send(body);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors)).toEqual([name]);
      expect(res.body.errors[name]).toHaveLength(1);
      if (typeof message === 'string') expect(res.body.errors[name][0]).toBe(message);
      else expect(res.body.errors[name][0]).toMatch(message);
      expect(res.body.message).toBe(res.body.errors[name][0]);
    });
  });
});
