import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { INestApplication, Injectable, CanActivate } from '@nestjs/common';
import {
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants.js';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Express } from 'express';
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { AppModule } from '../../src/app.module.js';
import { setupApp } from '../../src/app.setup.js';
import { loadConfig } from '../../src/config/app-config.js';
import { ApiError } from '../../src/common/http/errors.js';
import { LicenseKeyGuard } from '../../src/gate/license-key.guard.js';
import { LicenseUsageController } from '../../src/gate/license-usage.controller.js';
import { ThrottleGuard } from '../../src/common/throttling/throttle.guard.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';
import { expectSuccess } from '../utils/envelope.js';
import { postAsIs } from '../utils/api.js';

const RUNTIME = '/api/v1/project/has-paid';
const USAGE = '/api/v1/license/usage';
const REDIRECT = 'https://example.com/pay-fast';

interface Call {
  method?: 'post' | 'get' | 'put' | 'head';
  path?: string;
  headers?: Record<string, string>;
  /** A raw body, sent with `type` (application/json unless said otherwise). */
  body?: string;
  type?: string;
}

/** What a scenario sends to one app; `own` is a fixture made for that app alone (stateful limits). */
type Scenario = (shared: Fixture, own: Fixture) => Call[];

interface Fixture {
  uuid: string;
  domain: string;
  projectId: number;
  licenseId: number;
}

/** Headers whose value legitimately differs between two calls: compared for shape, not value. */
const VOLATILE = new Set([
  'date',
  'x-request-id',
  'x-ratelimit-reset-runtime',
  'retry-after',
  'retry-after-runtime',
  'etag',
]);

/**
 * The runtime check is served ahead of Express (docs/architecture.md, "How the runtime check is served"). Every answer it gives must be the one
 * the routed call gives: status, every header, and body, over the whole range of inputs.
 */
/** A plan's worth of entitlements: booleans, integers, strings and a meter. */
const TWENTY_ENTITLEMENTS = Object.fromEntries(
  Array.from({ length: 20 }, (_, i) => [
    i === 0 ? 'meter.ai_credits' : `feature_${i}`,
    i % 3 === 0 ? i * 100 : i % 3 === 1 ? true : `tier-${i}`,
  ]),
);

describe('runtime check served ahead of Express: the same answers as the routed call', () => {
  let fast: TestApp;
  let routed: TestApp;
  let key: string;
  const env = {
    THROTTLE_API_LIMIT: '100000',
    THROTTLE_RUNTIME_LIMIT: '5',
    TRUST_PROXY: 'true',
    COUNTRY_HEADER: 'CF-IPCountry',
    MAX_UPLOAD_BYTES: '4096',
  };

  beforeAll(async () => {
    fast = await createTestApp(env);
    routed = await createTestApp(env, { databaseUrl: fast.config.env.DATABASE_URL, runtimeFastPath: false });
    ({ key } = await makeAccount(fast.app));
  });
  afterAll(async () => {
    await routed?.close();
    await fast?.close();
  });

  /** Express's app.handle: the entry of every request Express serves. */
  const expressOf = (t: TestApp) =>
    t.app.getHttpAdapter().getInstance() as Express & { handle: (...args: unknown[]) => void };

  interface FixtureOptions {
    project?: Record<string, unknown>;
    license?: Record<string, unknown>;
    domain?: Record<string, unknown>;
    host?: string;
    /** A plan of the project the license is put on. */
    plan?: Record<string, unknown>;
  }

  async function fixture(options: FixtureOptions = {}): Promise<Fixture> {
    const project = await makeProject(fast, key, {
      default_redirect_url: REDIRECT,
      has_paid: true,
      ...options.project,
    });
    const domain = await makeDomain(fast, key, project.id, {
      domain: options.host ?? `shop-${uniqueToken()}.example.com`,
      has_paid: true,
      ...options.domain,
    });
    const plan = options.plan
      ? expectSuccess(
          await fast
            .http()
            .post(`/api/v1/project/${project.id}/plans`)
            .set('X-API-KEY', key)
            .send({ code: 'pro', name: 'Pro', ...options.plan }),
          201,
        )
      : null;
    const license = await makeLicense(fast, key, project.id, {
      ...(plan ? { plan_id: plan.id } : {}),
      ...options.license,
    });
    return { uuid: license.uuid, domain: domain.domain, projectId: project.id, licenseId: license.id };
  }

  function send(t: TestApp, call: Call) {
    const method = call.method ?? 'post';
    let req = t
      .http()
      [method](call.path ?? RUNTIME)
      .set('Accept', 'application/json');
    for (const [name, value] of Object.entries(call.headers ?? {})) req = req.set(name, value);
    if (call.body !== undefined)
      req = req.set('Content-Type', call.type ?? 'application/json').send(call.body);
    return req;
  }

  function comparable(res: Response) {
    const headers: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(res.headers)) if (!VOLATILE.has(name)) headers[name] = value;
    let body: unknown = res.text;
    try {
      body = JSON.parse(res.text);
    } catch {
      // not JSON: compared as text
    }
    return { status: res.status, headers, body };
  }

  /** Sends each call to both apps in turn and expects the same answer from each; returns the answers. */
  async function same(
    calls: { fast: Call[]; routed: Call[] },
    servedAheadOfExpress: boolean,
  ): Promise<Response[]> {
    const handled = {
      fast: jest.spyOn(expressOf(fast), 'handle'),
      routed: jest.spyOn(expressOf(routed), 'handle'),
    };
    const answers: Response[] = [];
    try {
      for (let i = 0; i < calls.fast.length; i++) {
        handled.fast.mockClear();
        handled.routed.mockClear();
        const a = await send(fast, calls.fast[i]);
        const b = await send(routed, calls.routed[i]);
        expect(handled.routed).toHaveBeenCalledTimes(1);
        expect(handled.fast).toHaveBeenCalledTimes(servedAheadOfExpress ? 0 : 1);
        expect({ call: i, ...comparable(a) }).toEqual({ call: i, ...comparable(b) });
        for (const name of VOLATILE) {
          if (name === 'date' || name === 'etag') continue;
          expect([name, typeof a.headers[name]]).toEqual([name, typeof b.headers[name]]);
          if (/^\d+$/.test(String(a.headers[name] ?? '')))
            expect(Math.abs(Number(a.headers[name]) - Number(b.headers[name]))).toBeLessThanOrEqual(1);
        }
        expect(a.headers.etag).toBeUndefined();
        answers.push(a);
      }
    } finally {
      handled.fast.mockRestore();
      handled.routed.mockRestore();
    }
    return answers;
  }

  /** One scenario: `shared` is one fixture both apps call; `own` is a separate, identical fixture per app. */
  async function run(
    scenario: Scenario,
    options: FixtureOptions = {},
    servedAheadOfExpress = true,
  ): Promise<Response[]> {
    const shared = await fixture(options);
    // The two `own` fixtures differ only in their keys (each project may register the same host).
    const host = `shop-${uniqueToken()}.example.com`;
    const calls = {
      fast: scenario(shared, await fixture({ ...options, host })),
      routed: scenario(shared, await fixture({ ...options, host })),
    };
    return same(calls, servedAheadOfExpress);
  }

  /**
   * A fresh client address per call, so that the address-keyed allowances never run out between
   * scenarios and the two apps' X-RateLimit-Remaining stay comparable (a random one of 250 was
   * sometimes drawn twice, and the second call's count was off). 198.18.0.0/15: reserved for tests.
   */
  let clients = 0;
  const from = () => {
    clients++;
    return { 'X-Forwarded-For': `198.18.${clients >> 8}.${clients & 255}, 10.0.0.1` };
  };
  const withKey = (f: Fixture, extra: Record<string, string> = {}) => ({
    ...from(),
    'X-LICENSE-KEY': f.uuid,
    'X-Service-Domain': f.domain,
    ...extra,
  });

  const cases: [string, Scenario, FixtureOptions?][] = [
    ['no license key (401)', () => [{ headers: { 'X-Forwarded-For': '203.0.113.77' } }]],
    [
      'a blank license key (401)',
      () => [{ headers: { 'X-Forwarded-For': '203.0.113.78', 'X-LICENSE-KEY': '   ' } }],
    ],
    [
      'an oversized license key (403)',
      () => [{ headers: { 'X-Forwarded-For': '203.0.113.79', 'X-LICENSE-KEY': 'k'.repeat(200) } }],
    ],
    ['an unknown license key (403)', () => [{ headers: { ...from(), 'X-LICENSE-KEY': randomUUID() } }]],
    ['a paid domain', (f) => [{ headers: withKey(f) }]],
    ['an unpaid domain (redirect_url)', (f) => [{ headers: withKey(f) }], { domain: { has_paid: false } }],
    [
      'a subdomain of a registered domain',
      (f) => [{ headers: withKey(f, { 'X-Service-Domain': `www.${f.domain}` }) }],
    ],
    [
      'an unregistered domain (403)',
      (f) => [{ headers: withKey(f, { 'X-Service-Domain': 'elsewhere.example.org' }) }],
    ],
    ['no domain at all (400)', (f) => [{ headers: { ...from(), 'X-LICENSE-KEY': f.uuid } }]],
    [
      'the domain in the query',
      (f) => [{ path: `${RUNTIME}?domain=${f.domain}`, headers: { ...from(), 'X-LICENSE-KEY': f.uuid } }],
    ],
    [
      'the domain from Origin (and CORS)',
      (f) => [{ headers: { ...from(), 'X-LICENSE-KEY': f.uuid, Origin: `https://${f.domain}` } }],
    ],
    [
      'the domain from Referer',
      (f) => [{ headers: { ...from(), 'X-LICENSE-KEY': f.uuid, Referer: `https://${f.domain}/shop?x=1` } }],
    ],
    [
      'action=check_project on an unpaid project',
      (f) => [{ path: `${RUNTIME}?action=check_project`, headers: withKey(f) }],
      { project: { has_paid: false } },
    ],
    ['include=injectables', (f) => [{ path: `${RUNTIME}?include=injectables`, headers: withKey(f) }]],
    ['an unknown action (422)', (f) => [{ path: `${RUNTIME}?action=everything`, headers: withKey(f) }]],
    ['an unknown include (422)', (f) => [{ path: `${RUNTIME}?include=secrets`, headers: withKey(f) }]],
    [
      'action sent twice (422)',
      (f) => [{ path: `${RUNTIME}?action=check_project&action=check_project`, headers: withKey(f) }],
    ],
    ['an empty query string', (f) => [{ path: `${RUNTIME}?`, headers: withKey(f) }]],
    [
      'the license in the query',
      (f) => [{ path: `${RUNTIME}?license=${f.uuid}`, headers: { ...from(), 'X-Service-Domain': f.domain } }],
    ],
    [
      'the license in the body',
      (f) => [
        { headers: { ...from(), 'X-Service-Domain': f.domain }, body: JSON.stringify({ license: f.uuid }) },
      ],
    ],
    ['the SDK body {}', (f) => [{ headers: withKey(f), body: '{}' }]],
    [
      'config from an allow_configs license',
      (f) => [
        {
          headers: withKey(f, { 'X-Service-Domain': 'nowhere.example.org' }),
          body: JSON.stringify({ config: { action: 'check_project' } }),
        },
      ],
      { license: { allow_configs: true } },
    ],
    [
      'config from a license without allow_configs (ignored)',
      (f) => [
        {
          headers: withKey(f, { 'X-Service-Domain': 'nowhere.example.org' }),
          body: JSON.stringify({ config: { action: 'check_project' } }),
        },
      ],
    ],
    ['malformed JSON (400)', (f) => [{ headers: withKey(f), body: '{"license":' }]],
    ['a JSON array body (400)', (f) => [{ headers: withKey(f), body: '[1,2]' }]],
    ['a JSON string body (400)', (f) => [{ headers: withKey(f), body: '"text"' }]],
    [
      'a body nested 40 deep (400)',
      (f) => [{ headers: withKey(f), body: `${'{"a":'.repeat(40)}1${'}'.repeat(40)}` }],
    ],
    ['a text/plain body (415)', (f) => [{ headers: withKey(f), body: 'hello', type: 'text/plain' }]],
    [
      'an unsupported charset (415)',
      (f) => [{ headers: withKey(f), body: '{}', type: 'application/json; charset=latin1' }],
    ],
    [
      'a body over MAX_UPLOAD_BYTES (413)',
      (f) => [{ headers: withKey(f), body: JSON.stringify({ pad: 'x'.repeat(5000) }) }],
    ],
    [
      'an unsupported content encoding (415)',
      (f) => [{ headers: withKey(f, { 'Content-Encoding': 'compress' }), body: '{}' }],
    ],
    [
      'a multipart body (no fields read)',
      (f) => [{ headers: withKey(f), body: '--b\r\n\r\n--b--\r\n', type: 'multipart/form-data; boundary=b' }],
    ],
    ['an inactive project (403)', (f) => [{ headers: withKey(f) }], { project: { is_active: false } }],
    [
      'a test license on localhost',
      (f) => [{ headers: withKey(f, { 'X-Service-Domain': 'localhost' }) }],
      { license: { is_test_license: true } },
    ],
    [
      'a license on a plan of 20 entitlements, with overrides',
      (f) => [
        { headers: withKey(f) },
        { headers: withKey(f, { 'X-Service-Domain': 'elsewhere.example.org' }) },
      ],
      {
        plan: { entitlements: TWENTY_ENTITLEMENTS, max_usage_per_day: 1000 },
        license: { entitlements: { seats: 9, 'meter.ai_credits': 5 } },
      },
    ],
    [
      'a license on a plan, from an unpaid domain',
      (f) => [{ headers: withKey(f) }],
      { plan: { entitlements: { sso: true } }, domain: { has_paid: false } },
    ],
    [
      'entitlements of its own without a plan',
      (f) => [{ headers: withKey(f) }],
      { license: { entitlements: { beta: true } } },
    ],
    [
      'an allowed client address',
      (f) => [{ headers: withKey(f, { 'X-Forwarded-For': '10.1.2.3' }) }],
      { license: { allowed_ips: '10.0.0.0/8' } },
    ],
    [
      'a refused client address (403)',
      (f) => [{ headers: withKey(f, { 'X-Forwarded-For': '203.0.113.5' }) }],
      { license: { allowed_ips: '10.0.0.0/8' } },
    ],
    [
      'allowed_countries: allowed, refused, and not sent',
      (f) => [
        { headers: withKey(f, { 'CF-IPCountry': 'de' }) },
        { headers: withKey(f, { 'CF-IPCountry': 'FR' }) },
        { headers: withKey(f) },
      ],
      { license: { allowed_countries: 'DE' } },
    ],
    [
      'a request id sent, and a malformed one',
      (f) => [
        { headers: withKey(f, { 'X-Request-Id': 'req-42.a:b' }) },
        { headers: withKey(f, { 'X-Request-Id': 'bad id!' }) },
      ],
    ],
    [
      'max_domains: 1 and a second domain (403)',
      (_f, own) => [
        { headers: withKey(own) },
        { headers: withKey(own, { 'X-Service-Domain': `other.${own.domain}` }) },
        { headers: withKey(own, { 'X-Service-Domain': 'elsewhere.example.org' }) },
      ],
      { license: { max_domains: 1, max_subdomains_per_domain: 0 } },
    ],
    [
      'max_usage_per_day: 2 and a third call (429)',
      (_f, own) => [1, 2, 3].map(() => ({ headers: withKey(own) })),
      { license: { max_usage_per_day: 2 } },
    ],
    [
      'the runtime allowance per license (429 after 5)',
      (_f, own) => [1, 2, 3, 4, 5, 6, 7].map(() => ({ headers: withKey(own) })),
    ],
  ];

  it.each(cases)('%s', async (_name, scenario, options = {}) => {
    await run(scenario, options);
  });

  /** A call to record usage: `body` as JSON unless it is a string already. */
  const usage = (f: Fixture, body: unknown, extra: Record<string, string> = {}): Call => ({
    path: USAGE,
    headers: withKey(f, extra),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const METERED = { plan: { entitlements: { 'meter.ai_credits': 3, sso: true } } };
  /** Each: the scenario, its fixture, and the statuses both paths answer, in order. */
  const usageCases: [string, Scenario, FixtureOptions, number[]][] = [
    [
      'counts, and counts again with another key',
      (_f, own) => [
        usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k1' }),
        usage(own, { meter: 'meter.ai_credits', amount: 2, idempotency_key: 'k2' }),
      ],
      METERED,
      [200, 200],
    ],
    [
      'a key sent again: the first answer; with another amount (422)',
      (_f, own) => [
        usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k1' }),
        usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k1' }),
        usage(own, { meter: 'meter.ai_credits', amount: 2, idempotency_key: 'k1' }),
      ],
      METERED,
      [200, 200, 422],
    ],
    [
      'past the quota (429 with Retry-After), then a key sent before',
      (_f, own) => [
        usage(own, { meter: 'meter.ai_credits', amount: 3, idempotency_key: 'k1' }),
        usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k2' }),
        usage(own, { meter: 'meter.ai_credits', amount: 3, idempotency_key: 'k1' }),
      ],
      METERED,
      [200, 429, 200],
    ],
    [
      'a meter the license lacks (404)',
      (f) => [usage(f, { meter: 'meter.other', idempotency_key: 'k1' })],
      METERED,
      [404],
    ],
    [
      'invalid fields (422)',
      (f) => [
        usage(f, {}),
        usage(f, { meter: 7, amount: 0, idempotency_key: 'k ' }),
        usage(f, { meter: 'meter.ai_credits', amount: 1.5, idempotency_key: 'x'.repeat(101) }),
        { path: USAGE, headers: withKey(f) },
      ],
      METERED,
      [422, 422, 422, 422],
    ],
    [
      'bad bodies (400, 413, 415)',
      (f) => [
        usage(f, '{"meter":'),
        usage(f, '[1]'),
        usage(f, JSON.stringify({ pad: 'x'.repeat(5000) })),
        { ...usage(f, '{}'), type: 'text/plain' },
      ],
      METERED,
      [400, 400, 413, 415],
    ],
    [
      'an unpaid domain (403)',
      (f) => [usage(f, { meter: 'meter.ai_credits', idempotency_key: 'k1' })],
      { ...METERED, domain: { has_paid: false } },
      [403],
    ],
    [
      'no, an unknown, and a body license key',
      (_f, own) => [
        { path: USAGE, headers: from(), body: '{}' },
        {
          ...usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k1' }),
          headers: { ...from(), 'X-LICENSE-KEY': randomUUID() },
        },
        {
          ...usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k2', license: own.uuid }),
          headers: { ...from(), 'X-Service-Domain': own.domain },
        },
      ],
      METERED,
      [401, 403, 200],
    ],
    [
      'a refused client address (403)',
      (f) => [
        usage(f, { meter: 'meter.ai_credits', idempotency_key: 'k1' }, { 'X-Forwarded-For': '203.0.113.5' }),
      ],
      { ...METERED, license: { allowed_ips: '10.0.0.0/8' } },
      [403],
    ],
    [
      'the runtime allowance per license (429 after 5)',
      (_f, own) =>
        [1, 2, 3, 4, 5, 6].map((i) => usage(own, { meter: 'meter.ai_credits', idempotency_key: `k${i}` })),
      { plan: { entitlements: { 'meter.ai_credits': 100 } } },
      [200, 200, 200, 200, 200, 429],
    ],
  ];

  it.each(usageCases)('metered usage: %s', async (_name, scenario, options, statuses) => {
    const answers = await run(scenario, options);
    expect(answers.map((a) => a.status)).toEqual(statuses);
  });

  it('metered usage under another spelling of its path still goes through Express', async () => {
    await run(
      (_f, own) => [
        { ...usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k1' }), path: `${USAGE}/` },
        { ...usage(own, { meter: 'meter.ai_credits', idempotency_key: 'k2' }), path: USAGE.toUpperCase() },
      ],
      METERED,
      false,
    );
  });

  it('a revoked, an expired and a locked license get the same refusals', async () => {
    const revoked = await fixture();
    await fast
      .http()
      .post(`/api/v1/project/${revoked.projectId}/licenses/${revoked.licenseId}/revoke`)
      .set('X-API-KEY', key)
      .expect(200);
    const expired = await fixture();
    await fast.dataSource
      .getRepository(LicenseEntity)
      .update(expired.licenseId, { expires_at: new Date(Date.now() - 60_000) });
    const locked = await fixture();
    await fast
      .http()
      .post(`/api/v1/project/${locked.projectId}/lock`)
      .set('X-API-KEY', key)
      .send({})
      .expect(200);
    const calls = [revoked, expired, locked].map((f) => ({ headers: withKey(f) }));
    const answers = await same({ fast: calls, routed: calls }, true);
    expect(answers.map((a) => a.status)).toEqual([403, 403, 403]);
    expect(answers.map((a) => a.body.message)).toEqual([
      'This license has been revoked.',
      'This license has expired.',
      'Project is locked.',
    ]);
  });

  it("answers a plan's entitlements alike on both paths", async () => {
    const [answer] = await run((f) => [{ headers: withKey(f) }], {
      plan: { entitlements: TWENTY_ENTITLEMENTS },
      license: { entitlements: { seats: 9 } },
    });
    expect(answer.body.data).toEqual({
      has_paid: true,
      is_test_license: false,
      plan: 'pro',
      entitlements: { ...TWENTY_ENTITLEMENTS, seats: 9 },
    });
  });

  it('answers the same as the routed call for a paid domain, field by field', async () => {
    const [paid] = await run((f) => [{ headers: withKey(f) }]);
    expect(paid.status).toBe(200);
    expect(paid.body).toEqual({
      status: 'success',
      message: 'Success',
      data: { has_paid: true, is_test_license: false },
      errors: null,
    });
    expect(paid.headers['access-control-allow-origin']).toBe('*');
    expect(paid.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(paid.headers['x-ratelimit-limit-runtime']).toBe('5');
  });

  it('an error whose answer cannot be written gets a plain 500, and the server goes on', async () => {
    // A header no HTTP message may carry: writing the envelope's headers throws.
    const refusal = new ApiError(429, 'Too many.', null, null, { 'Bad Header Name': '1' });
    const spy = jest.spyOn(ThrottleGuard.prototype, 'count').mockImplementationOnce(() => {
      throw refusal;
    });
    try {
      const res = await fast.http().post(RUNTIME).set('X-LICENSE-KEY', randomUUID()).timeout(5000);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        status: 'error',
        message: 'Internal server error.',
        data: null,
        errors: null,
      });
      expect(res.headers['x-request-id']).toBeDefined();
    } finally {
      spy.mockRestore();
    }
    const after = await fast.http().post(RUNTIME).set('X-LICENSE-KEY', randomUUID());
    expect(after.status).toBe(403);
  });

  it('a fragment in the URL is left out of the query on both paths, as Express leaves it', async () => {
    const f = await fixture({ license: { allow_configs: true } });
    const paths = [
      `${RUNTIME}?license=${f.uuid}#x`,
      // (Not include=token: a token carries the second it was made, which may differ between the two calls.)
      `${RUNTIME}?include=injectables#x`,
      `${RUNTIME}?action=check_project#x?action=everything`,
      `${RUNTIME}?domain=${f.domain}#x`,
    ];
    const answers: Response[] = [];
    for (const path of paths) {
      const headers = path.includes('license=') ? { ...from(), 'X-Service-Domain': f.domain } : withKey(f);
      const a = await postAsIs(fast, path, headers);
      const b = await postAsIs(routed, path, headers);
      expect({ path, ...comparable(a) }).toEqual({ path, ...comparable(b) });
      answers.push(a);
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(JSON.parse(answers[1].text).data.injectables).toEqual([]);
  });

  it('a calling domain sent as UTF-8 bytes is read as UTF-8 on both paths; one that is no host is 400', async () => {
    const name = `bücher-${uniqueToken()}.example`;
    const f = await fixture({ host: name });
    // Node's client writes a header's characters as latin1 bytes: these are the name's UTF-8 bytes.
    const utf8 = Buffer.from(name, 'utf8').toString('latin1');
    const answers: Response[] = [];
    for (const sent of [utf8, `${f.domain}..`, `${f.domain}:99999`]) {
      const headers = { ...from(), 'X-LICENSE-KEY': f.uuid, 'X-Service-Domain': sent };
      const a = await postAsIs(fast, RUNTIME, headers);
      const b = await postAsIs(routed, RUNTIME, headers);
      expect({ sent, ...comparable(a) }).toEqual({ sent, ...comparable(b) });
      answers.push(a);
    }
    expect(f.domain).toMatch(/^xn--/);
    expect(answers.map((a) => [a.status, JSON.parse(a.text).message])).toEqual([
      [200, 'Success'],
      [
        400,
        'The X-Service-Domain header does not name a host: send it once, with one host name such as shop.example.com.',
      ],
      [
        400,
        'The X-Service-Domain header does not name a host: send it once, with one host name such as shop.example.com.',
      ],
    ]);
  });

  it('other spellings and methods of the path still go through Express', async () => {
    await run(
      (f) => [
        { path: `${RUNTIME}/`, headers: withKey(f) },
        { path: RUNTIME.toUpperCase(), headers: withKey(f) },
      ],
      {},
      false,
    );
    // GET/PUT/HEAD /project/has-paid are the management routes of a project with id "has-paid": API key first.
    const answers = await run(
      (f) => [
        { method: 'get', headers: withKey(f) },
        { method: 'put', headers: withKey(f) },
        { method: 'head', headers: withKey(f) },
      ],
      {},
      false,
    );
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401]);
  });
});

describe('runtime check served ahead of Express: CORS with a list of origins', () => {
  let fast: TestApp;
  let routed: TestApp;
  const env = { CORS_ORIGINS: 'https://a.example.com, https://b.example.com', THROTTLE_RUNTIME_LIMIT: '100' };
  beforeAll(async () => {
    fast = await createTestApp(env);
    routed = await createTestApp(env, { databaseUrl: fast.config.env.DATABASE_URL, runtimeFastPath: false });
  });
  afterAll(async () => {
    await routed?.close();
    await fast?.close();
  });

  it.each([
    ['a listed origin', 'https://b.example.com'],
    ['an origin not listed', 'https://evil.example.net'],
    ['no origin', undefined],
  ])('%s gets the same CORS headers', async (_name, origin) => {
    const answers = await Promise.all(
      [fast, routed].map((t) => {
        const req = t.http().post(RUNTIME).set('X-LICENSE-KEY', randomUUID());
        return origin ? req.set('Origin', origin) : req;
      }),
    );
    const cors = answers.map((a) => [
      a.status,
      a.headers['access-control-allow-origin'],
      a.headers['access-control-expose-headers'],
      a.headers.vary,
    ]);
    expect(cors[0]).toEqual(cors[1]);
    expect(cors[0][0]).toBe(403);
    expect(cors[0][1]).toBe(origin === 'https://b.example.com' ? origin : undefined);
    expect(cors[0][3]).toBe('Origin');
  });
});

@Injectable()
class ExtraGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

describe('runtime check served ahead of Express: refuses to start when it would skip part of the route', () => {
  let app: INestApplication | undefined;
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("the usage route carries LicenseKeyGuard and no other enhancer of its own: what the fast path runs in the route's place", () => {
    // Read here, not at start: the service touches none of Nest's metadata keys.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a metadata target, never called
    const handler = LicenseUsageController.prototype.record;
    const on = (key: string) =>
      [LicenseUsageController, handler].flatMap(
        (target) => (Reflect.getMetadata(key, target) as unknown[] | undefined) ?? [],
      );
    expect({
      guards: on(GUARDS_METADATA),
      interceptors: on(INTERCEPTORS_METADATA),
      pipes: on(PIPES_METADATA),
      filters: on(EXCEPTION_FILTERS_METADATA),
    }).toEqual({ guards: [LicenseKeyGuard], interceptors: [], pipes: [], filters: [] });
  });

  it('a global guard it does not run stops setupApp', async () => {
    db = await createTestDatabase();
    const config = loadConfig(
      {
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        APP_KEY: Buffer.alloc(32, 7).toString('base64'),
        DATABASE_URL: db.url,
      },
      () => undefined,
    );
    app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
      bodyParser: false,
      logger: false,
    });
    app.useGlobalGuards(new ExtraGuard());
    expect(() => setupApp(app as INestApplication)).toThrow(
      /cannot answer \/api\/v1\/project\/has-paid: it does not run global guards other than ThrottleGuard/,
    );
  });
});
