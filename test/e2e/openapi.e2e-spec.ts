import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import SwaggerParser from '@apidevtools/swagger-parser';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** The document is generated from the code, committed as openapi.json and complete. */

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const COMMITTED: Json = JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8'));

/** Follows $ref and merges allOf, enough to read the top-level properties of a response schema. */
function flatten(doc: Json, schema: Json): { properties: Json; required: string[] } {
  if (schema.$ref) {
    const name = String(schema.$ref).replace('#/components/schemas/', '');
    return flatten(doc, doc.components.schemas[name]);
  }
  const out = { properties: { ...(schema.properties ?? {}) }, required: [...(schema.required ?? [])] };
  for (const part of schema.allOf ?? []) {
    const inner = flatten(doc, part);
    Object.assign(out.properties, inner.properties);
    out.required.push(...inner.required);
  }
  return out;
}

const isEnvelope = (doc: Json, schema: Json | undefined): boolean => {
  if (!schema) return false;
  const { properties, required } = flatten(doc, schema);
  return ['status', 'message', 'data', 'errors'].every((key) => key in properties && required.includes(key));
};

const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Json })),
  );

describe('OpenAPI contract', () => {
  let t: TestApp;
  let served: Json;

  beforeAll(async () => {
    t = await createTestApp();
    const res = await t.http().get('/api/docs-json');
    expect(res.status).toBe(200);
    served = res.body;
  });
  afterAll(async () => t.close());

  it('serves exactly the committed openapi.json (run `npm run openapi` after changing the API)', () => {
    expect(served).toEqual(COMMITTED);
  });

  it('is a valid OpenAPI document', async () => {
    await expect(SwaggerParser.validate(structuredClone(COMMITTED) as never)).resolves.toBeDefined();
  });

  it('documents every route the router serves under /api/v1, and nothing else', () => {
    const router = (t.app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } })
      .router;
    const routed = new Set<string>();
    for (const layer of router.stack) {
      const route = layer.route;
      if (!route || typeof route.path !== 'string' || !route.path.startsWith('/api/v1')) continue;
      // Nest's not-found handlers are catch-alls (a wildcard or every method at once).
      if (route.path.includes('*') || Object.keys(route.methods).length > 8) continue;
      const path = route.path.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}');
      for (const [method, on] of Object.entries(route.methods)) if (on && method !== '_all') routed.add(`${method.toUpperCase()} ${path}`);
    }
    const documented = new Set(operations(COMMITTED).map(({ path, method }) => `${method.toUpperCase()} ${path}`));
    expect(routed.size).toBeGreaterThan(30);
    expect([...routed].filter((r) => !documented.has(r)).sort()).toEqual([]);
    expect([...documented].filter((d) => !routed.has(d)).sort()).toEqual([]);
  });

  it('gives every operation a summary, one 2xx answer in the envelope and every error in the envelope', () => {
    const problems: string[] = [];
    for (const { path, method, op } of operations(COMMITTED)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.summary) problems.push(`${where}: no summary`);
      const statuses = Object.keys(op.responses);
      const success = statuses.filter((s) => /^2\d\d$/.test(s));
      if (success.length !== 1) problems.push(`${where}: ${success.length} success responses`);
      for (const status of statuses) {
        const schema = op.responses[status].content?.['application/json']?.schema;
        if (!isEnvelope(COMMITTED, schema)) problems.push(`${where} ${status}: not the envelope`);
        if (!op.responses[status].headers?.['X-Request-Id']) problems.push(`${where} ${status}: no X-Request-Id header`);
      }
      if (!statuses.includes('500')) problems.push(`${where}: no 500`);
      if (statuses.includes('429') && !op.responses['429'].headers?.['Retry-After']) problems.push(`${where} 429: no Retry-After`);
      const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name).sort();
      if (JSON.stringify(pathParams) !== JSON.stringify(declared)) problems.push(`${where}: path parameters ${declared} ≠ ${pathParams}`);
      if (op.requestBody && !statuses.includes('422')) problems.push(`${where}: a body but no 422`);
    }
    expect(problems).toEqual([]);
  });

  it('puts data of success answers on a named model and 422 errors on fields', () => {
    const project = COMMITTED.paths['/api/v1/project/{project}'].get;
    const data = flatten(COMMITTED, project.responses['200'].content['application/json'].schema).properties.data;
    expect(data).toEqual({ $ref: '#/components/schemas/Project' });
    const list = COMMITTED.paths['/api/v1/project'].get;
    const page = flatten(COMMITTED, list.responses['200'].content['application/json'].schema).properties.data;
    expect(page.properties.data.items).toEqual({ $ref: '#/components/schemas/Project' });
    expect(page.required).toEqual(['data', 'next_cursor']);
    expect(list.parameters.map((p: Json) => p.name).sort()).toEqual(['cursor', 'per_page']);
    const create = COMMITTED.paths['/api/v1/project'].post;
    expect(create.responses['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ValidationErrorEnvelope' });
    expect(COMMITTED.components.schemas.ValidationErrorEnvelope.properties.errors.additionalProperties).toEqual({ type: 'array', items: { type: 'string' } });
  });

  it('lists 401 and 403 on every secured operation, with its scheme', () => {
    const schemes = Object.keys(COMMITTED.components.securitySchemes).sort();
    expect(schemes).toEqual(['api-key', 'license-key']);
    const secured = operations(COMMITTED).filter(({ op }) => op.security?.length);
    expect(secured.length).toBeGreaterThan(30);
    for (const { path, method, op } of secured) {
      expect({ op: `${method} ${path}`, statuses: Object.keys(op.responses) }).toEqual({
        op: `${method} ${path}`,
        statuses: expect.arrayContaining(['401', '403', '429']),
      });
      for (const requirement of op.security) for (const name of Object.keys(requirement)) expect(schemes).toContain(name);
    }
    const open = operations(COMMITTED)
      .filter(({ op }) => !op.security?.length)
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`)
      .sort();
    expect(open).toEqual(['GET /api/v1', 'GET /api/v1/health', 'GET /api/v1/health/live']);
  });

  it('describes the runtime inputs: X-Service-Domain, X-Service-Nonce, the license query parameter and the multipart uploads', () => {
    const hasPaid = COMMITTED.paths['/api/v1/project/has-paid'].post;
    const params = hasPaid.parameters.map((p: Json) => `${p.in}:${p.name}`).sort();
    expect(params).toEqual(['header:X-Service-Domain', 'header:X-Service-Nonce', 'query:action', 'query:domain', 'query:include', 'query:license']);
    const stream = COMMITTED.paths['/api/v1/injectable/stream'].get;
    expect(stream.parameters.map((p: Json) => `${p.in}:${p.name}`)).toContain('header:X-Service-Nonce');
    expect(hasPaid.security).toEqual([{ 'license-key': [] }]);
    expect(hasPaid.responses['403'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/RefusalEnvelope' });
    for (const method of ['post', 'put'] as const) {
      const path = method === 'post' ? '/api/v1/project/{project}/injectables' : '/api/v1/project/{project}/injectables/{injectable}';
      const content = COMMITTED.paths[path][method].requestBody.content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'multipart/form-data']);
      const body = flatten(COMMITTED, content['multipart/form-data'].schema);
      expect(body.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    }
  });
});
