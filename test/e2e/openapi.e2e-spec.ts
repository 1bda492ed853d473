import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import SwaggerParser from '@apidevtools/swagger-parser';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** The document is generated from the code, committed as openapi.json and complete. */

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const COMMITTED_TEXT = readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8');
const COMMITTED: Json = JSON.parse(COMMITTED_TEXT);
/** Answers outside the envelope: the Prometheus text and this document itself. */
const RAW = new Set(['GET /metrics', 'GET /api/docs-json']);

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
  let served: { text: string; type: string };

  beforeAll(async () => {
    t = await createTestApp();
    const res = await t
      .http()
      .get('/api/docs-json')
      .buffer(true)
      .parse((response, done) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    served = { text: res.body as string, type: String(res.headers['content-type']) };
  });
  afterAll(async () => t.close());

  it('serves the committed openapi.json byte for byte (run `npm run openapi` after changing the API)', () => {
    expect(served.type).toBe('application/json; charset=utf-8');
    expect(served.text === COMMITTED_TEXT).toBe(true);
  });

  it('is a valid OpenAPI document', async () => {
    await expect(SwaggerParser.validate(structuredClone(COMMITTED) as never)).resolves.toBeDefined();
  });

  it('documents every route the router serves but Swagger UI, and nothing else', () => {
    const router = (
      t.app.getHttpAdapter().getInstance() as {
        router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> };
      }
    ).router;
    const routed = new Set<string>();
    for (const layer of router.stack) {
      const route = layer.route;
      if (
        !route ||
        typeof route.path !== 'string' ||
        route.path === '/api/docs' ||
        route.path.startsWith('/api/docs/')
      )
        continue;
      // Nest's not-found handlers are catch-alls (a wildcard or every method at once).
      if (route.path.includes('*') || Object.keys(route.methods).length > 8) continue;
      const path = route.path.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}');
      for (const [method, on] of Object.entries(route.methods))
        if (on && method !== '_all') routed.add(`${method.toUpperCase()} ${path}`);
    }
    const documented = new Set(
      operations(COMMITTED).map(({ path, method }) => `${method.toUpperCase()} ${path}`),
    );
    expect(routed.size).toBeGreaterThan(30);
    expect([...routed].filter((r) => !r.includes('/api/v1')).sort()).toEqual([
      'GET /api/docs-json',
      'GET /metrics',
    ]);
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
        if (!(RAW.has(where) && /^2/.test(status)) && !isEnvelope(COMMITTED, schema))
          problems.push(`${where} ${status}: not the envelope`);
        if (!op.responses[status].headers?.['X-Request-Id'])
          problems.push(`${where} ${status}: no X-Request-Id header`);
      }
      if (!statuses.includes('500') && where !== 'GET /api/docs-json') problems.push(`${where}: no 500`);
      if (!statuses.some((s) => /^4/.test(s))) problems.push(`${where}: no 4xx answer`);
      if (statuses.includes('429') && !op.responses['429'].headers?.['Retry-After'])
        problems.push(`${where} 429: no Retry-After`);
      const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? [])
        .filter((p: Json) => p.in === 'path')
        .map((p: Json) => p.name)
        .sort();
      if (JSON.stringify(pathParams) !== JSON.stringify(declared))
        problems.push(`${where}: path parameters ${declared.join()} ≠ ${pathParams.join()}`);
      // A payment provider's event is the provider's JSON: refused as a whole (400, 401), never by field.
      if (op.requestBody && !statuses.includes('422') && !path.startsWith('/api/v1/payments/'))
        problems.push(`${where}: a body but no 422`);
    }
    expect(problems).toEqual([]);
  });

  it('puts data of success answers on a named model and 422 errors on fields', () => {
    const project = COMMITTED.paths['/api/v1/project/{project}'].get;
    const data = flatten(COMMITTED, project.responses['200'].content['application/json'].schema).properties
      .data;
    expect(data).toEqual({ $ref: '#/components/schemas/Project' });
    const list = COMMITTED.paths['/api/v1/project'].get;
    const page = flatten(COMMITTED, list.responses['200'].content['application/json'].schema).properties.data;
    expect(page.properties.data.items).toEqual({ $ref: '#/components/schemas/Project' });
    expect(page.required).toEqual(['data', 'next_cursor']);
    expect(list.parameters.map((p: Json) => p.name).sort()).toEqual(['cursor', 'per_page']);
    const create = COMMITTED.paths['/api/v1/project'].post;
    expect(create.responses['422'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ValidationErrorEnvelope',
    });
    expect(
      COMMITTED.components.schemas.ValidationErrorEnvelope.properties.errors.additionalProperties,
    ).toEqual({ type: 'array', items: { type: 'string' } });
  });

  it('lists 401 and 403 on every secured operation, with its scheme', () => {
    const schemes = Object.keys(COMMITTED.components.securitySchemes).sort();
    expect(schemes).toEqual(['api-key', 'license-key', 'portal', 'session']);
    const secured = operations(COMMITTED).filter(({ op }) => op.security?.length);
    expect(secured.length).toBeGreaterThan(30);
    for (const { path, method, op } of secured) {
      expect({ op: `${method} ${path}`, statuses: Object.keys(op.responses) }).toEqual({
        op: `${method} ${path}`,
        statuses: expect.arrayContaining(['401', '403', '429']),
      });
      for (const requirement of op.security)
        for (const name of Object.keys(requirement)) expect(schemes).toContain(name);
    }
    // No credentials is said outright (security: []), so a client never falls back to a default.
    expect(
      operations(COMMITTED)
        .filter(({ op }) => !Array.isArray(op.security))
        .map(({ path }) => path),
    ).toEqual([]);
    const open = operations(COMMITTED)
      .filter(({ op }) => op.security.length === 0)
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`)
      .sort();
    expect(open).toEqual([
      'GET /api/docs-json',
      'GET /api/v1',
      // What the console's sign-in page offers.
      'GET /api/v1/auth/config',
      // Whether the first account is still to be made (the sign-in page says where its link is).
      'GET /api/v1/auth/setup',
      'GET /api/v1/health',
      'GET /api/v1/health/live',
      'GET /metrics',
      // Joining: the invitation's token is the credential (an existing user accepting also sends
      // their session, documented on the route).
      'POST /api/v1/auth/invitations/{token}/accept',
      // Signing in: the email and password are the credential.
      'POST /api/v1/auth/login',
      // Resetting a forgotten password: the mailed token is the credential.
      'POST /api/v1/auth/password-reset',
      'POST /api/v1/auth/password-reset/{token}',
      // The first account: the setup code the server printed is the credential.
      'POST /api/v1/auth/setup',
      // Single sign-on: the identity provider's answer (and once the password) is the credential.
      'POST /api/v1/auth/sso/callback',
      'POST /api/v1/auth/sso/link',
      'POST /api/v1/auth/sso/start',
      // A payment provider's event: its signature is the credential (docs/payments.md).
      'POST /api/v1/payments/{provider}/{token}',
    ]);
  });

  it('describes the runtime inputs: X-Service-Domain, X-Service-Nonce, the license query parameter and the multipart uploads', () => {
    const hasPaid = COMMITTED.paths['/api/v1/project/has-paid'].post;
    const params = hasPaid.parameters.map((p: Json) => `${p.in}:${p.name}`).sort();
    expect(params).toEqual([
      'header:X-Service-Domain',
      'header:X-Service-Nonce',
      'query:action',
      'query:domain',
      'query:include',
      'query:license',
    ]);
    const stream = COMMITTED.paths['/api/v1/injectable/stream'].get;
    expect(stream.parameters.map((p: Json) => `${p.in}:${p.name}`)).toContain('header:X-Service-Nonce');
    expect(hasPaid.security).toEqual([{ 'license-key': [] }]);
    expect(hasPaid.responses['403'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/RefusalEnvelope',
    });
    for (const method of ['post', 'put'] as const) {
      const path =
        method === 'post'
          ? '/api/v1/project/{project}/injectables'
          : '/api/v1/project/{project}/injectables/{injectable}';
      const content = COMMITTED.paths[path][method].requestBody.content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'multipart/form-data']);
      const body = flatten(COMMITTED, content['multipart/form-data'].schema);
      expect(body.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    }
  });
  it('names every operation in readable camelCase, uniquely, never `Controller_method`', () => {
    const ids = operations(COMMITTED).map(({ op }) => String(op.operationId));
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]*$/.test(id) || /Controller/.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    const byRoute = Object.fromEntries(
      operations(COMMITTED).map(({ path, method, op }) => [
        `${method.toUpperCase()} ${path}`,
        op.operationId,
      ]),
    );
    expect(byRoute).toMatchObject({
      'POST /api/v1/project': 'createProject',
      'GET /api/v1/project': 'listProjects',
      'GET /api/v1/project/{project}': 'getProject',
      'PATCH /api/v1/project/{project}': 'updateProject',
      'PUT /api/v1/project/{project}': 'replaceProject',
      'DELETE /api/v1/project/{project}': 'deleteProject',
      'GET /api/v1/project/{project}/licenses': 'listLicenses',
      'POST /api/v1/project/{project}/licenses/{license}/revoke': 'revokeLicense',
      'GET /api/v1/project/{project}/signing-key': 'getProjectSigningKey',
      'POST /api/v1/project/{project}/webhook-deliveries/{delivery}/retry': 'retryWebhookDelivery',
      'GET /api/v1/api-keys': 'listApiKeys',
      // Named by hand where the rule would read wrongly.
      'POST /api/v1/project/has-paid': 'checkHasPaid',
      'GET /api/v1/injectable/stream': 'streamInjectables',
      'PUT /api/v1/project/{project}/injectables/{injectable}': 'updateInjectable',
      'DELETE /api/v1/api-keys/{id}': 'revokeApiKey',
    });
  });

  it('names its license, and a server a generated client can point at any deployment', () => {
    expect(COMMITTED.info.license).toEqual({ name: 'MIT', url: 'https://opensource.org/license/mit' });
    expect(COMMITTED.servers).toEqual([
      {
        url: '{scheme}://{host}',
        description: expect.stringContaining('http://localhost:3000'),
        variables: {
          scheme: { default: 'http', enum: ['http', 'https'] },
          host: { default: 'localhost:3000', description: 'Host name and port' },
        },
      },
    ]);
  });

  it('gives Swagger UI this server first, so that "Try it out" calls the server showing it', async () => {
    const init = await t.http().get('/api/docs/swagger-ui-init.js');
    expect(init.status).toBe(200);
    const options = JSON.parse(/let options = (\{[\s\S]*?\});\n/.exec(init.text)?.[1] ?? 'null') as {
      swaggerDoc: Json;
    };
    expect(options.swaggerDoc.servers.map((s: Json) => s.url)).toEqual(['/', '{scheme}://{host}']);
    expect({ ...options.swaggerDoc, servers: COMMITTED.servers }).toEqual(COMMITTED);
  });

  it('serves Swagger UI with a Content-Security-Policy that frames it nowhere and that its page keeps to', async () => {
    for (const path of ['/api/docs', '/api/docs/', '/api/docs/swagger-ui-init.js']) {
      const res = await t.http().get(path);
      expect(res.status).toBe(200);
      expect(res.headers['content-security-policy']).toBe(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
      );
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
    const page = (await t.http().get('/api/docs/')).text;
    // Every script is a file of this server: 'self' lets each of them in, and nothing inline runs.
    const scripts = [...page.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/ src="\.\/(docs\/)?[\w.-]+\.js"/);
      expect(body.trim()).toBe('');
    }
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('documents the 405 and the CORS preflight as the app answers them', async () => {
    const description = String(COMMITTED.info.description);
    const wrongMethod = await t.http().delete('/api/v1/project');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('GET, HEAD, POST');
    expect(description).toContain('405 in the envelope, with an `Allow` header');

    const preflight = await t
      .http()
      .options('/api/v1/project/has-paid')
      .set('Origin', 'https://customer.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'X-LICENSE-KEY, Content-Type');
    expect(preflight.status).toBe(204);
    expect(description).toContain('`OPTIONS` on any path');
    expect(description).toContain(
      `answered 204 with \`Access-Control-Allow-Methods: ${preflight.headers['access-control-allow-methods']}\``,
    );
    expect(description).toContain(
      `\`Access-Control-Allow-Headers: ${preflight.headers['access-control-allow-headers']}\``,
    );
    expect(description).toContain(
      `\`Access-Control-Max-Age: ${preflight.headers['access-control-max-age']}\``,
    );
    const call = await t.http().get('/api/v1').set('Origin', 'https://customer.example');
    const exposed = String(call.headers['access-control-expose-headers']).split(',');
    expect(description).toContain(`answers expose ${exposed.map((h) => `\`${h}\``).join(', ')}.`);
  });

  it('marks what an injectable create requires per media type, as the server does', () => {
    const body = (mediaType: string, path = '/api/v1/project/{project}/injectables', method = 'post') =>
      flatten(COMMITTED, COMMITTED.paths[path][method].requestBody.content[mediaType].schema);
    const json = body('application/json');
    expect(json.required.sort()).toEqual(['content', 'secret', 'slug']);
    expect(json.properties.file).toBeUndefined();
    const form = body('multipart/form-data');
    expect(form.required.sort()).toEqual(['secret', 'slug']);
    expect(form.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(form.properties.content.description).toMatch(/required unless a file is uploaded/);
    const update = '/api/v1/project/{project}/injectables/{injectable}';
    expect(body('application/json', update, 'put').required).toEqual([]);
    expect(body('application/json', update, 'put').properties.file).toBeUndefined();
    expect(body('multipart/form-data', update, 'put').properties.file).toMatchObject({ format: 'binary' });
  });

  it('gives every error answer an example of its own: the error envelope, one message per status', () => {
    const problems: string[] = [];
    for (const { path, method, op } of operations(COMMITTED)) {
      const messages = new Map<string, string>();
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) < 400) continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const example = response.content?.['application/json']?.example;
        if (!example) {
          problems.push(`${where}: no example`);
          continue;
        }
        if (example.status !== 'error' || typeof example.message !== 'string')
          problems.push(`${where}: not an error envelope`);
        if (
          status === '422' &&
          JSON.stringify(Object.values(example.errors)) !== JSON.stringify([[example.message]])
        )
          problems.push(`${where}: errors do not hold the message`);
        if (status !== '422' && example.errors !== null) problems.push(`${where}: errors outside 422`);
        const other = messages.get(example.message);
        if (other) problems.push(`${where}: the same message as ${other}`);
        messages.set(example.message, status);
      }
    }
    expect(problems).toEqual([]);
    // The schemas themselves carry no example message that would read for every status.
    expect(COMMITTED.components.schemas.ErrorEnvelope.properties.message.example).toBeUndefined();
  });
});
