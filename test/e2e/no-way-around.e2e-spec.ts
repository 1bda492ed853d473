import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/*
 * SPEC 17, "No way around the gate" (docs/security.md): every restriction of a license holds on every
 * runtime route and option. Run at the defaults `npm start` uses, through the runtime fast path and
 * through Express's router (the two run the same code).
 */

const RUNTIME = '/api/v1/project/has-paid';
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

  it('a license pinned to an unpaid domain gets no payloads from a project-level check elsewhere', async () => {
    const { project } = await paidProject();
    const unpaid = await makeDomain(t, key, project.id, { has_paid: false });
    const license = await makeLicense(t, key, project.id, { domain_id: unpaid.id });
    const res = await check(license.uuid, projectLevel, { 'X-Service-Domain': 'evil.attacker.net' });
    expect(expectError(res, 403).message).toBe('This license is pinned to another domain.');
    // Without a calling domain: the project's answer, but no payloads.
    expect(expectError(await check(license.uuid, projectLevel), 403).message).toBe(PAYLOADS_NEED_DOMAIN);
    expect(expectSuccess(await check(license.uuid, { action: 'check_project' }))).toEqual({
      has_paid: true,
      is_test_license: false,
    });
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
