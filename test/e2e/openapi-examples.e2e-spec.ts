import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { AuthService } from '../../src/auth/auth.service.js';
import {
  INVITATION_INVALID,
  OWN_ROLE,
  OWNER_ONLY,
  SIGN_IN_TO_ACCEPT,
} from '../../src/auth/members.service.js';
import { RESET_INVALID } from '../../src/auth/password-resets.service.js';
import { WRONG_SETUP_CODE } from '../../src/auth/setup.service.js';
import { SSO_NOT_CONFIGURED, SSO_PATH, ssoWrongAddress } from '../../src/auth/sso.service.js';
import { KEY_IS_NO_SESSION } from '../../src/auth/session.guard.js';
import { CSRF_REFUSED } from '../../src/auth/sessions.service.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import {
  NOT_A_PORTAL_CREDENTIAL,
  PORTAL_CSRF_REFUSED,
  TOKEN_NOT_PAID,
} from '../../src/portal/portal.service.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
} from '../factories/index.js';
import { exampleBody, resolveSchema } from '../utils/openapi-client.js';
import { endpointPath } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * The example of every error answer in openapi.json is what the server answers, word for word, when
 * the example's cause is provoked: the missing key, the unknown one, the scoped key, the locked project,
 * the id that names nothing, the malformed or oversized body, the other content type, the missing or
 * wrong field. (409, 429, 500 and 503 are left out: they take a race, a limit spent or a failure.)
 */

type Json = Record<string, any>;
const DOC: Json = JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8'));
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const PROVOKED = new Set([400, 401, 403, 404, 413, 415, 422]);
const MAX_UPLOAD_BYTES = 4096;
/** A positive id no row has. */
const NO_SUCH_ID = 2_147_000_000;
/** The PUBLIC_URL of the app with SSO configured: the one the example's message names. */
const SSO_PUBLIC_URL = 'https://licenses.example.com';

interface Case {
  method: string;
  path: string;
  op: Json;
  status: number;
  example: Json;
}

const cases: Case[] = Object.entries(DOC.paths as Json).flatMap(([path, item]) =>
  METHODS.filter((m) => item[m]).flatMap((method) =>
    Object.entries(item[method].responses as Json)
      .filter(([status]) => PROVOKED.has(Number(status)))
      .map(([status, response]) => ({
        method,
        path,
        op: item[method],
        status: Number(status),
        example: response.content['application/json'].example,
      })),
  ),
);

const scheme = (op: Json) => Object.keys(op.security?.[0] ?? {})[0];
const jsonBody = (op: Json) =>
  op.requestBody?.content['application/json']
    ? exampleBody(DOC, op.requestBody.content['application/json'].schema)
    : undefined;

/** A value of the wrong kind for a field of a JSON body. */
function wrongKind(op: Json, field: string): unknown {
  const property = resolveSchema(
    DOC,
    resolveSchema(DOC, op.requestBody.content['application/json'].schema).properties[field],
  );
  return ({ string: 12345, integer: 'twelve', boolean: 'maybe', object: 42 } as Record<string, unknown>)[
    property.type
  ];
}

describe('error examples of openapi.json, provoked against the app', () => {
  let t: TestApp;
  let sso: TestApp;
  let key: string;
  let scoped: string;
  /** Path parameter → id, in a project that works and in one that is locked. */
  let open: Record<string, number | string>;
  let locked: Record<string, number | string>;
  let session: { cookie: string; csrf: string };
  /** A customer portal opened on the customer of the working fixtures' license (an unpaid project). */
  let portal: { cookie: string; csrf: string };
  let licenseKey: string;
  /** A domain two licenses are pinned to. */
  let pinned: number;
  /** The account's members and invitations: an admin's session, and what only an owner may touch. */
  let members: {
    admin: Record<string, string>;
    adminMembership: number;
    ownerMembership: number;
    ownerInvitation: number;
    existingUserToken: string;
  };

  /** The signing secret of the fixtures' payment connectors (Stripe). */
  const PAYMENT_SECRET = 'whsec_examples_of_enough_length';

  async function fixtures(
    projectOverrides: Record<string, unknown>,
  ): Promise<Record<string, number | string>> {
    const project = await makeProject(t, key, {
      default_redirect_url: 'https://acme.example/pricing',
      ...projectOverrides,
    });
    const domain = await makeDomain(t, key, project.id);
    const license = await makeLicense(t, key, project.id);
    const injectable = await t
      .http()
      .post(`/api/v1/project/${project.id}/injectables`)
      .set('X-API-KEY', key)
      .send({ slug: 'fixture', content: 'x', secret: 's3cret-s3cret' });
    expect(injectable.status).toBe(201);
    licenseKey = license.uuid;
    // One use of the license from the domain: its activation, for the activation routes' examples.
    const used = await t
      .http()
      .post('/api/v1/project/has-paid')
      .set('X-LICENSE-KEY', license.uuid)
      .set('X-Service-Domain', domain.domain);
    expect(used.status).toBe(200);
    const activations = await t
      .http()
      .get(`/api/v1/project/${project.id}/licenses/${license.id}/activations`)
      .set('X-API-KEY', key);
    expect(activations.body.data.data).toHaveLength(1);
    const connector = await t
      .http()
      .post(`/api/v1/project/${project.id}/payment-connectors`)
      .set('X-API-KEY', key)
      .send({ provider: 'stripe', signing_secret: PAYMENT_SECRET });
    expect(connector.status).toBe(201);
    const customer = await t
      .http()
      .post(`/api/v1/project/${project.id}/customers`)
      .set('X-API-KEY', key)
      .send({ email: 'buyer@example.com' });
    expect(customer.status).toBe(201);
    const [, , , , provider, token] = endpointPath(connector.body.data).split('/');
    return {
      connector: connector.body.data.id,
      provider,
      token,
      project: project.id,
      domain: domain.id,
      license: license.id,
      injectable: injectable.body.data.id,
      activation: activations.body.data.data[0].id,
      customer: customer.body.data.id,
    };
  }

  beforeAll(async () => {
    // Never asked: the SSO examples provoked here are refused before the provider is.
    sso = await createTestApp({
      OIDC_ISSUER: 'http://127.0.0.1:9',
      OIDC_CLIENT_ID: 'licensegate',
      OIDC_CLIENT_SECRET: 'a-client-secret',
      PUBLIC_URL: SSO_PUBLIC_URL,
    });
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
      WEBHOOK_DISPATCHER: 'false',
    });
    const account = await makeAccount(t.app);
    key = account.key;
    const person = await makeUser(t.app, { password: 'correct horse battery' });
    const signedIn = await t
      .http()
      .post('/api/v1/auth/login')
      .send({ email: person.email, password: 'correct horse battery' });
    session = {
      cookie: (signedIn.headers['set-cookie'] as unknown as string[])[0].split(';')[0],
      csrf: signedIn.body.data.csrf_token,
    };
    locked = await fixtures({});
    expect(
      (await t.http().post(`/api/v1/project/${locked.project}/lock`).set('X-API-KEY', key).send({})).status,
    ).toBe(200);
    open = await fixtures({});
    const projectId = Number(open.project);
    scoped = await makeApiKey(t.app, account.user, { project_id: projectId });
    pinned = (await makeDomain(t, key, projectId)).id;
    for (let i = 0; i < 2; i++) await makeLicense(t, key, projectId, { domain_id: pinned });
    const customer = await t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: projectId, email: 'examples@example.test', name: null });
    await t.dataSource
      .getRepository(LicenseEntity)
      .update({ id: Number(open.license) }, { customer_id: customer.id });
    const link = await t
      .http()
      .post(`/api/v1/project/${projectId}/portal-sessions`)
      .set('X-API-KEY', key)
      .send({ customer_id: customer.id });
    const opened = await t.http().post(new URL(link.body.data.url as string).pathname);
    const cookie = (opened.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    const answer = await t.http().get('/api/v1/portal/session').set('Cookie', cookie);
    portal = { cookie, csrf: answer.body.data.csrf_token };
    const [accountRow] = await t.dataSource.query('SELECT id FROM accounts WHERE holder_user_id = ?', [
      account.user.id,
    ]);
    const admin = await t.app.get(AuthService).createUser({
      email: `admin-${randomUUID()}@example.test`,
      password: 'correct horse battery',
      joins: { account_id: Number(accountRow.id), role: 'admin', project_ids: null },
    });
    const adminIn = await t
      .http()
      .post('/api/v1/auth/login')
      .send({ email: admin.email, password: 'correct horse battery' });
    const membershipOf = async (userId: number) =>
      Number((await t.dataSource.query('SELECT id FROM memberships WHERE user_id = ?', [userId]))[0].id);
    const invite = async (email: string, role: string) =>
      (await t.http().post('/api/v1/members/invitations').set('X-API-KEY', key).send({ email, role })).body
        .data as Json;
    const existing = await invite(person.email, 'viewer');
    members = {
      admin: {
        Cookie: (adminIn.headers['set-cookie'] as unknown as string[])[0].split(';')[0],
        'X-CSRF-Token': adminIn.body.data.csrf_token,
      },
      adminMembership: await membershipOf(admin.id),
      ownerMembership: await membershipOf(account.user.id),
      ownerInvitation: (await invite(`owner-${randomUUID()}@example.test`, 'owner')).id,
      existingUserToken: String(existing.invitation_url).split('/').pop()!,
    };
  });
  afterAll(async () => {
    await t.close();
    await sso?.close();
  });

  /** The request that provokes a case's example, or why there is none. */
  function provoke(c: Case): { send: () => Promise<{ status: number; body: unknown }> } | string {
    // A wrong setup code is answered only while no user exists: on a fresh app of its own.
    if (c.status === 403 && c.example.message === WRONG_SETUP_CODE)
      return {
        send: async () => {
          const fresh = await createTestApp();
          try {
            const res = await fresh.http().post(c.path).send(jsonBody(c.op));
            return { status: res.status, body: res.body };
          } finally {
            await fresh.close();
          }
        },
      };
    // This app has no OIDC_ISSUER: single sign-on answers that it is not configured.
    if (c.status === 404 && c.example.message === SSO_NOT_CONFIGURED)
      return {
        send: async () => {
          const res = await t.http()[c.method as 'post'](c.path).send(jsonBody(c.op));
          return { status: res.status, body: res.body };
        },
      };
    const message = String(c.example.message);
    // A browser page elsewhere than PUBLIC_URL starts a single sign-on: refused before the provider is asked.
    if (c.status === 400 && message === ssoWrongAddress(`${SSO_PUBLIC_URL}/console/`))
      return {
        send: async () => {
          const res = await sso.http()[c.method as 'post'](c.path).set('Origin', 'http://127.0.0.1:3000');
          return { status: res.status, body: res.body };
        },
      };
    const field = c.example.errors ? Object.keys(c.example.errors)[0] : undefined;
    let ids = open;
    let headers: Record<string, string> =
      scheme(c.op) === 'api-key'
        ? { 'X-API-KEY': key }
        : scheme(c.op) === 'license-key'
          ? { 'X-LICENSE-KEY': licenseKey }
          : scheme(c.op) === 'session'
            ? { Cookie: session.cookie, 'X-CSRF-Token': session.csrf }
            : scheme(c.op) === 'portal'
              ? { Cookie: portal.cookie, 'X-CSRF-Token': portal.csrf }
              : {};
    let body: unknown = jsonBody(c.op);
    let raw: { type: string; text: string } | undefined;
    let query: Record<string, string> = {};
    let missing: string | undefined;

    if (c.status === 401) headers = {};
    else if (c.status === 403 && message === 'Invalid API key.')
      headers = { 'X-API-KEY': `lg_${randomUUID()}` };
    else if (c.status === 403 && message === 'Invalid license key.')
      headers = { 'X-LICENSE-KEY': randomUUID() };
    else if (
      c.status === 403 &&
      message === 'This action requires a global API key; project-scoped keys cannot perform it.'
    )
      headers = { 'X-API-KEY': scoped };
    else if (c.status === 403 && message === CSRF_REFUSED) headers = { Cookie: session.cookie };
    else if (c.status === 403 && message === KEY_IS_NO_SESSION) headers = { 'X-API-KEY': key };
    else if (c.status === 403 && message === PORTAL_CSRF_REFUSED) headers = { Cookie: portal.cookie };
    else if (c.status === 403 && message === NOT_A_PORTAL_CREDENTIAL) headers = { 'X-API-KEY': key };
    // The portal's license is of an unpaid project.
    else if (c.status === 403 && message === TOKEN_NOT_PAID) ids = open;
    else if (c.status === 403 && message === 'Project is locked.') ids = locked;
    else if (c.status === 403 && message === OWNER_ONLY) {
      headers = members.admin;
      if (c.method === 'post') body = { ...(body as object), role: 'owner' };
      ids = {
        ...open,
        id: c.path.includes('invitations') ? members.ownerInvitation : members.ownerMembership,
      };
    } else if (c.status === 403 && message === OWN_ROLE) {
      headers = members.admin;
      ids = { ...open, id: members.adminMembership };
    } else if (c.status === 404 && (message === INVITATION_INVALID || message === RESET_INVALID))
      missing = 'token';
    else if (c.status === 403 && message === 'Domain is not registered under this project.')
      query = { domain: 'elsewhere.example.org' };
    else if (c.status === 400 && message === 'Malformed JSON in request body.')
      raw = { type: 'application/json', text: '{"name": ' };
    else if (
      c.status === 400 &&
      message === 'The calling domain could not be determined: send it in the X-Service-Domain header.'
    )
      body = undefined;
    else if (c.status === 413 && message === 'Request body is too large.')
      // A payment provider's event is bounded at 1 MiB, whatever MAX_UPLOAD_BYTES says.
      body = {
        ...(body as object),
        padding: 'x'.repeat(c.path.startsWith('/api/v1/payments/') ? 1024 * 1024 : MAX_UPLOAD_BYTES),
      };
    else if (c.status === 400 && message === 'The event body must be a JSON object.') {
      // Signed as Stripe signs, so that the body is read: a JSON array.
      raw = { type: 'application/json', text: '[1]' };
      const ts = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', PAYMENT_SECRET).update(`${ts}.${raw.text}`).digest('hex');
      headers = { 'Stripe-Signature': `t=${ts},v1=${v1}` };
    } else if (c.status === 415) raw = { type: 'text/plain', text: 'hello' };
    else if (c.status === 404 && /^[A-Z][\w ]* not found\.$/.test(message))
      missing = [...c.path.matchAll(/\{(\w+)\}/g)].pop()?.[1];
    else if (c.status === 422 && field === 'per_page') query = { per_page: '0' };
    else if (c.status === 422 && field === 'action') query = { action: 'nope' };
    else if (c.status === 422 && field === 'to' && message.startsWith('The range from '))
      query = { from: '2026-01-01T00:00:00Z', to: '2026-02-01T01:00:00Z', granularity: 'hour' };
    else if (
      c.status === 422 &&
      field === 'granularity' &&
      message.startsWith('Licenses are counted by UTC day')
    )
      query = { group_by: 'license', granularity: 'hour' };
    else if (c.status === 422 && message === 'The domain cannot be deleted: 2 licenses are pinned to it.')
      ids = { ...open, domain: pinned };
    else if (
      c.status === 422 &&
      field &&
      message === `The ${field.replace(/_/g, ' ')} field is required.` &&
      body
    )
      delete (body as Json)[field];
    else if (
      c.status === 422 &&
      field &&
      body &&
      wrongKind(c.op, field) !== undefined &&
      /^The [\w ]+ field must be /.test(message)
    )
      (body as Json)[field] = wrongKind(c.op, field);
    else if (c.path === '/api/v1/license/usage' && c.status === 404)
      // The fixtures' licenses have no meters.
      return {
        send: async () => {
          const res = await t
            .http()
            .post(c.path)
            .set('X-LICENSE-KEY', licenseKey)
            .send(body as object);
          return { status: res.status, body: res.body };
        },
      };
    else if (c.status === 400 && message === 'The Host header is required.') {
      return { send: () => withoutHost(c.method.toUpperCase(), c.path.replace(/\{(\w+)\}/g, '1')) };
    } else return `no way to provoke "${message}"`;
    if (c.status === 404 && !missing) return `no path parameter to name nothing with`;
    // An invitation for an email that has a user, accepted without signing in.
    if (c.status === 401 && message === SIGN_IN_TO_ACCEPT)
      ids = { ...open, token: members.existingUserToken };

    const url = c.path.replace(/\{(\w+)\}/g, (_, name: string) =>
      String(name === missing ? NO_SUCH_ID : (ids[name] ?? 1)),
    );
    // Single sign-on's routes validate their body and read their cookie only where it is configured
    // (elsewhere a 404 comes first): those refusals, on the app that has it.
    const app = [401, 422].includes(c.status) && c.path.startsWith(SSO_PATH) ? sso : t;
    return {
      send: async () => {
        let req = app.http()[c.method as 'get'](url).query(query);
        for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
        const res = raw
          ? await req.set('Content-Type', raw.type).send(raw.text)
          : body !== undefined
            ? await req.send(body as object)
            : await req;
        return { status: res.status, body: res.body };
      },
    };
  }

  /** An HTTP/1.1 request without Host, written on a socket of its own (every HTTP client sends one). */
  function withoutHost(method: string, path: string): Promise<{ status: number; body: unknown }> {
    const { hostname, port } = new URL(t.url);
    return new Promise((done, fail) => {
      let answer = '';
      const socket = connect(Number(port), hostname, () =>
        socket.write(`${method} ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`),
      );
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.on('error', fail);
      socket.on('end', () => {
        const [head, ...rest] = answer.split('\r\n\r\n');
        done({ status: Number(head.split(' ')[1]), body: JSON.parse(rest.join('\r\n\r\n')) });
      });
    });
  }

  it('has a way to provoke every 400, 401, 403, 404, 413, 415 and 422 example', () => {
    expect(cases.length).toBeGreaterThan(150);
    const unprovoked = cases
      .map((c) => [`${c.method.toUpperCase()} ${c.path} ${c.status}`, provoke(c)])
      .filter(([, how]) => typeof how === 'string');
    expect(unprovoked).toEqual([]);
  });

  it.each(cases.map((c) => [`${c.method.toUpperCase()} ${c.path}`, c.status, c] as const))(
    '%s %s answers its example',
    async (_op, _status, c) => {
      const how = provoke(c);
      if (typeof how === 'string') throw new Error(how);
      const res = await how.send();
      expect({ status: res.status, body: res.body }).toEqual({ status: c.status, body: c.example });
    },
  );
});
