import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { makeAccount, makeDomain, makeLicense, makeProject, makeUser } from '../factories/index.js';
import { exampleBody as exampleBodyOf } from '../utils/openapi-client.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Every request body of openapi.json, walked as a client generated from it would send them: the
 * documented example works as sent, and each field's problems get one clear message — a missing
 * required field "is required", a value of the wrong kind says what kind it must be.
 */

type Schema = {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  example?: unknown;
  nullable?: boolean;
};
type Operation = {
  operationId?: string;
  security?: Array<Record<string, unknown>>;
  requestBody?: { content: Record<string, { schema: Schema }> };
};

const doc = JSON.parse(readFileSync('openapi.json', 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
const resolve = (schema: Schema): Schema =>
  schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop() as string] : schema;
const label = (field: string) => field.replace(/_/g, ' ');

interface BodyOperation {
  method: string;
  path: string;
  schema: Schema;
}

/** The management operations (API key) that take a JSON body. */
const operations: BodyOperation[] = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods)
    .filter(
      ([, op]) => op.requestBody?.content['application/json'] && op.security?.some((s) => 'api-key' in s),
    )
    .map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      schema: resolve(op.requestBody!.content['application/json'].schema),
    })),
);

/** The body a generated client or Swagger UI builds from the documented examples. */
const exampleBody = (schema: Schema) => exampleBodyOf(doc, schema);

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
        'POST /api/v1/project/{project}/payment-connectors',
        'PATCH /api/v1/project/{project}/payment-connectors/{connector}',
        'POST /api/v1/project/{project}/payment-connectors/{connector}/test-event',
        'POST /api/v1/project/{project}/customers',
        'PATCH /api/v1/project/{project}/customers/{customer}',
        'POST /api/v1/project/{project}/portal-sessions',
        'POST /api/v1/project/{project}/plans',
        'PATCH /api/v1/project/{project}/plans/{plan}',
        'POST /api/v1/members/invitations',
        'PATCH /api/v1/members/{id}',
      ].sort(),
    );
    for (const op of operations) {
      for (const [name, property] of Object.entries(op.schema.properties ?? {})) {
        if (property.format !== 'binary')
          expect({ op: `${op.method} ${op.path}`, name, example: 'example' in property }).toEqual({
            op: `${op.method} ${op.path}`,
            name,
            example: true,
          });
      }
    }
  });

  describe('every request example works when sent as it is, in the order a newcomer tries them', () => {
    /** Every request body of openapi.json, in each of its media types (and the credential it takes). */
    // A payment provider's event is the provider's own JSON, signed: payment-connectors.e2e-spec.ts sends them.
    // Tokens that come by mail or from an identity provider (accepting an invitation, a reset link, single
    // sign-on): members.e2e-spec.ts and sso.e2e-spec.ts send them, with an SMTP server and a real provider.
    // The setup code is printed by a server without users: setup.e2e-spec.ts sends it.
    const FROM_ELSEWHERE = /^\/api\/v1\/auth\/(invitations|password-reset\/|sso\/|setup$)/;
    const bodies = Object.entries(doc.paths)
      .filter(([path]) => !path.startsWith('/api/v1/payments/') && !FROM_ELSEWHERE.test(path))
      .flatMap(([path, methods]) =>
        Object.entries(methods).flatMap(([method, op]) =>
          Object.entries(op.requestBody?.content ?? {}).map(([mediaType, { schema }]) => ({
            key: `${method.toUpperCase()} ${path} ${mediaType}`,
            schema: resolve(schema),
            licenseKey: op.security?.some((s) => 'license-key' in s) ?? false,
          })),
        ),
      );

    type Step = readonly [
      method: string,
      path: string,
      mediaType: 'json' | 'multipart',
      status: number,
      names: string | null,
    ];
    const json: Step[] = [
      // A member of the account (made below): their role changed; then a person invited.
      ['PATCH', '/api/v1/members/{id}', 'json', 200, null],
      ['POST', '/api/v1/members/invitations', 'json', 201, null],
      ['POST', '/api/v1/project', 'json', 201, 'project'],
      ['PUT', '/api/v1/project/{project}', 'json', 200, null],
      ['PATCH', '/api/v1/project/{project}', 'json', 200, null],
      ['POST', '/api/v1/project/{project}/domains', 'json', 201, 'domain'],
      ['PUT', '/api/v1/project/{project}/domains/{domain}', 'json', 200, null],
      ['PATCH', '/api/v1/project/{project}/domains/{domain}', 'json', 200, null],
      ['POST', '/api/v1/project/{project}/licenses', 'json', 201, 'license'],
      ['PUT', '/api/v1/project/{project}/licenses/{license}', 'json', 200, null],
      ['PATCH', '/api/v1/project/{project}/licenses/{license}', 'json', 200, null],
      ['POST', '/api/v1/project/{project}/injectables', 'json', 201, 'injectable'],
      ['PUT', '/api/v1/project/{project}/injectables/{injectable}', 'json', 200, null],
      ['POST', '/api/v1/project/{project}/payment-connectors', 'json', 201, 'connector'],
      ['PATCH', '/api/v1/project/{project}/payment-connectors/{connector}', 'json', 200, null],
      // A test payment through that connector, for the domain just registered.
      ['POST', '/api/v1/project/{project}/payment-connectors/{connector}/test-event', 'json', 200, null],
      ['POST', '/api/v1/project/{project}/customers', 'json', 201, 'customer'],
      ['PATCH', '/api/v1/project/{project}/customers/{customer}', 'json', 200, null],
      // The customer portal opened on the license just made.
      ['POST', '/api/v1/project/{project}/portal-sessions', 'json', 201, null],
      ['POST', '/api/v1/project/{project}/plans', 'json', 201, 'plan'],
      ['PATCH', '/api/v1/project/{project}/plans/{plan}', 'json', 200, null],
      // The license just made, from the domain just registered: paid, as the examples set them.
      ['POST', '/api/v1/project/has-paid', 'json', 200, null],
      // A use of the meter the license's example entitlements hold.
      ['POST', '/api/v1/license/usage', 'json', 200, null],
      // The slot that check took, freed by the license holder.
      ['POST', '/api/v1/license/deactivate', 'json', 200, null],
      ['POST', '/api/v1/api-keys', 'json', 201, 'id'],
      ['POST', '/api/v1/api-keys/{id}/roll', 'json', 201, null],
      ['POST', '/api/v1/project/{project}/lock', 'json', 200, null],
      // Asking for a reset link: always 202 (nothing is mailed without SMTP_URL).
      ['POST', '/api/v1/auth/password-reset', 'json', 202, null],
      // As the person the examples name (made below): signed in, then a new password with the session.
      ['POST', '/api/v1/auth/login', 'json', 200, null],
      ['POST', '/api/v1/auth/password', 'json', 200, null],
    ];
    // On a fresh install: the project example's slug is taken once the walk above has run.
    const multipart: Step[] = [
      ['POST', '/api/v1/project', 'json', 201, 'project'],
      ['POST', '/api/v1/project/{project}/injectables', 'multipart', 201, 'injectable'],
      ['PUT', '/api/v1/project/{project}/injectables/{injectable}', 'multipart', 200, null],
    ];
    const MEDIA = { json: 'application/json', multipart: 'multipart/form-data' } as const;

    it('walks every request body, in every media type', () => {
      const walked = new Set(
        [...json, ...multipart].map(([method, path, media]) => `${method} ${path} ${MEDIA[media]}`),
      );
      expect([...walked].sort()).toEqual(bodies.map((b) => b.key).sort());
    });

    for (const [title, steps] of [
      ['as JSON', json],
      ['as multipart/form-data', multipart],
    ] as const) {
      describe(title, () => {
        let t: TestApp;
        let key: string;
        const ids: Record<string, number> = {};
        let licenseKey = '';
        beforeAll(async () => {
          t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
          const account = await makeAccount(t.app);
          key = account.key;
          await makeUser(t.app, { email: 'ada@example.com', password: 'correct horse battery' });
          // A member whose role the members example changes ({id}: the API key steps set it again later).
          const [row] = await t.dataSource.query('SELECT id FROM accounts WHERE holder_user_id = ?', [
            account.user.id,
          ]);
          const member = await makeUser(t.app, {
            joins: { account_id: Number(row.id), role: 'viewer', project_ids: null },
          });
          const [membership] = await t.dataSource.query('SELECT id FROM memberships WHERE user_id = ?', [
            member.id,
          ]);
          ids.id = Number(membership.id);
        });
        let session: { cookie: string; csrf: string } | undefined;
        afterAll(async () => t.close());

        // Each row has five cells: jest would take a sixth parameter the row lacks for a done callback.
        it.each(steps)('%s %s (%s)', async (method, path, media, status, names) => {
          const body = bodies.find((b) => b.key === `${method} ${path} ${MEDIA[media]}`)!;
          const url = path.replace(/\{(\w+)\}/g, (_, name: string) => String(ids[name]));
          let req = t.http()[method.toLowerCase() as 'post'](url);
          if (session && path.startsWith('/api/v1/auth/'))
            req = req.set('Cookie', session.cookie).set('X-CSRF-Token', session.csrf);
          else req = body.licenseKey ? req.set('X-LICENSE-KEY', licenseKey) : req.set('X-API-KEY', key);
          const fields = exampleBody(body.schema);
          if (media === 'multipart') {
            // As a form sends them: text fields, objects as JSON; a form has no null.
            for (const [name, value] of Object.entries(fields)) {
              if (value !== null)
                req = req.field(name, typeof value === 'string' ? value : JSON.stringify(value));
            }
          } else req = req.send(fields);
          const res = await req;
          expect({ status: res.status, message: res.body.message, errors: res.body.errors }).toEqual({
            status,
            message: 'Success',
            errors: null,
          });
          if (names) ids[names] = res.body.data.id;
          if (path === '/api/v1/auth/login')
            session = {
              cookie: (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0],
              csrf: res.body.data.csrf_token,
            };
          if (names === 'license') licenseKey = res.body.data.uuid;
          if (path === '/api/v1/project/has-paid') expect(res.body.data.has_paid).toBe(true);
          if (path === '/api/v1/license/deactivate') expect(res.body.data.deactivated).toBe(1);
        });
      });
    }
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
      const injectable = await t
        .http()
        .post(`/api/v1/project/${project.id}/injectables`)
        .set('X-API-KEY', key)
        .send({ slug: 'fixture', content: 'x', secret: 's3cret-s3cret' });
      ids.injectable = injectable.body.data.id;
      ids.id = (
        await t.http().post('/api/v1/api-keys').set('X-API-KEY', key).send({ name: 'to roll' })
      ).body.data.id;
      ids.connector = (
        await t
          .http()
          .post(`/api/v1/project/${project.id}/payment-connectors`)
          .set('X-API-KEY', key)
          .send({ provider: 'stripe', signing_secret: 'whsec_fixture_of_enough_length' })
      ).body.data.id;
      ids.customer = (
        await t
          .http()
          .post(`/api/v1/project/${project.id}/customers`)
          .set('X-API-KEY', key)
          .send({ email: 'buyer@example.com' })
      ).body.data.id;
      ids.plan = (
        await t
          .http()
          .post(`/api/v1/project/${project.id}/plans`)
          .set('X-API-KEY', key)
          .send({ code: 'fixture', name: 'Fixture' })
      ).body.data.id;
    });
    afterAll(async () => t.close());

    const cases = operations.flatMap((op) =>
      Object.entries(op.schema.properties ?? {}).flatMap(([name, property]) => {
        if (property.format === 'binary') return [];
        const out: Array<[string, string, string, unknown, string | RegExp]> = [];
        if (op.schema.required?.includes(name))
          out.push([
            `${op.method} ${op.path}`,
            name,
            'missing',
            undefined,
            `The ${label(name)} field is required.`,
          ]);
        const wrong = wrongKind(name, property);
        if (wrong)
          out.push([
            `${op.method} ${op.path}`,
            name,
            `sent as ${JSON.stringify(wrong[0])}`,
            wrong[0],
            wrong[1],
          ]);
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
