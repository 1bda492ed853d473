import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import express from 'express';
import { randomBytes, randomUUID } from 'node:crypto';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
import { AnalyticsCounts } from '../../src/analytics/analytics-counts.service.js';
import { AuthService } from '../../src/auth/auth.service.js';
import { sqlDatetime } from '../../src/common/time.js';
import { ProjectGenerations } from '../../src/common/cache/generations.js';
import { loadConfig } from '../../src/config/app-config.js';
import { LicensesService } from '../../src/licenses/licenses.service.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { freePort, stop, waitFor } from '../utils/processes.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { ManualClock } from '../utils/clock.js';

/*
 * No way around the gate (docs/security.md): every restriction of a license holds on every
 * runtime route and option. Run at the defaults `npm start` uses, through the runtime fast path and
 * through Express's router (the two run the same code).
 */

const RUNTIME = '/api/v1/project/has-paid';
const PINNED_CHECK_PROJECT = 'This license is pinned to a domain: send the calling domain.';
const HEADER_NOT_A_HOST =
  'The X-Service-Domain header does not name a host: send it once, with one host name such as shop.example.com.';
const PARAMETER_NOT_A_HOST =
  'The domain parameter does not name a host: send one host name such as shop.example.com.';
const PAYLOADS_NEED_DOMAIN =
  'This license may not receive payloads for a project-level check: send the calling domain.';
const NOT_REGISTERED = 'Domain is not registered under this project.';

describe.each([
  ['the runtime fast path', true],
  ['the Express route', false],
])('action=check_project keeps every restriction (%s)', (_name, runtimeFastPath) => {
  let t: TestApp;
  let key: string;

  const check = (license: string, query: Record<string, string>, headers: Record<string, string> = {}) => {
    const req = t.http().post(RUNTIME).set('Accept', 'application/json').set('X-LICENSE-KEY', license);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    return req.query(query);
  };
  const projectLevel = { action: 'check_project', include: 'injectables,token' };

  /** A paid project with a paid-only injectable and one paid domain. */
  const paidProject = async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const domain = await makeDomain(t, key, project.id, { has_paid: true });
    const res = await t
      .http()
      .post(`/api/v1/project/${project.id}/injectables`)
      .set('X-API-KEY', key)
      .set('Accept', 'application/json')
      .send({
        slug: `s-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        content: 'paid-only',
        secret: 'a-secret-of-enough-length',
        only_if_paid: true,
      });
    expectSuccess(res, 201);
    return { project, domain };
  };

  beforeAll(async () => {
    t = await createTestApp({}, { runtimeFastPath });
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t?.close());

  it('an unregistered calling domain is refused as without the action, from every source', async () => {
    const { project } = await paidProject();
    const license = await makeLicense(t, key, project.id);
    for (const headers of <Record<string, string>[]>[
      { 'X-Service-Domain': 'evil.attacker.net' },
      { Origin: 'https://evil.attacker.net' },
      { Referer: 'https://evil.attacker.net/page' },
    ]) {
      expect(expectError(await check(license.uuid, projectLevel, headers), 403).message).toBe(NOT_REGISTERED);
    }
    const byParameter = await check(license.uuid, { ...projectLevel, domain: 'evil.attacker.net' });
    expect(expectError(byParameter, 403).message).toBe(NOT_REGISTERED);
  });

  it('a pinned license may not ask check_project, with or without a calling domain or payloads', async () => {
    const { project } = await paidProject();
    const unpaid = await makeDomain(t, key, project.id, { has_paid: false });
    const license = await makeLicense(t, key, project.id, { domain_id: unpaid.id });
    for (const [query, headers] of [
      [projectLevel, { 'X-Service-Domain': 'evil.attacker.net' }],
      [projectLevel, { 'X-Service-Domain': unpaid.domain }],
      [projectLevel, {}],
      [{ action: 'check_project' }, {}],
      [{ action: 'check_project' }, { 'X-Service-Domain': unpaid.domain }],
    ] as const) {
      const res = await check(license.uuid, query, headers);
      expect(expectError(res, 403).message).toBe(PINNED_CHECK_PROJECT);
      expect(res.body.data).toEqual({ redirect_url: null });
    }
    // Its own domain's answer stays what it was: unpaid, no payloads.
    expect(
      expectSuccess(
        await check(license.uuid, { include: 'injectables' }, { 'X-Service-Domain': unpaid.domain }),
      ),
    ).toEqual({ has_paid: false, redirect_url: null, is_test_license: false });
  });

  it('a sent calling domain that is neither a host name nor an IP literal is a 400 for every license', async () => {
    const { project, domain } = await paidProject();
    const pinned = await makeLicense(t, key, project.id, { domain_id: domain.id });
    const plain = await makeLicense(t, key, project.id);
    const test = await makeLicense(t, key, project.id, { is_test_license: true });
    for (const license of [pinned, plain, test]) {
      expect(
        expectError(
          await check(license.uuid, { include: 'injectables' }, { 'X-Service-Domain': 'not_a_host!' }),
          400,
        ).message,
      ).toBe(HEADER_NOT_A_HOST);
      expect(
        expectError(await check(license.uuid, { domain: 'not_a_host!', include: 'injectables' }), 400)
          .message,
      ).toBe(PARAMETER_NOT_A_HOST);
    }
    // An IP literal names a place: not the domain a license is pinned to.
    expect(
      expectError(
        await check(pinned.uuid, { include: 'injectables' }, { 'X-Service-Domain': '203.0.113.9' }),
        403,
      ).message,
    ).toBe('This license is pinned to another domain.');
    // The pinned domain itself still gets its payloads.
    const paid = expectSuccess(
      await check(pinned.uuid, { include: 'injectables' }, { 'X-Service-Domain': domain.domain }),
    );
    expect(paid.has_paid).toBe(true);
    expect(paid.injectables).toHaveLength(1);
  });

  it('max_domains holds and the activation is recorded under check_project', async () => {
    const { project, domain } = await paidProject();
    const other = await makeDomain(t, key, project.id, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { max_domains: 1 });
    const first = expectSuccess(
      await check(license.uuid, projectLevel, { 'X-Service-Domain': domain.domain }),
    );
    expect(first.has_paid).toBe(true);
    expect(first.injectables).toHaveLength(1);
    expect(typeof first.token).toBe('string');
    const second = await check(license.uuid, projectLevel, { 'X-Service-Domain': other.domain });
    expect(expectError(second, 403).message).toBe('This license has reached its limit of 1 domain.');
    const activations = expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${project.id}/licenses/${license.id}/activations`)
        .set('X-API-KEY', key)
        .set('Accept', 'application/json'),
    );
    expect(JSON.stringify(activations)).toContain(domain.domain);
  });

  it('allowed_ips and allowed_countries hold under check_project', async () => {
    const { project } = await paidProject();
    const byIp = await makeLicense(t, key, project.id, { allowed_ips: '203.0.113.7' });
    expect(expectError(await check(byIp.uuid, { action: 'check_project' }), 403).message).toBe(
      'Your IP address is not allowed to use this license.',
    );
    const byCountry = await makeLicense(t, key, project.id, { allowed_countries: 'FR' });
    const res = await check(byCountry.uuid, { action: 'check_project' }, { 'CF-IPCountry': 'US' });
    expect(expectError(res, 403).message).toBe(
      'Requests from your country are not allowed for this license.',
    );
  });

  it('payloads go out without a calling domain only to allow_configs licenses', async () => {
    const { project } = await paidProject();
    const plain = await makeLicense(t, key, project.id);
    expect(
      expectError(await check(plain.uuid, { action: 'check_project', include: 'token' }), 403).message,
    ).toBe(PAYLOADS_NEED_DOMAIN);
    const configurable = await makeLicense(t, key, project.id, { allow_configs: true });
    const data = expectSuccess(await check(configurable.uuid, projectLevel));
    expect(data.injectables).toHaveLength(1);
    expect(typeof data.token).toBe('string');
  });

  it('a test license sending localhost is held to its domain limits', async () => {
    const { project } = await paidProject();
    const license = await makeLicense(t, key, project.id, { is_test_license: true, max_domains: 1 });
    expectSuccess(await check(license.uuid, projectLevel, { 'X-Service-Domain': 'localhost' }));
    expectSuccess(await check(license.uuid, {}, { 'X-Service-Domain': 'localhost' }));
    for (const query of [projectLevel, {}]) {
      const res = await check(license.uuid, query, { 'X-Service-Domain': 'other.test' });
      expect(expectError(res, 403).message).toBe('This license has reached its limit of 1 domain.');
    }
  });
});

describe('GET /injectable/stream applies allowed_ips and allowed_countries', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t?.close());

  const stream = (license: string, headers: Record<string, string> = {}) => {
    const req = t.http().get('/api/v1/injectable/stream').set('Accept', 'application/json');
    for (const [name, value] of Object.entries({ 'X-LICENSE-KEY': license, ...headers }))
      req.set(name, value);
    return req;
  };

  it('refuses a caller has-paid refuses, with the same messages', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const byIp = await makeLicense(t, key, project.id, { allowed_ips: '203.0.113.0/24' });
    expect(expectError(await stream(byIp.uuid), 403).message).toBe(
      'Your IP address is not allowed to use this license.',
    );
    const byCountry = await makeLicense(t, key, project.id, { allowed_countries: 'FR,DE' });
    expect(expectError(await stream(byCountry.uuid, { 'CF-IPCountry': 'US' }), 403).message).toBe(
      'Requests from your country are not allowed for this license.',
    );
    expect(expectError(await stream(byCountry.uuid), 403).message).toBe(
      'Requests from your country are not allowed for this license.',
    );
    expect(expectSuccess(await stream(byCountry.uuid, { 'CF-IPCountry': 'fr' })).injectables).toEqual([]);
    const allowed = await makeLicense(t, key, project.id, { allowed_ips: '127.0.0.1, ::1' });
    expectSuccess(await stream(allowed.uuid));
  });
});

describe('TRUST_PROXY: the client address is the first untrusted one, from the right', () => {
  /** The client address Express computes for a request from `peer` carrying `forwardedFor`. */
  const clientAddress = (trustProxy: string, peer: string, forwardedFor?: string) => {
    const app = express();
    const trust = loadConfig(
      { APP_KEY: randomBytes(32).toString('base64'), TRUST_PROXY: trustProxy },
      () => {},
    ).trustProxy;
    if (trust !== false) app.set('trust proxy', trust);
    const socket = { remoteAddress: peer };
    const req = {
      connection: socket,
      socket,
      headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    } as unknown as IncomingMessage;
    return proxyaddr(req, app.get('trust proxy fn') as (addr: string, i: number) => boolean);
  };

  it('with the shipped docker-compose.yml and deploy/nginx.conf, a client cannot choose its address', () => {
    const compose = readFileSync('docker-compose.yml', 'utf8');
    const nginxConf = readFileSync('deploy/nginx.conf', 'utf8');
    const trustProxy = /TRUST_PROXY: '([^']*)'/.exec(compose)?.[1];
    const nginxAddress = /nginx:[\s\S]*?ipv4_address: ([0-9.]+)/.exec(compose)?.[1];
    const setForwardedFor = /proxy_set_header X-Forwarded-For (\S+);/.exec(nginxConf)?.[1];
    expect({ trustProxy, nginxAddress }).toEqual({ trustProxy: nginxAddress, nginxAddress: '172.28.0.10' });
    // nginx drops the country header a client could write (no CDN sets it in front of this nginx).
    expect(nginxConf).toMatch(/proxy_set_header CF-IPCountry "";/);

    /** What nginx sends upstream for a client at `client` that wrote `written` into X-Forwarded-For. */
    const nginxForwards = (client: string, written: string | undefined) => {
      if (setForwardedFor === '$remote_addr') return client;
      if (setForwardedFor === '$proxy_add_x_forwarded_for')
        return written === undefined ? client : `${written}, ${client}`;
      throw new Error(`unknown nginx X-Forwarded-For value ${setForwardedFor}`);
    };
    const client = '198.51.100.23';
    for (const written of [undefined, '203.0.113.9', '203.0.113.9, 10.0.0.1', '172.28.0.10', 'nonsense']) {
      const seen = clientAddress(
        trustProxy as string,
        nginxAddress as string,
        nginxForwards(client, written),
      );
      expect({ written, seen }).toEqual({ written, seen: client });
    }
    // A client that reaches an app directly (inside the network) is its own address, whatever it writes.
    expect(clientAddress(trustProxy as string, '172.28.0.99', '203.0.113.9')).toBe('172.28.0.99');
  });

  it('what the old settings (TRUST_PROXY=true, $proxy_add_x_forwarded_for) let a client do', () => {
    expect(clientAddress('true', '172.28.0.10', '203.0.113.9, 198.51.100.23')).toBe('203.0.113.9');
  });

  it('hop counts, lists and names read X-Forwarded-For from the right', () => {
    const forwarded = '203.0.113.9, 198.51.100.23, 10.0.0.2';
    expect(clientAddress('false', '10.0.0.1', forwarded)).toBe('10.0.0.1');
    expect(clientAddress('1', '10.0.0.1', forwarded)).toBe('10.0.0.2');
    expect(clientAddress('2', '10.0.0.1', forwarded)).toBe('198.51.100.23');
    expect(clientAddress('10.0.0.0/8', '10.0.0.1', forwarded)).toBe('198.51.100.23');
    expect(clientAddress('uniquelocal', '10.0.0.1', forwarded)).toBe('198.51.100.23');
    expect(clientAddress('loopback', '10.0.0.1', forwarded)).toBe('10.0.0.1');
  });

  it('allowed_ips sees the address TRUST_PROXY=loopback gives, on the fast path and the stream', async () => {
    const t = await createTestApp({ TRUST_PROXY: 'loopback' });
    try {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { has_paid: true });
      const license = await makeLicense(t, key, project.id, { allowed_ips: '198.51.100.23' });
      const call = (forwarded: string) =>
        t
          .http()
          .post(`${RUNTIME}?action=check_project`)
          .set('X-LICENSE-KEY', license.uuid)
          .set('X-Forwarded-For', forwarded);
      // The left-most entry is the client's to write; the right-most untrusted one is not.
      expect(expectError(await call('198.51.100.23, 203.0.113.9'), 403).message).toBe(
        'Your IP address is not allowed to use this license.',
      );
      expectSuccess(await call('203.0.113.9, 198.51.100.23'));
      const stream = await t
        .http()
        .get('/api/v1/injectable/stream')
        .set('X-LICENSE-KEY', license.uuid)
        .set('X-Forwarded-For', '198.51.100.23, 203.0.113.9');
      expectError(stream, 403);
    } finally {
      await t.close();
    }
  });
});

describe('API keys can do no more than their holder', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  const keys = (key: string) => ({
    create: (body: Record<string, unknown> = {}) =>
      t.http().post('/api/v1/api-keys').set('X-API-KEY', key).set('Accept', 'application/json').send(body),
    roll: (id: number) =>
      t.http().post(`/api/v1/api-keys/${id}/roll`).set('X-API-KEY', key).set('Accept', 'application/json'),
    revoke: (id: number) =>
      t.http().delete(`/api/v1/api-keys/${id}`).set('X-API-KEY', key).set('Accept', 'application/json'),
    list: () => t.http().get('/api/v1/api-keys').set('X-API-KEY', key).set('Accept', 'application/json'),
  });

  it('a key with an expiry cannot create a key that outlives it; without expires_at it gets its own', async () => {
    const user = await makeUser(t.app);
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    const short = keys(await makeApiKey(t.app, user, { expires_at: expiresAt }));
    const limit = `The expires at field must be a date no later than ${expiresAt.toISOString().replace('.000Z', 'Z')}, when this API key expires.`;
    for (const expires_at of [null, new Date(expiresAt.getTime() + 1000).toISOString()]) {
      const res = await short.create({ expires_at });
      expect(expectError(res, 422, ['expires_at']).errors.expires_at).toEqual([limit]);
    }
    const inherited = expectSuccess(await short.create({ name: 'child' }), 201);
    expect(Date.parse(inherited.expires_at)).toBe(expiresAt.getTime());
    const sooner = new Date(expiresAt.getTime() - 60_000).toISOString().replace('.000Z', 'Z');
    expect(expectSuccess(await short.create({ expires_at: sooner }), 201).expires_at).toBe(sooner);
    // Nor can it roll a key that outlives it (the replacement would).
    const main = (await short.list()).body.data.find(
      (k: { expires_at: string | null }) => k.expires_at === null,
    );
    const other = await makeApiKey(t.app, user);
    const otherId = (await keys(other).list()).body.data.find(
      (k: { prefix: string }) => k.prefix === other.slice(0, 8),
    ).id;
    expect(expectError(await short.roll(main?.id ?? otherId), 403).message).toBe(
      'This API key expires before the key it would roll, so it cannot roll it.',
    );
  });

  it('a key in its rolled grace period cannot create, roll or revoke keys', async () => {
    const user = await makeUser(t.app);
    const main = await makeApiKey(t.app, user);
    const old = await makeApiKey(t.app, user, { name: 'old' });
    const oldId = (await keys(main).list()).body.data.find((k: { name: string }) => k.name === 'old').id;
    const replacement = expectSuccess(await keys(main).roll(oldId), 201);
    const rolled = keys(old);
    expectSuccess(await rolled.list()); // still works for everything else
    const refused = 'This API key has been rolled: it may no longer manage API keys.';
    const auditBefore = (await t.http().get('/api/v1/audit-log').set('X-API-KEY', main)).body.data.data
      .length;
    expect(expectError(await rolled.create(), 403).message).toBe(refused);
    expect(expectError(await rolled.roll(replacement.id), 403).message).toBe(refused);
    expect(expectError(await rolled.revoke(replacement.id), 403).message).toBe(refused);
    const mainId = (await keys(main).list()).body.data.find((k: { name: string }) => k.name === 'default').id;
    expect(expectError(await rolled.revoke(mainId), 403).message).toBe(refused);
    expectSuccess(await keys(replacement.key).list());
    expectSuccess(await keys(main).list());
    expect((await t.http().get('/api/v1/audit-log').set('X-API-KEY', main)).body.data.data.length).toBe(
      auditBefore,
    );
  });
});

describe('unknown or malformed keys are limited per client address (THROTTLE_AUTH_FAILURES_*, default 60 distinct keys per 60 s)', () => {
  let t: TestApp;

  beforeAll(async () => {
    // '' is "not set": the default a user runs. TRUST_PROXY=loopback lets each test be its own address.
    t = await createTestApp({
      THROTTLE_AUTH_FAILURES_LIMIT: '',
      THROTTLE_AUTH_FAILURES_TTL_SECONDS: '',
      TRUST_PROXY: 'loopback',
    });
  });
  afterAll(async () => t?.close());

  const runtime = (license: string, from: string) =>
    t
      .http()
      .post(`${RUNTIME}?action=check_project`)
      .set('Accept', 'application/json')
      .set('X-Forwarded-For', from)
      .set('X-LICENSE-KEY', license);
  const management = (key: string, from: string) =>
    t
      .http()
      .get('/api/v1/api-keys')
      .set('Accept', 'application/json')
      .set('X-Forwarded-For', from)
      .set('X-API-KEY', key);
  const madeUpApiKey = () => `lg_${randomBytes(32).toString('base64url')}`;
  const TOO_MANY =
    /^Too many requests with unknown or malformed keys from this address\. Retry after \d+ seconds?\.$/;

  it('the 61st distinct unknown key from an address within a minute is a 429 with Retry-After, license and API keys alike', async () => {
    expect(t.config.env.THROTTLE_AUTH_FAILURES_LIMIT).toBe(60);
    const from = '198.51.100.1';
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const warm = await makeLicense(t, key, project.id);
    expectSuccess(await runtime(warm.uuid, from));
    const licenses = t.app.get(LicensesService);
    const lookups = jest.spyOn(licenses, 'projectOfKey');
    for (let i = 0; i < 30; i++) expectError(await runtime(randomUUID(), from), 403);
    for (let i = 0; i < 20; i++) expectError(await management(madeUpApiKey(), from), 403);
    for (let i = 0; i < 10; i++) expectError(await runtime(`not-a-key-${i}`, from), 403);
    expect(lookups).toHaveBeenCalledTimes(40);
    const refused = await runtime(randomUUID(), from);
    expect(expectError(refused, 429).message).toMatch(TOO_MANY);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(expectError(await runtime(randomUUID(), from), 429).message).toMatch(TOO_MANY);
    expect(expectError(await management(madeUpApiKey(), from), 429).message).toMatch(TOO_MANY);
    expect(expectError(await runtime('x'.repeat(65), from), 429).message).toMatch(TOO_MANY);
    // Another address is not touched.
    expectError(await runtime(randomUUID(), '198.51.100.2'), 403);
    lookups.mockRestore();
  });

  it('never refuses a valid key for its address: warm or cold license, API key', async () => {
    const from = '198.51.100.3';
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const warm = await makeLicense(t, key, project.id);
    const cold = await makeLicense(t, key, project.id);
    expectSuccess(await runtime(warm.uuid, from));
    for (let i = 0; i < 61; i++) expectError(await runtime(randomUUID(), from), i < 60 ? 403 : 429);
    expectError(await runtime(randomUUID(), from), 429);
    expect(expectSuccess(await runtime(warm.uuid, from))).toMatchObject({ has_paid: true });
    expect(expectSuccess(await runtime(cold.uuid, from))).toMatchObject({ has_paid: true });
    expectSuccess(await management(key, from));
    // The refusals of a valid key are its own, not the address's 429.
    await t
      .http()
      .post(`/api/v1/project/${project.id}/licenses/${cold.id}/revoke`)
      .set('X-API-KEY', key)
      .expect(200);
    expect(expectError(await runtime(cold.uuid, from), 403).message).toBe('This license has been revoked.');
  });

  it('a key sent again does not count again: 100 calls with one deleted key lock nobody out', async () => {
    const from = '198.51.100.4';
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const gone = await makeLicense(t, key, project.id);
    const neighbour = await makeLicense(t, key, project.id);
    await t
      .http()
      .delete(`/api/v1/project/${project.id}/licenses/${gone.id}`)
      .set('X-API-KEY', key)
      .expect(200);
    const wrongApiKey = madeUpApiKey();
    for (let i = 0; i < 100; i++) {
      expectError(await runtime(gone.uuid, from), 403);
      expectError(await management(wrongApiKey, from), 403);
    }
    // 2 distinct keys counted, 58 left: a guesser still meets the limit.
    for (let i = 0; i < 58; i++) expectError(await runtime(randomUUID(), from), 403);
    expect(expectError(await runtime(randomUUID(), from), 429).message).toMatch(TOO_MANY);
    expectSuccess(await runtime(neighbour.uuid, from));
  });

  it('groups IPv6 addresses by /64: rotating the last 64 bits does not reset the count', async () => {
    for (let i = 0; i < 60; i++) {
      const from = `2001:db8:1:2:${((i * 7919) % 0xffff).toString(16)}:${i.toString(16)}::${(i + 1).toString(16)}`;
      expectError(await runtime(randomUUID(), from), 403);
    }
    expect(expectError(await runtime(randomUUID(), '2001:db8:1:2::ffff'), 429).message).toMatch(TOO_MANY);
    expect(expectError(await runtime(randomUUID(), '2001:0db8:0001:0002:abcd:0:0:1'), 429).message).toMatch(
      TOO_MANY,
    );
    // The next /64 is another subscriber.
    expectError(await runtime(randomUUID(), '2001:db8:1:3::1'), 403);
  });
});

describe('an unknown key seen again within a minute costs no database round trip', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('license keys and API keys; malformed API keys are never looked up', async () => {
    const licenses = t.app.get(LicensesService);
    const licenseLookups = jest.spyOn(licenses, 'projectOfKey');
    const unknown = randomUUID();
    for (let i = 0; i < 5; i++) expectError(await t.http().post(RUNTIME).set('X-LICENSE-KEY', unknown), 403);
    expect(licenseLookups).toHaveBeenCalledTimes(1);
    licenseLookups.mockRestore();

    const repository = t.app.get<{ keys: { findOneBy: () => unknown } }>(AuthService).keys;
    const keyLookups = jest.spyOn(repository, 'findOneBy');
    const unknownKey = `lg_${randomBytes(32).toString('base64url')}`;
    for (let i = 0; i < 5; i++)
      expect(
        expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', unknownKey), 403).message,
      ).toBe('Invalid API key.');
    for (const malformed of ['nope', 'lg_short', `lg_${'a'.repeat(44)}`, 'x'.repeat(5000)])
      expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', malformed), 403);
    expect(keyLookups).toHaveBeenCalledTimes(1);
    keyLookups.mockRestore();
  });

  it('the set of unknown API keys is bounded: random keys push out only each other', async () => {
    const auth = t.app.get(AuthService);
    const absent = (auth as unknown as { absent: { size: number; maxSize: number } }).absent;
    expect(absent.maxSize).toBe(10_000);
    for (let i = 0; i < 10_050; i++) await auth.authenticate(`lg_${randomBytes(32).toString('base64url')}`);
    expect(absent.size).toBe(10_000);
  }, 60_000);
});

describe('a locked project refuses a webhook delivery retry', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_DISPATCHER: 'false' });
  });
  afterAll(async () => t?.close());

  it('403 as every other write, and no audit row', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
    const api = (method: 'get' | 'post', path: string) =>
      t
        .http()
        [method](`/api/v1/project/${project.id}${path}`)
        .set('X-API-KEY', key)
        .set('Accept', 'application/json');
    const deliveries = expectSuccess(await api('get', '/webhook-deliveries')).data;
    expect(deliveries.length).toBeGreaterThan(0);
    const delivery = deliveries[0].id;
    expectSuccess(await api('post', `/webhook-deliveries/${delivery}/retry`));
    expectSuccess(await api('post', '/lock').send({ reason: 'overdue' }));
    const audited = expectSuccess(await api('get', '/audit-log')).data.length;
    expect(expectError(await api('post', `/webhook-deliveries/${delivery}/retry`), 403).message).toBe(
      'Project is locked.',
    );
    expect(expectSuccess(await api('get', '/audit-log')).data.length).toBe(audited);
    expectSuccess(await api('post', '/unlock'));
    expectSuccess(await api('post', `/webhook-deliveries/${delivery}/retry`));
  });
});

describe('two instances on one database without Redis: a change reaches the other within 5 s', () => {
  let one: TestApp;
  let two: TestApp;
  let key: string;

  beforeAll(async () => {
    one = await createTestApp();
    two = await createTestApp({}, { databaseUrl: one.config.env.DATABASE_URL });
    ({ key } = await makeAccount(one.app));
  });
  afterAll(async () => {
    await two?.close();
    await one?.close();
  });

  /** Instance two's cache clock, moved by the tests only. */
  let clock = Date.now();
  const advance = (ms: number) => {
    clock += ms;
    two.app.get(ProjectGenerations).now = () => clock;
  };
  const check = (app: TestApp, license: string, domain: string) =>
    app.http().post(RUNTIME).set('X-LICENSE-KEY', license).set('X-Service-Domain', domain);
  const api = (method: 'post' | 'patch' | 'delete', path: string, body?: object) =>
    one.http()[method](`/api/v1${path}`).set('X-API-KEY', key).set('Accept', 'application/json').send(body);

  const changes: [string, string | null][] = [
    ['a license revoked', 'This license has been revoked.'],
    ['a project locked', 'Project is locked.'],
    ['a project deleted', 'The project of this license no longer exists.'],
    ['a domain set unpaid', null],
  ];

  /** A paid license that instance two answers from memory, and the change made to it through instance one. */
  async function warmThenChange(change: string, refusal: string | null) {
    const project = await makeProject(one, key, { has_paid: true });
    const domain = await makeDomain(one, key, project.id, { has_paid: true });
    const license = await makeLicense(one, key, project.id);
    advance(60_000); // a fresh start, whatever the previous case left
    for (let i = 0; i < 20; i++) {
      expect(expectSuccess(await check(two, license.uuid, domain.domain)).has_paid).toBe(true);
      if (i === 10) advance(1000); // two reads the counters, and so knows this project's from here on
    }
    const reads = jest.spyOn(two.app.get(LicensesService), 'byKeyHash');
    if (change === 'a license revoked')
      await api('post', `/project/${project.id}/licenses/${license.id}/revoke`).expect(200);
    if (change === 'a project locked')
      await api('post', `/project/${project.id}/lock`, { reason: 'x' }).expect(200);
    if (change === 'a project deleted') await api('delete', `/project/${project.id}`).expect(200);
    if (change === 'a domain set unpaid')
      await api('patch', `/project/${project.id}/domains/${domain.id}`, { has_paid: false }).expect(200);
    // The writing instance knows at once.
    const own = await check(one, license.uuid, domain.domain);
    if (refusal) expect(expectError(own, 403).message).toBe(refusal);
    else expect(expectSuccess(own).has_paid).toBe(false);
    const seen = async () => {
      const res = await check(two, license.uuid, domain.domain);
      return refusal
        ? res.status === 403 && expectError(res, 403).message === refusal
        : res.body.data?.has_paid === false;
    };
    return { reads, seen };
  }

  it.each(changes)(
    '%s: the other sees it when it next reads the change counters, a second on',
    async (change, refusal) => {
      const { reads, seen } = await warmThenChange(change, refusal);
      // Within the second since its last read of the counters, the other answers from memory...
      advance(500);
      expect(await seen()).toBe(false);
      expect(reads).not.toHaveBeenCalled();
      // ...then its next call reads them (on the side: that call is answered as before), and the calls after it know.
      advance(500);
      await waitFor(seen, 2000, 'instance two to see the change');
      reads.mockRestore();
    },
  );

  it.each(changes)(
    '%s: while the counters cannot be read, nothing cached lives past 5 s',
    async (change, refusal) => {
      const { reads, seen } = await warmThenChange(change, refusal);
      // Only the read of the change counters fails: whatever else two asks of the database is answered.
      const query = two.dataSource.query.bind(two.dataSource);
      const counters = jest
        .spyOn(two.dataSource, 'query')
        .mockImplementation((sql: string, parameters?: Parameters<typeof query>[1]) =>
          sql.startsWith('SELECT id, change_seq')
            ? Promise.reject(new Error('database away'))
            : query(sql, parameters),
        );
      try {
        // The other answers from memory (no database read per call) until its entries are 5 s old...
        advance(4999);
        expect(await seen()).toBe(false);
        expect(await seen()).toBe(false);
        expect(reads).not.toHaveBeenCalled();
        // ...and not a moment longer.
        counters.mockRestore();
        advance(1);
        expect(await seen()).toBe(true);
      } finally {
        counters.mockRestore();
        reads.mockRestore();
      }
    },
  );
});

describe('an injectable secret has at least 12 characters, not only white space', () => {
  let t: TestApp;
  let key: string;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ key } = await makeAccount(t.app));
    base = `/api/v1/project/${(await makeProject(t, key)).id}/injectables`;
  });
  afterAll(async () => t?.close());

  const TOO_SHORT = 'The secret field must be at least 12 characters.';
  const json = (method: 'post' | 'put', path: string, body: object) =>
    t.http()[method](path).set('X-API-KEY', key).set('Accept', 'application/json').send(body);
  const form = (method: 'post' | 'put', path: string, fields: Record<string, string>) => {
    const req = t.http()[method](path).set('X-API-KEY', key).set('Accept', 'application/json');
    for (const [name, value] of Object.entries(fields)) void req.field(name, value);
    return req;
  };

  it('422 on secret for a shorter one, on create and update, JSON and multipart; 12 is enough', async () => {
    for (const secret of ['s', 's3cret', 'elevenchars', '☃☃☃☃☃☃☃☃☃☃☃']) {
      const slug = `s-${uniqueToken()}`;
      for (const res of [
        await json('post', base, { slug, content: 'x', secret }),
        await form('post', base, { slug, content: 'x', secret }),
      ])
        expect(expectError(res, 422, ['secret']).errors.secret).toEqual([TOO_SHORT]);
    }
    const created = expectSuccess(
      await json('post', base, { slug: `ok-${uniqueToken()}`, content: 'x', secret: 'twelve-chars' }),
      201,
    );
    const path = `${base}/${created.id}`;
    for (const res of [
      await json('put', path, { content: 'y', secret: 'short' }),
      await form('put', path, { content: 'y', secret: 'short' }),
    ])
      expect(expectError(res, 422, ['secret']).errors.secret).toEqual([TOO_SHORT]);
    expectSuccess(await form('put', path, { content: 'y', secret: '☃☃☃☃☃☃☃☃☃☃☃☃' }));
  });

  it('422 on secret for one of only white space, however long', async () => {
    const BLANK = 'The secret field must not be only white space.';
    const created = expectSuccess(
      await json('post', base, { slug: `ok-${uniqueToken()}`, content: 'x', secret: 'twelve-chars' }),
      201,
    );
    for (const secret of [' '.repeat(12), '\t\n'.repeat(20), '\u00a0'.repeat(16)]) {
      const slug = `s-${uniqueToken()}`;
      for (const res of [
        await json('post', base, { slug, content: 'x', secret }),
        await form('post', base, { slug, content: 'x', secret }),
        await json('put', `${base}/${created.id}`, { content: 'y', secret }),
      ])
        expect(expectError(res, 422, ['secret']).errors.secret).toEqual([BLANK]);
    }
  });
});

describe('a key in the wrong header: the refusal says which header it belongs in', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('a license key as X-API-KEY, an API key as X-LICENSE-KEY: 403 naming the header; only the other sent: 401 naming it', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id);
    const management = t.http().get(`/api/v1/project/${project.id}`).set('Accept', 'application/json');
    expect(expectError(await management.set('X-API-KEY', license.uuid), 403).message).toBe(
      'This is a license key, not an API key: license keys go in the X-LICENSE-KEY header of the runtime endpoints; X-API-KEY takes API keys (lg_…).',
    );
    const runtime = () => t.http().post(`${RUNTIME}?action=check_project`).set('Accept', 'application/json');
    expect(expectError(await runtime().set('X-LICENSE-KEY', key), 403).message).toBe(
      'This is an API key, not a license key: API keys go in the X-API-KEY header of the management endpoints; X-LICENSE-KEY takes license keys (a UUID).',
    );
    expect(expectError(await runtime().set('X-API-KEY', key), 401).message).toBe(
      'License key missing: send it in the X-LICENSE-KEY header; this endpoint does not take API keys (X-API-KEY).',
    );
    const onlyLicense = await t
      .http()
      .get(`/api/v1/project/${project.id}`)
      .set('Accept', 'application/json')
      .set('X-LICENSE-KEY', license.uuid);
    expect(expectError(onlyLicense, 401).message).toBe(
      'API key missing: send it in the X-API-KEY header; this endpoint does not take license keys (X-LICENSE-KEY).',
    );
    // Made-up keys of either shape keep the plain message.
    expect(expectError(await runtime().set('X-LICENSE-KEY', randomUUID()), 403).message).toBe(
      'Invalid license key.',
    );
    const unknownApiKey = `lg_${randomBytes(32).toString('base64url')}`;
    expect(
      expectError(await t.http().get('/api/v1/api-keys').set('X-API-KEY', unknownApiKey), 403).message,
    ).toBe('Invalid API key.');
  });
});

describe('/health tells anyone that a dependency is down, never its error text', () => {
  it('a database that fails: 503 with a generic sentence; the cause goes to the log only', async () => {
    const t = await createTestApp();
    try {
      const down = jest
        .spyOn(t.dataSource, 'query')
        .mockRejectedValue(new Error("connect ECONNREFUSED 10.1.2.3:3306 (user 'licensegate'@'db-primary')"));
      const res = await t.http().get('/api/v1/health');
      down.mockRestore();
      const body = expectError(res, 503);
      expect(body.data).toEqual({
        status: 'error',
        info: {},
        error: { database: { status: 'down', message: 'The database is not answering.' } },
        details: { database: { status: 'down', message: 'The database is not answering.' } },
      });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|10\.1\.2\.3|licensegate|db-primary/);
      expectSuccess(await t.http().get('/api/v1/health'));
    } finally {
      await t.close();
    }
  });
});

describe('odd inputs to the new rules: always a 4xx, never a 500', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t?.close());

  it('check_project with calling domains of every odd shape', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    await makeDomain(t, key, project.id, { has_paid: true });
    const plain = await makeLicense(t, key, project.id);
    const test = await makeLicense(t, key, project.id, {
      is_test_license: true,
      max_subdomains_per_domain: 0,
    });
    const call = (
      license: string,
      query: Record<string, unknown>,
      headers: Record<string, string>,
      body?: object,
    ) => {
      const req = t
        .http()
        .post(RUNTIME)
        .set('X-LICENSE-KEY', license)
        .query(query as Record<string, string>);
      for (const [name, value] of Object.entries(headers)) req.set(name, value);
      return body ? req.send(body) : req;
    };
    const cases: Array<[string, Record<string, unknown>, Record<string, string>, object?]> = [
      [plain.uuid, { action: 'check_project', include: 'token' }, { 'X-Service-Domain': '127.0.0.1' }],
      [plain.uuid, { action: 'check_project' }, { 'X-Service-Domain': 'a.com, b.com' }],
      [plain.uuid, { action: 'check_project' }, { 'X-Service-Domain': '*.example.com' }],
      [plain.uuid, { action: 'check_project', 'domain[]': 'x' }, {}],
      [plain.uuid, { action: 'check_project' }, { Origin: 'null' }],
      [plain.uuid, { action: 'check_project' }, { Referer: 'not a url' }],
      [plain.uuid, { action: 'check_project' }, {}, { domain: ['a.com'] }],
      [plain.uuid, { action: 'check_project' }, {}, { domain: { host: 'a.com' } }],
      [plain.uuid, { action: 'check_project' }, { 'X-Service-Domain': 'x'.repeat(5000) }],
      [test.uuid, { action: 'check_project', include: 'injectables' }, { 'X-Service-Domain': 'a.b.c.test' }],
      [test.uuid, {}, { 'X-Service-Domain': '[::1]' }],
      [test.uuid, {}, { 'X-Service-Domain': '::ffff:127.0.0.1' }],
      [test.uuid, {}, { 'X-Service-Domain': 'x.localhost' }],
    ];
    for (const [license, query, headers, body] of cases) {
      const res = await call(license, query, headers, body);
      expect({ query, headers, body, status: res.status < 500 }).toEqual({
        query,
        headers,
        body,
        status: true,
      });
    }
  });

  it('API key creation by an expiring key with odd expires_at values', async () => {
    const user = await makeUser(t.app);
    const short = await makeApiKey(t.app, user, { expires_at: new Date(Date.now() + 3_600_000) });
    for (const expires_at of ['', 'tomorrow', 0, 1e20, [], {}, '9999-12-31T23:59:59Z', true]) {
      const res = await t.http().post('/api/v1/api-keys').set('X-API-KEY', short).send({ expires_at });
      expect({ expires_at, status: res.status }).toEqual({ expires_at, status: 422 });
    }
  });

  it('secrets of odd types and API keys of odd shapes', async () => {
    const project = await makeProject(t, key);
    for (const secret of [123456789012345, ['twelve-chars!!'], { a: 1 }, true, null]) {
      const res = await t
        .http()
        .post(`/api/v1/project/${project.id}/injectables`)
        .set('X-API-KEY', key)
        .send({ slug: `s-${uniqueToken()}`, content: 'x', secret });
      expect({ secret, status: res.status }).toEqual({ secret, status: 422 });
    }
    for (const apiKey of ['lg_', ' lg_x ', '00000000-0000-0000-0000-000000000000', 'é'.repeat(100)]) {
      const res = await t.http().get('/api/v1/api-keys').set('X-API-KEY', encodeURIComponent(apiKey));
      expect({ apiKey, status: res.status }).toEqual({ apiKey, status: 403 });
    }
  });
});

/** Debian's nginx, when installed (apt-get install nginx-light): the shipped deploy/nginx.conf, run for real. */
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path));

(NGINX ? describe : describe.skip)('the shipped deploy/nginx.conf in front of the app, for real', () => {
  let t: TestApp;
  let nginx: ChildProcess;
  let front = '';
  const dir = mkdtempSync(join(tmpdir(), 'lg-nginx-'));

  beforeAll(async () => {
    // nginx calls the app from 127.0.0.1 here, as it calls it from 172.28.0.10 in docker-compose.yml.
    t = await createTestApp({ TRUST_PROXY: '127.0.0.1' });
    const port = await freePort();
    const site = readFileSync('deploy/nginx.conf', 'utf8')
      .replace(/server app\d:3000[^;]*;\n/g, '')
      .replace('keepalive 64;', `server ${new URL(t.url).host};\n  keepalive 64;`)
      .replace('listen 80;', `listen 127.0.0.1:${port};`);
    writeFileSync(join(dir, 'site.conf'), site);
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log; events {}
       http { access_log off; client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
              include ${dir}/site.conf; }`,
    );
    nginx = spawn(NGINX as string, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
    front = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${front}/api/v1/health/live`).catch(() => null))?.ok);
  });
  afterAll(async () => {
    if (nginx) await stop(nginx);
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a client-written X-Forwarded-For or CF-IPCountry reaches the app as nothing', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const call = async (license: string, headers: Record<string, string>) => {
      const res = await fetch(`${front}${RUNTIME}?action=check_project`, {
        method: 'POST',
        headers: { 'X-LICENSE-KEY': license, ...headers },
      });
      return { status: res.status, body: (await res.json()) as { message: string } };
    };
    const chosen = await makeLicense(t, key, project.id, { allowed_ips: '203.0.113.9' });
    expect(await call(chosen.uuid, { 'X-Forwarded-For': '203.0.113.9' })).toMatchObject({
      status: 403,
      body: { message: 'Your IP address is not allowed to use this license.' },
    });
    const real = await makeLicense(t, key, project.id, { allowed_ips: '127.0.0.1' });
    expect((await call(real.uuid, { 'X-Forwarded-For': '203.0.113.9' })).status).toBe(200);
    const country = await makeLicense(t, key, project.id, { allowed_countries: 'FR' });
    expect(await call(country.uuid, { 'CF-IPCountry': 'FR' })).toMatchObject({
      status: 403,
      body: { message: 'Requests from your country are not allowed for this license.' },
    });
  });
});

describe('the stream answers paid as has-paid does: a grace that has passed is unpaid before the scheduler writes it', () => {
  it.each([
    ['the runtime fast path', true],
    ['the Express route', false],
  ])('paid-only injectables stop, and the stream is counted unpaid (%s)', async (_name, runtimeFastPath) => {
    const clock = new ManualClock(Date.now());
    const t = await createTestApp({}, { runtimeFastPath, clock });
    try {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { has_paid: true });
      for (const [slug, onlyIfPaid] of [
        ['paid-only', true],
        ['for-all', false],
      ] as const)
        expectSuccess(
          await t.http().post(`/api/v1/project/${project.id}/injectables`).set('X-API-KEY', key).send({
            slug,
            type: 'snippet',
            mode: 'inject',
            content: slug,
            secret: 'a-secret-of-enough-length',
            only_if_paid: onlyIfPaid,
          }),
          201,
        );
      const license = await makeLicense(t, key, project.id);
      // A payment connector's grace on the project, as an unpaid event leaves it.
      await t.dataSource.query('UPDATE projects SET grace_until = ? WHERE id = ?', [
        sqlDatetime(clock.nowMs() + 3_600_000),
        project.id,
      ]);
      await t.app.get(ProjectGenerations).bump(project.id);
      const stream = async () =>
        (
          expectSuccess(await t.http().get('/api/v1/injectable/stream').set('X-LICENSE-KEY', license.uuid))
            .injectables as Array<{ slug: string }>
        ).map((i) => i.slug);
      const hasPaid = async () =>
        expectSuccess(
          await t.http().post(RUNTIME).query({ action: 'check_project' }).set('X-LICENSE-KEY', license.uuid),
        ).has_paid;
      expect(await stream()).toEqual(['paid-only', 'for-all']);
      expect(await hasPaid()).toBe(true);
      clock.advance(3_600_000);
      expect(await stream()).toEqual(['for-all']);
      expect(await hasPaid()).toBe(false);
      await t.app.get(AnalyticsCounts).flush();
      const totals = expectSuccess(
        await t.http().get(`/api/v1/project/${project.id}/analytics`).set('X-API-KEY', key),
      ).totals;
      expect(totals).toEqual({ paid: 2, unpaid: 2, refused: 0 });
    } finally {
      await t.close();
    }
  });
});
