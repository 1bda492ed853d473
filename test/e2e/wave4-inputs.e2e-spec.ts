import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { IDEMPOTENCY_KEY_TRAILING_SPACE } from '../../src/plans/dto/usage.dto.js';
import { makeAccount, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/*
 * Odd inputs to the portal, sign-in, customer, subscription, plan, license, usage, portal-session and
 * member routes: each answers a 4xx in the error envelope, never a 500, and nothing sent is lost
 * without a word.
 */

type Req = ReturnType<ReturnType<TestApp['http']>['get']>;

describe('odd inputs to the customer, plan, usage and portal routes', () => {
  let t: TestApp;
  let key: string;
  let projectId: number;
  let otherProjectId: number;
  let customerId: number;
  let planId: number;
  let license: Record<string, any>;

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    key = (await makeAccount(t.app)).key;
    projectId = (await makeProject(t, key)).id;
    otherProjectId = (await makeProject(t, (await makeAccount(t.app)).key)).id;
    customerId = (
      await t.dataSource
        .getRepository(CustomerEntity)
        .save({ project_id: projectId, email: `buyer-${uniqueToken()}@example.test`, name: 'Buyer' })
    ).id;
    planId = expectSuccess(
      await api('POST', `/project/${projectId}/plans`).send({
        code: 'metered',
        name: 'Metered',
        entitlements: { 'meter.ai_credits': 100 },
      }),
      201,
    ).id;
    license = await makeLicense(t, key, projectId, { plan_id: planId, billing: 'license', has_paid: true });
  }, 60_000);
  afterAll(async () => t?.close());

  function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string): Req {
    const req = t.http()[method.toLowerCase() as 'get'](`/api/v1${path}`);
    return req.set('Accept', 'application/json').set('X-API-KEY', key);
  }
  const raw = (req: Req, json: string) => req.set('Content-Type', 'application/json').send(json);
  const usage = (body: Record<string, unknown>) =>
    t
      .http()
      .post('/api/v1/license/usage')
      .set('X-LICENSE-KEY', license.uuid as string)
      .set('Accept', 'application/json')
      .send(body);

  it('answers a 4xx in the envelope, never a 500, to each odd input', async () => {
    const big = 'a'.repeat(10_000);
    const p = `/project/${projectId}`;
    const cases: Array<[string, () => Req]> = [
      ['portal link, 10k chars', () => t.http().post(`/portal/${big.slice(0, 8000)}`)],
      ['portal link, %00', () => t.http().get('/portal/%00')],
      ['portal link, bad escape', () => t.http().get('/portal/%E0%A4%A')],
      ['portal link, dot-dot', () => t.http().get('/portal/..%2f..%2fetc')],
      [
        'portal API, forged cookie',
        () => t.http().get('/api/v1/portal/session').set('Cookie', 'lg_portal=%ff'),
      ],
      [
        'portal API, huge cookie',
        () => t.http().get('/api/v1/portal/licenses').set('Cookie', `lg_portal=${big}`),
      ],
      [
        'portal API, garbage CSRF',
        () =>
          t
            .http()
            .delete('/api/v1/portal/licenses/1/activations/1')
            .set('Cookie', 'lg_portal=x')
            .set('X-CSRF-Token', 'ü'),
      ],
      [
        'accept invitation, array password',
        () =>
          t
            .http()
            .post('/api/v1/auth/invitations/x/accept')
            .send({ password: ['a'] }),
      ],
      [
        'accept invitation, unknown token',
        () =>
          t.http().post('/api/v1/auth/invitations/%00/accept').send({ password: 'correct horse battery' }),
      ],
      [
        'password reset, object email',
        () =>
          t
            .http()
            .post('/api/v1/auth/password-reset')
            .send({ email: { $gt: '' } }),
      ],
      ['password reset, JSON array body', () => raw(t.http().post('/api/v1/auth/password-reset'), '[]')],
      [
        'password reset link, numeric password',
        () =>
          t
            .http()
            .post(`/api/v1/auth/password-reset/${big.slice(0, 500)}`)
            .send({ password: 1 }),
      ],
      [
        'sso callback, array query',
        () =>
          t
            .http()
            .post('/api/v1/auth/sso/callback')
            .send({ query: ['?code=1'] }),
      ],
      [
        'sso callback, huge query',
        () =>
          t
            .http()
            .post('/api/v1/auth/sso/callback')
            .send({ query: `?state=${big}` }),
      ],
      ['sso link, no cookie', () => t.http().post('/api/v1/auth/sso/link').send({ password: [] })],
      ['customers, huge q', () => api('GET', `${p}/customers?q=${big.slice(0, 300)}`)],
      ['customers, cursor garbage', () => api('GET', `${p}/customers?cursor=eyJpZCI6MWUxMDB9`)],
      ['customers, array email', () => api('POST', `${p}/customers`).send({ email: ['a@example.test'] })],
      ['customers, id out of range', () => api('GET', `${p}/customers/99999999999999999999`)],
      ['subscriptions, status garbage', () => api('GET', `${p}/subscriptions?status=${big.slice(0, 300)}`)],
      ['subscriptions, customer_id past int', () => api('GET', `${p}/subscriptions?customer_id=2147483648`)],
      ['subscriptions, connector_id hex', () => api('GET', `${p}/subscriptions?connector_id=0x10`)],
      ['subscriptions, cursor garbage', () => api('GET', `${p}/subscriptions?cursor=eyJpZCI6ImEifQ`)],
      [
        'plans, 101 entitlements',
        () =>
          api('POST', `${p}/plans`).send({
            code: 'k',
            name: 'K',
            entitlements: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 1])),
          }),
      ],
      [
        'plans, nested entitlement',
        () => api('POST', `${p}/plans`).send({ code: 'n', name: 'N', entitlements: { x: { y: 1 } } }),
      ],
      [
        'plans, 2^31 entitlement',
        () => api('PATCH', `${p}/plans/${planId}`).send({ entitlements: { seats: 2 ** 31 } }),
      ],
      [
        'plans, null entitlements on PATCH',
        () => api('PATCH', `${p}/plans/${planId}`).send({ entitlements: null }),
      ],
      [
        'licenses, string customer_id',
        () => api('POST', `${p}/licenses`).send({ title: 'T', customer_id: '1' }),
      ],
      [
        'licenses, plan_id past int',
        () => api('PATCH', `${p}/licenses/${license.id}`).send({ plan_id: 2 ** 31 }),
      ],
      [
        'licenses, billing array',
        () => api('PATCH', `${p}/licenses/${license.id}`).send({ billing: ['license'] }),
      ],
      [
        'licenses, has_paid "true"',
        () => api('PATCH', `${p}/licenses/${license.id}`).send({ has_paid: 'true' }),
      ],
      [
        'licenses, entitlements array',
        () => api('PATCH', `${p}/licenses/${license.id}`).send({ entitlements: [] }),
      ],
      [
        'portal sessions, both ids',
        () => api('POST', `${p}/portal-sessions`).send({ customer_id: customerId, license_id: license.id }),
      ],
      ['portal sessions, neither id', () => api('POST', `${p}/portal-sessions`).send({})],
      [
        'portal sessions, javascript: URL',
        () =>
          api('POST', `${p}/portal-sessions`).send({
            customer_id: customerId,
            return_url: 'javascript:alert(1)',
          }),
      ],
      [
        'portal sessions, bad port',
        () =>
          api('POST', `${p}/portal-sessions`).send({
            customer_id: customerId,
            return_url: 'https://x.example:99999',
          }),
      ],
      [
        'members, role garbage',
        () => api('POST', '/members/invitations').send({ email: 'm@example.test', role: 'god' }),
      ],
      [
        'members, project_ids not an array',
        () =>
          api('POST', '/members/invitations').send({
            email: 'm@example.test',
            role: 'viewer',
            project_ids: 'x',
          }),
      ],
      [
        'members, another account’s project',
        () =>
          api('POST', '/members/invitations').send({
            email: 'm@example.test',
            role: 'viewer',
            project_ids: [otherProjectId],
          }),
      ],
      [
        'members, 5000 project_ids',
        () =>
          api('POST', '/members/invitations').send({
            email: 'm@example.test',
            role: 'viewer',
            project_ids: Array.from({ length: 5000 }, (_, i) => i + 1),
          }),
      ],
    ];
    for (const [label, send] of cases) {
      const res = await send();
      expect({ label, status: res.status, fivexx: res.status >= 500 }).toMatchObject({
        label,
        fivexx: false,
      });
      expect({ label, status: res.status >= 400 }).toEqual({ label, status: true });
      if (res.headers['content-type']?.includes('json')) expectError(res, res.status);
    }
  });

  describe('metered usage', () => {
    const amountCases: Array<[unknown, string]> = [
      ['5', 'The amount field must be an integer.'],
      [1.5, 'The amount field must be an integer.'],
      [1e20, 'The amount field must not be greater than 1000000.'],
      [0, 'The amount field must be at least 1.'],
      [null, 'The amount field must be an integer.'],
    ];
    it.each(amountCases)('refuses the amount %p with 422', async (amount, message) => {
      const res = await usage({ meter: 'meter.ai_credits', idempotency_key: uniqueToken(), amount });
      expect(expectError(res, 422, ['amount']).message).toBe(message);
    });

    const keyCases: Array<[unknown, string]> = [
      [1, 'The idempotency key field must be a string.'],
      [['a'], 'The idempotency key field must be a string.'],
      ['', 'The idempotency key field is required.'],
      ['x'.repeat(101), 'The idempotency key field must not be greater than 100 characters.'],
    ];
    it.each(keyCases)('refuses the idempotency key %p with 422', async (idempotencyKey, message) => {
      const res = await usage({ meter: 'meter.ai_credits', idempotency_key: idempotencyKey });
      expect(expectError(res, 422, ['idempotency_key']).message).toBe(message);
    });

    it('refuses a meter that is not a string (422) or not the license’s (404)', async () => {
      expect(
        expectError(await usage({ meter: ['meter.ai_credits'], idempotency_key: 'm1' }), 422).message,
      ).toBe('The meter field must be a string.');
      for (const meter of ['__proto__', 'constructor', 'meter.AI_CREDITS'])
        expect(expectError(await usage({ meter, idempotency_key: uniqueToken() }), 404).message).toBe(
          `This license has no meter "${meter}".`,
        );
    });

    it('refuses an idempotency key ending in a space: on MariaDB it would be taken for the key without it', async () => {
      const key1 = `k-${uniqueToken()}`;
      const first = expectSuccess(await usage({ meter: 'meter.ai_credits', idempotency_key: key1 }));
      for (const spaced of [`${key1} `, ' ', `${key1}  `]) {
        const res = await usage({ meter: 'meter.ai_credits', idempotency_key: spaced });
        expect(expectError(res, 422, ['idempotency_key']).message).toBe(IDEMPOTENCY_KEY_TRAILING_SPACE);
      }
      // Nothing was counted by the refused calls; a key with inner or leading spaces is its own.
      const again = expectSuccess(await usage({ meter: 'meter.ai_credits', idempotency_key: ` ${key1}` }));
      expect(again.used).toBe(first.used + 1);
    });
  });

  describe('keys an object field would lose', () => {
    const message = (field: string, name: string) =>
      `The ${field} field must not have a key named "${name}".`;

    it.each(['constructor', 'prototype', '__proto__', 'toString'])(
      'refuses a plan whose entitlements have the key %s with 422 (it was dropped and the plan made)',
      async (name) => {
        const code = `p-${uniqueToken()}`;
        const res = await raw(
          api('POST', `/project/${projectId}/plans`),
          `{"code":"${code}","name":"P","entitlements":{"seats":1,"${name}":{"meter.x":5}}}`,
        );
        expect(expectError(res, 422, ['entitlements']).message).toBe(message('entitlements', name));
        const listed = expectSuccess(await api('GET', `/project/${projectId}/plans`));
        expect(listed.data.map((plan: { code: string }) => plan.code)).not.toContain(code);
      },
    );

    it('refuses such a key in a plan PATCH and in a license’s entitlements, leaving them as they were', async () => {
      const before = expectSuccess(await api('GET', `/project/${projectId}/plans/${planId}`));
      const patched = await raw(
        api('PATCH', `/project/${projectId}/plans/${planId}`),
        '{"entitlements":{"constructor":1}}',
      );
      expect(expectError(patched, 422, ['entitlements']).message).toBe(
        message('entitlements', 'constructor'),
      );
      expect(expectSuccess(await api('GET', `/project/${projectId}/plans/${planId}`)).entitlements).toEqual(
        before.entitlements,
      );
      const overridden = await raw(
        api('PATCH', `/project/${projectId}/licenses/${license.id}`),
        '{"entitlements":{"__proto__":{"meter.ai_credits":999999}}}',
      );
      expect(expectError(overridden, 422, ['entitlements']).message).toBe(
        message('entitlements', '__proto__'),
      );
      const made = await raw(
        api('POST', `/project/${projectId}/licenses`),
        '{"title":"proto","entitlements":{"prototype":true}}',
      );
      expect(expectError(made, 422, ['entitlements']).message).toBe(message('entitlements', 'prototype'));
    });

    it('still drops such keys at the top of a body, and in unknown fields, like any unknown field', async () => {
      const code = `top-${uniqueToken()}`;
      const made = await raw(
        api('POST', `/project/${projectId}/plans`),
        `{"code":"${code}","name":"P","constructor":1,"__proto__":{"entitlements":5},"extra":{"constructor":1}}`,
      );
      expect(expectSuccess(made, 201)).toMatchObject({ code, entitlements: {} });
    });
  });
});
