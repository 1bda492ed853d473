import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { UsageFlush } from '../../src/gate/usage-flush.js';
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
import { createTestApp, TestApp } from '../utils/test-app.js';
import { apiAs, postAsIs } from '../utils/api.js';

const REDIRECT = 'https://example.com/pay-here';
const RUNTIME = '/api/v1/project/has-paid';
const NOT_REGISTERED = 'Domain is not registered under this project.';
const INVALID_KEY = 'Invalid license key.';

/** A host under example.com that no other test uses. */
const host = (prefix = 'shop') => `${prefix}-${uniqueToken()}.example.com`;

/** `data` of a successful runtime check — exactly these keys. */
function expectAnswer(
  res: Response,
  expected: {
    has_paid: boolean;
    is_test_license?: boolean;
    redirect_url?: string | null;
    injectables?: boolean;
  },
) {
  const data = expectSuccess(res);
  const keys = ['has_paid', 'is_test_license'];
  if (!expected.has_paid) keys.push('redirect_url');
  if (expected.injectables) keys.push('injectables');
  expect(Object.keys(data).sort()).toEqual(keys.sort());
  expect(data.has_paid).toBe(expected.has_paid);
  expect(data.is_test_license).toBe(expected.is_test_license ?? false);
  if (!expected.has_paid)
    expect(data.redirect_url).toBe(expected.redirect_url === undefined ? REDIRECT : expected.redirect_url);
  if (expected.injectables) expect(data.injectables).toEqual([]);
  return data;
}

/**
 * A runtime refusal: the error envelope with the message and `data.redirect_url`, the
 * project's default_redirect_url (null when no project is known).
 */
function expectRefusal(
  res: Response,
  status: number,
  message: string | RegExp,
  redirect: string | null = REDIRECT,
) {
  const body = expectError(res, status);
  if (typeof message === 'string') expect(body.message).toBe(message);
  else expect(body.message).toMatch(message);
  expect(body.data).not.toBeNull();
  expect(body.data).toHaveProperty('redirect_url');
  expect(body.data.redirect_url).toBe(redirect);
  return body;
}

/** The 403 for a domain not registered under the project. */
const expectUnregistered = (res: Response, redirect: string | null = REDIRECT) =>
  expectRefusal(res, 403, NOT_REGISTERED, redirect);

function expect429(res: Response) {
  expectError(res, 429);
  const retry = res.headers['retry-after'];
  expect(retry).toMatch(/^\d+$/);
  expect(Number(retry)).toBeGreaterThan(0);
  expect(Number(retry)).toBeLessThanOrEqual(86_400);
}

const tally = (responses: Response[]) => {
  const out: Record<number, number> = {};
  for (const r of responses) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

describe('runtime payment checks', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      COUNTRY_HEADER: 'CF-IPCountry',
    });
  });
  afterAll(async () => t.close());

  const api = (key?: string) => apiAs(t, key);

  /** POST /project/has-paid with the license in X-LICENSE-KEY (when given) and X-Service-Domain (when given). */
  const check = (license?: string, domain?: string) => {
    const req = t.http().post(RUNTIME).set('Accept', 'application/json');
    if (license !== undefined) req.set('X-LICENSE-KEY', license);
    if (domain !== undefined) req.set('X-Service-Domain', domain);
    return req;
  };

  /** has-paid with X-Service-Domain sent once per value, as separate header lines (supertest would join them first). */
  const rawCheck = (license: string, domains: string[]) =>
    postAsIs(t, RUNTIME, { 'X-LICENSE-KEY': license, 'X-Service-Domain': domains });

  /**
   * An owner with a global key, a project (default_redirect_url set, has_paid false unless
   * overridden), one active registered domain with has_paid true and a license on the project.
   */
  async function setup(
    options: {
      project?: Record<string, unknown>;
      domain?: Record<string, unknown>;
      license?: Record<string, unknown>;
    } = {},
  ) {
    const { user, key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { default_redirect_url: REDIRECT, ...options.project });
    const domain = await makeDomain(t, key, project.id, {
      domain: host(),
      has_paid: true,
      ...options.domain,
    });
    const license = await makeLicense(t, key, project.id, options.license ?? {});
    return { user, key, project, domain, license, uuid: license.uuid as string };
  }

  const usage = async (key: string, projectId: number, licenseId: number) =>
    expectSuccess(await api(key).get(`/project/${projectId}/licenses/${licenseId}/usage`));

  describe('license key', () => {
    it('401 without a license key, also when only an API key is sent', async () => {
      const { key, domain } = await setup();
      expectError(await check(undefined, domain.domain), 401);
      expectError(await check(undefined, domain.domain).set('X-API-KEY', key), 401);
      expectError(await check('', domain.domain), 401);
    });

    it('takes the key from X-LICENSE-KEY, the `license` query parameter or the `license` body field', async () => {
      const { uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectAnswer(await check(undefined, domain.domain).query({ license: uuid }), { has_paid: true });
      expectAnswer(await check(undefined, domain.domain).send({ license: uuid }), { has_paid: true });
    });

    it('403 "Invalid license key." with redirect_url null for an unknown key, from any source', async () => {
      const { domain } = await setup();
      const unknown = '00000000-0000-4000-8000-000000000000';
      expectRefusal(await check(unknown, domain.domain), 403, INVALID_KEY, null);
      expectRefusal(
        await check(undefined, domain.domain).query({ license: unknown }),
        403,
        INVALID_KEY,
        null,
      );
      expectRefusal(await check(undefined, domain.domain).send({ license: unknown }), 403, INVALID_KEY, null);
      expectRefusal(await check('x'.repeat(500), domain.domain), 403, INVALID_KEY, null);
    });

    it('an API key is not a license key (403, saying which header it belongs in)', async () => {
      const { key, domain } = await setup();
      expectRefusal(await check(key, domain.domain), 403, /^This is an API key, not a license key: /, null);
    });
  });

  describe('license refusals, each visible at the very next call', () => {
    it('revoked → 403; reactivated → works again', async () => {
      const { key, project, license, uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(await api(key).post(`/project/${project.id}/licenses/${license.id}/revoke`));
      expectRefusal(await check(uuid, domain.domain), 403, /revoked/i);
      expectRefusal(await check(uuid).query({ action: 'check_project' }), 403, /revoked/i);
      expectSuccess(await api(key).post(`/project/${project.id}/licenses/${license.id}/reactivate`));
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
    });

    it('expired (expires_at set in the past in the database, then any write to the project) → 403', async () => {
      const { key, project, license, uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      await t.dataSource
        .getRepository(LicenseEntity)
        .update(license.id, { expires_at: new Date(Date.now() - 1000) });
      expectSuccess(await api(key).patch(`/project/${project.id}`, {}));
      expectRefusal(await check(uuid, domain.domain), 403, /expired/i);
      expectRefusal(await check(uuid).query({ action: 'check_project' }), 403, /expired/i);
    });

    it('expired by the clock (expires_at 2 s ahead) → 403 without any write', async () => {
      const expiresAt = new Date(Date.now() + 2000).toISOString();
      const { uuid, domain } = await setup({ license: { expires_at: expiresAt } });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, new Date(expiresAt).getTime() - Date.now()) + 300),
      );
      expectRefusal(await check(uuid, domain.domain), 403, /expired/i);
    });

    it('project deleted → 403', async () => {
      const { key, project, uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(await api(key).delete(`/project/${project.id}`));
      const body = expectError(await check(uuid, domain.domain), 403);
      expect(body.message).toMatch(/no longer exists|deleted/i);
      // The deleted project still lends its redirect URL, so the SDK can send the user somewhere.
      expect(body.data).toEqual({ redirect_url: REDIRECT });
      expectError(await check(uuid).query({ action: 'check_project' }), 403);
    });

    it('project inactive → 403; active again → works', async () => {
      const { key, project, uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(await api(key).patch(`/project/${project.id}`, { is_active: false }));
      expectRefusal(await check(uuid, domain.domain), 403, /inactive/i);
      expectRefusal(await check(uuid).query({ action: 'check_project' }), 403, /inactive/i);
      expectSuccess(await api(key).patch(`/project/${project.id}`, { is_active: true }));
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
    });

    it('project locked → 403 "Project is locked"; unlocked → works', async () => {
      const { key, project, uuid, domain } = await setup();
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(await api(key).post(`/project/${project.id}/lock`, { reason: 'unpaid invoice' }));
      expectRefusal(await check(uuid, domain.domain), 403, /^Project is locked\.?$/);
      expectRefusal(await check(uuid).query({ action: 'check_project' }), 403, /^Project is locked\.?$/);
      expectSuccess(await api(key).post(`/project/${project.id}/unlock`));
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
    });

    it('a refusal carries the current default_redirect_url (null when the project has none)', async () => {
      const { key, project, uuid, domain } = await setup();
      expectUnregistered(await check(uuid, host('nope')));
      expectSuccess(await api(key).patch(`/project/${project.id}`, { default_redirect_url: null }));
      expectUnregistered(await check(uuid, host('nope')), null);
      expectAnswer(await check(uuid, domain.domain).query({ action: 'check_project' }), {
        has_paid: false,
        redirect_url: null,
      });
    });
  });

  describe('answer shape', () => {
    it('has_paid false → redirect_url; has_paid true → no redirect_url', async () => {
      const { key, project, uuid, domain } = await setup({ domain: { has_paid: false } });
      expectAnswer(await check(uuid, domain.domain), { has_paid: false });
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: false });
      expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: true }));
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: true });
    });

    it('include=injectables adds injectables only when has_paid is true', async () => {
      const { uuid, domain, key, project } = await setup({ project: { has_paid: true } });
      expectAnswer(await check(uuid, domain.domain).query({ include: 'injectables' }), {
        has_paid: true,
        injectables: true,
      });
      expectAnswer(
        await check(uuid, domain.domain).query({ action: 'check_project', include: 'injectables' }),
        {
          has_paid: true,
          injectables: true,
        },
      );
      const unpaid = await makeDomain(t, key, project.id, { domain: host('unpaid'), has_paid: false });
      expectAnswer(await check(uuid, unpaid.domain).query({ include: 'injectables' }), { has_paid: false });
    });

    it('422 errors.action for an unknown action, errors.include for an unknown include', async () => {
      const { uuid, domain } = await setup();
      expectError(await check(uuid, domain.domain).query({ action: 'check_domain' }), 422, ['action']);
      expectError(await check(uuid, domain.domain).query({ include: 'foo' }), 422, ['include']);
    });
  });

  describe('domain evaluation order', () => {
    it('action=check_project answers the project’s has_paid and needs no domain', async () => {
      const { key, project, uuid, domain } = await setup({ domain: { has_paid: true } });
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: false });
      // A registered calling domain's own has_paid does not answer; an unregistered one is refused (docs/decisions.md#runtime-checks).
      expectRefusal(
        await check(uuid, host('nope')).query({ action: 'check_project' }),
        403,
        /not registered/,
      );
      expectAnswer(await check(uuid, domain.domain).query({ action: 'check_project' }), { has_paid: false });
      expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: true }));
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: true });
    });

    describe('pinned license (domain_id)', () => {
      async function pinnedSetup() {
        const s = await setup({ domain: { has_paid: false }, project: { has_paid: true } });
        const other = await makeDomain(t, s.key, s.project.id, { domain: host('other'), has_paid: true });
        const pinned = await makeLicense(t, s.key, s.project.id, { domain_id: s.domain.id });
        return { ...s, other, pinned: pinned.uuid as string, pinnedId: pinned.id as number };
      }

      it('answers the pinned domain’s has_paid, with no calling domain, the domain itself or a subdomain', async () => {
        const { pinned, domain } = await pinnedSetup();
        expectAnswer(await check(pinned), { has_paid: false });
        expectAnswer(await check(pinned, domain.domain), { has_paid: false });
        expectAnswer(await check(pinned, `www.${domain.domain}`), { has_paid: false });
        expectAnswer(await check(pinned, `a.b.${domain.domain}`), { has_paid: false });
      });

      it('403 for a calling domain that is neither the pinned domain nor its subdomain (registered or not)', async () => {
        const { pinned, other, domain } = await pinnedSetup();
        expectRefusal(await check(pinned, other.domain), 403, /./);
        expectRefusal(await check(pinned, host('nope')), 403, /./);
        expectRefusal(await check(pinned, `x${domain.domain}`), 403, /./);
        expectRefusal(await check(pinned, 'example.com'), 403, /./);
      });

      it('follows the pinned domain’s has_paid at the very next call; action=check_project is refused (403)', async () => {
        const { key, project, pinned, domain } = await pinnedSetup();
        expectAnswer(await check(pinned), { has_paid: false });
        expectSuccess(
          await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { has_paid: true }),
        );
        expectAnswer(await check(pinned), { has_paid: true });
        expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: false }));
        // The project's flag is not a pinned license's answer: it may only ask about its domain.
        expect(expectError(await check(pinned).query({ action: 'check_project' }), 403).message).toBe(
          'This license is pinned to a domain: send the calling domain.',
        );
        expectAnswer(await check(pinned), { has_paid: true });
      });
    });

    it('registered domain → its has_paid; flipping has_paid via PATCH shows at the very next call', async () => {
      const { key, project, uuid, domain } = await setup({
        domain: { has_paid: false },
        project: { has_paid: true },
      });
      expectAnswer(await check(uuid, domain.domain), { has_paid: false });
      expectSuccess(await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { has_paid: true }));
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { has_paid: false }));
      expectAnswer(await check(uuid, domain.domain), { has_paid: false });
    });

    it('normalises the calling domain and accepts subdomains of registered domains', async () => {
      const name = host('shop');
      const { uuid } = await setup({ domain: { domain: name } });
      const [label, ...rest] = name.split('.');
      const mixed = `WWW.${label.toUpperCase()}.${rest.map((p) => p[0].toUpperCase() + p.slice(1)).join('.')}.`;
      expectAnswer(await check(uuid, mixed), { has_paid: true });
      expectAnswer(await check(uuid, `${name.toUpperCase()}.`), { has_paid: true });
      expectAnswer(await check(uuid, `www.${name}`), { has_paid: true });
      expectAnswer(await check(uuid, `a.b.c.${name}`), { has_paid: true });
      expectAnswer(await check(uuid, `  ${name}  `), { has_paid: true });
      // Look-alikes and parents are not subdomains.
      expectUnregistered(await check(uuid, `evil${name}`));
      expectUnregistered(await check(uuid, `${name}.evil.com`));
      expectUnregistered(await check(uuid, 'example.com'));
    });

    it('takes the calling domain from X-Service-Domain, else `domain` query/body, else Origin, else Referer', async () => {
      const { uuid, domain } = await setup();
      const good = domain.domain as string;
      const bad = host('nope');

      expectAnswer(await check(uuid).query({ domain: good }), { has_paid: true });
      expectAnswer(await check(uuid).send({ domain: good }), { has_paid: true });
      expectAnswer(await check(uuid).set('Origin', `https://${good}`), { has_paid: true });
      expectAnswer(await check(uuid).set('Origin', `https://www.${good}:8443`), { has_paid: true });
      expectAnswer(await check(uuid).set('Referer', `https://${good}/checkout?x=1`), { has_paid: true });

      // Precedence: the first present source decides, even when a later one would pass.
      expectUnregistered(
        await check(uuid, bad)
          .query({ domain: good })
          .set('Origin', `https://${good}`)
          .set('Referer', `https://${good}/`),
      );
      expectAnswer(await check(uuid, good).query({ domain: bad }).set('Origin', `https://${bad}`), {
        has_paid: true,
      });
      expectUnregistered(await check(uuid).query({ domain: bad }).set('Origin', `https://${good}`));
      expectAnswer(await check(uuid).query({ domain: good }).set('Origin', `https://${bad}`), {
        has_paid: true,
      });
      expectUnregistered(await check(uuid).send({ domain: bad }).set('Origin', `https://${good}`));
      expectUnregistered(
        await check(uuid).set('Origin', `https://${bad}`).set('Referer', `https://${good}/`),
      );
      expectAnswer(await check(uuid).set('Origin', `https://${good}`).set('Referer', `https://${bad}/`), {
        has_paid: true,
      });
    });

    it('400 when no domain can be determined, saying whether what was sent names no host; 403 for an unregistered domain', async () => {
      const { uuid, domain: registered } = await setup();
      const domain = registered.domain as string;
      const refused = (res: Response, message: string) => {
        expect(expectError(res, 400).message).toBe(message);
        expect(res.body.data).toEqual({ redirect_url: REDIRECT });
      };
      refused(
        await check(uuid),
        'The calling domain could not be determined: send it in the X-Service-Domain header.',
      );
      expectUnregistered(await check(uuid, host('nope')));
      const header =
        'The X-Service-Domain header does not name a host: send it once, with one host name such as shop.example.com.';
      for (const sent of [
        'not a domain!',
        `${domain}, ${domain}`,
        `${'a'.repeat(60)}.`.repeat(150) + 'com',
        '203.0.113.7',
      ])
        refused(await check(uuid, sent), header);
      // The header sent twice reaches the service as one list (Node joins them): refused, not read as the first.
      refused(await rawCheck(uuid, [domain, `other-${domain}`]), header);
      const parameter =
        'The domain parameter does not name a host: send one host name such as shop.example.com.';
      refused(await check(uuid).query({ domain: 'not a domain!' }), parameter);
      refused(await check(uuid).send({ domain: '203.0.113.7' }), parameter);
      for (const notText of [['a.example.com'], { host: 'a.example.com' }, 42])
        refused(await check(uuid).send({ domain: notText }), parameter);
    });

    it('an inactive domain is not registered (created inactive, or deactivated — visible at the next call)', async () => {
      const { key, project, uuid, domain } = await setup();
      const inactive = await makeDomain(t, key, project.id, {
        domain: host('inactive'),
        has_paid: true,
        is_active: false,
      });
      expectUnregistered(await check(uuid, inactive.domain));
      expectUnregistered(await check(uuid, `www.${inactive.domain}`));

      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectSuccess(
        await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { is_active: false }),
      );
      expectUnregistered(await check(uuid, domain.domain));
      expectSuccess(await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { is_active: true }));
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
    });

    it('a domain of another project is not registered under this one', async () => {
      const { uuid } = await setup();
      const other = await setup();
      expectUnregistered(await check(uuid, other.domain.domain));
    });

    it('a newly added domain works at the very next call; a deleted one is refused', async () => {
      const { key, project, uuid } = await setup();
      const name = host('late');
      expectUnregistered(await check(uuid, name));
      const added = await makeDomain(t, key, project.id, { domain: name, has_paid: true });
      expectAnswer(await check(uuid, name), { has_paid: true });
      expectSuccess(await api(key).delete(`/project/${project.id}/domains/${added.id}`));
      expectUnregistered(await check(uuid, name));
    });
  });

  describe('test licenses', () => {
    const LOCAL: Array<[string, (req: ReturnType<typeof check>) => ReturnType<typeof check>]> = [
      ['X-Service-Domain localhost', (r) => r.set('X-Service-Domain', 'localhost')],
      ['X-Service-Domain 127.0.0.1', (r) => r.set('X-Service-Domain', '127.0.0.1')],
      ['X-Service-Domain ::1', (r) => r.set('X-Service-Domain', '::1')],
      ['X-Service-Domain app.localhost', (r) => r.set('X-Service-Domain', 'app.localhost')],
      ['X-Service-Domain shop.test', (r) => r.set('X-Service-Domain', 'shop.test')],
      ['X-Service-Domain LOCALHOST.', (r) => r.set('X-Service-Domain', 'LOCALHOST.')],
      ['Origin http://localhost:3000', (r) => r.set('Origin', 'http://localhost:3000')],
      ['Origin http://127.0.0.1:8080', (r) => r.set('Origin', 'http://127.0.0.1:8080')],
      ['domain query shop.test', (r) => r.query({ domain: 'shop.test' })],
    ];

    it.each(LOCAL)('a test license is accepted from %s with the project’s has_paid', async (_label, from) => {
      const { key, project, uuid } = await setup({
        license: { is_test_license: true },
        domain: { has_paid: true },
      });
      expectAnswer(await from(check(uuid)), { has_paid: false, is_test_license: true });
      expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: true }));
      expectAnswer(await from(check(uuid)), { has_paid: true, is_test_license: true });
    });

    it.each(LOCAL)(
      'a normal license from %s is refused (403, or 400 for an address)',
      async (_label, from) => {
        const { uuid } = await setup({ project: { has_paid: true } });
        const res = await from(check(uuid));
        expect([400, 403]).toContain(res.status);
        expectError(res, res.status);
      },
    );

    it('a test license from a registered domain answers that domain; from an unregistered one → 403', async () => {
      const { uuid, domain } = await setup({
        license: { is_test_license: true },
        domain: { has_paid: true },
      });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true, is_test_license: true });
      expectUnregistered(await check(uuid, host('nope')));
      // "localhost" inside a real name is not local.
      expectUnregistered(await check(uuid, 'localhost.example.com'));
      expectUnregistered(await check(uuid, 'shop.test.example.com'));
    });
  });

  describe('allowed_ips (the client here is 127.0.0.1)', () => {
    it.each([
      ['127.0.0.1', true],
      ['127.0.0.0/8', true],
      ['::1/128, 127.0.0.1', true],
      ['::ffff:127.0.0.1', true],
      ['10.0.0.0/8', false],
      ['203.0.113.7, 10.0.0.0/8, 2001:db8::/32', false],
      ['127.0.0.2', false],
    ])('allowed_ips %s → %s', async (list, allowed) => {
      const { uuid, domain } = await setup({ license: { allowed_ips: list } });
      const res = await check(uuid, domain.domain);
      if (allowed) expectAnswer(res, { has_paid: true });
      else expectRefusal(res, 403, /IP/i);
      // The address rule applies before everything else, also to check_project.
      const project = await check(uuid).query({ action: 'check_project' });
      if (allowed) expectAnswer(project, { has_paid: false });
      else expectRefusal(project, 403, /IP/i);
    });

    it('X-Forwarded-For is ignored without TRUST_PROXY', async () => {
      const { uuid, domain } = await setup({ license: { allowed_ips: '203.0.113.0/24' } });
      expectRefusal(await check(uuid, domain.domain).set('X-Forwarded-For', '203.0.113.9'), 403, /IP/i);
      const local = await setup({ license: { allowed_ips: '127.0.0.1' } });
      expectAnswer(await check(local.uuid, local.domain.domain).set('X-Forwarded-For', '198.51.100.1'), {
        has_paid: true,
      });
    });

    it('an IP-refused call does not count toward usage', async () => {
      const { key, project, license, uuid, domain } = await setup({
        license: { allowed_ips: '10.0.0.0/8', max_usage_per_day: 5 },
      });
      expectRefusal(await check(uuid, domain.domain), 403, /IP/i);
      expect((await usage(key, project.id, license.id)).today.count).toBe(0);
    });
  });

  describe('allowed_countries (COUNTRY_HEADER=CF-IPCountry)', () => {
    it('DE,FR: de → ok, FR → ok, US → 403, missing → 403, XX → 403', async () => {
      const { uuid, domain } = await setup({ license: { allowed_countries: 'DE,FR' } });
      expectAnswer(await check(uuid, domain.domain).set('CF-IPCountry', 'de'), { has_paid: true });
      expectAnswer(await check(uuid, domain.domain).set('CF-IPCountry', 'FR'), { has_paid: true });
      expectRefusal(await check(uuid, domain.domain).set('CF-IPCountry', 'US'), 403, /countr/i);
      expectRefusal(await check(uuid, domain.domain), 403, /countr/i);
      expectRefusal(await check(uuid, domain.domain).set('CF-IPCountry', 'XX'), 403, /countr/i);
      // Another header is not the country header.
      expectRefusal(await check(uuid, domain.domain).set('X-Country', 'DE'), 403, /countr/i);
      expectRefusal(
        await check(uuid).query({ action: 'check_project' }).set('CF-IPCountry', 'US'),
        403,
        /countr/i,
      );
    });
  });

  describe('max_domains and max_subdomains_per_domain', () => {
    it('max_domains 2: two registered domains ok, a third → 403; subdomains of activated domains do not count', async () => {
      const { key, project, license, uuid, domain: a } = await setup({ license: { max_domains: 2 } });
      const b = await makeDomain(t, key, project.id, { domain: host('b'), has_paid: false });
      const c = await makeDomain(t, key, project.id, { domain: host('c'), has_paid: true });

      expectAnswer(await check(uuid, a.domain), { has_paid: true });
      expectAnswer(await check(uuid, b.domain), { has_paid: false });
      expectRefusal(await check(uuid, c.domain), 403, /limit|domains/i);
      expectRefusal(await check(uuid, `www.${c.domain}`), 403, /limit|domains/i);
      // Subdomains of an activated domain are not new domains.
      expectAnswer(await check(uuid, `www.${a.domain}`), { has_paid: true });
      expectAnswer(await check(uuid, `api.${b.domain}`), { has_paid: false });
      // The activated ones keep working.
      expectAnswer(await check(uuid, a.domain), { has_paid: true });
      expectAnswer(await check(uuid, b.domain), { has_paid: false });
      expectRefusal(await check(uuid, c.domain), 403, /limit|domains/i);
      // check_project does not need a domain slot, but a domain sent with it is held to the limit (docs/decisions.md#runtime-checks).
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: false });
      expectRefusal(await check(uuid, c.domain).query({ action: 'check_project' }), 403, /limit|domains/i);

      const report = await usage(key, project.id, license.id);
      expect(report.domains.map((d: { domain: string }) => d.domain).sort()).toEqual(
        [a.domain, b.domain].sort(),
      );
    });

    it('max_domains 0 refuses every domain, but not check_project', async () => {
      const { uuid, domain } = await setup({ license: { max_domains: 0 } });
      expectRefusal(await check(uuid, domain.domain), 403, /limit|domains/i);
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: false });
    });

    it('max_subdomains_per_domain 1: the domain itself + one subdomain ok, a second subdomain → 403', async () => {
      const { key, project, license, uuid, domain } = await setup({
        license: { max_subdomains_per_domain: 1 },
      });
      const other = await makeDomain(t, key, project.id, { domain: host('other'), has_paid: true });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectAnswer(await check(uuid, `www.${domain.domain}`), { has_paid: true });
      expectRefusal(await check(uuid, `api.${domain.domain}`), 403, /limit|subdomain/i);
      // Already activated ones keep working; the same subdomain again is not a new one.
      expectAnswer(await check(uuid, `www.${domain.domain}`), { has_paid: true });
      expectAnswer(await check(uuid, `WWW.${domain.domain.toUpperCase()}.`), { has_paid: true });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectRefusal(await check(uuid, `api.${domain.domain}`), 403, /limit|subdomain/i);
      // The limit is per domain: another domain has its own subdomain slot.
      expectAnswer(await check(uuid, `shop.${other.domain}`), { has_paid: true });
      expectRefusal(await check(uuid, `blog.${other.domain}`), 403, /limit|subdomain/i);

      const report = await usage(key, project.id, license.id);
      const byName = new Map(
        report.domains.map((d: { domain: string; subdomains: string[] }) => [d.domain, d.subdomains]),
      );
      expect(byName.get(domain.domain)).toEqual([`www.${domain.domain}`]);
      expect(byName.get(other.domain)).toEqual([`shop.${other.domain}`]);
    });

    it('max_subdomains_per_domain 0: only the domain itself', async () => {
      const { uuid, domain } = await setup({ license: { max_subdomains_per_domain: 0 } });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectRefusal(await check(uuid, `www.${domain.domain}`), 403, /limit|subdomain/i);
    });
  });

  describe('max_usage_per_day', () => {
    it('3 successes then 429 with Retry-After; usage shows today.count 3; refused calls do not count', async () => {
      const { key, project, license, uuid, domain } = await setup({ license: { max_usage_per_day: 3 } });
      // Refusals before the limit: none of them counts.
      expectUnregistered(await check(uuid, host('nope')));
      expectError(await check(uuid), 400);
      expectError(await check(uuid, domain.domain).query({ include: 'foo' }), 422, ['include']);
      expect((await usage(key, project.id, license.id)).today.count).toBe(0);

      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expectAnswer(await check(uuid).query({ action: 'check_project' }), { has_paid: false });
      expectAnswer(await check(uuid, `www.${domain.domain}`), { has_paid: true });
      expect429(await check(uuid, domain.domain));
      expect429(await check(uuid).query({ action: 'check_project' }));
      // Refused calls past the limit are still refused for what they are.
      expectUnregistered(await check(uuid, host('nope')));

      const report = await usage(key, project.id, license.id);
      expect(report.today.count).toBe(3);
      expect(report.today.date).toBe(new Date().toISOString().slice(0, 10));
      expect(report.last_30_days[report.last_30_days.length - 1]).toEqual(report.today);
    });

    it('max_usage_per_day 0 → 429 at the first call', async () => {
      const { uuid, domain } = await setup({ license: { max_usage_per_day: 0 } });
      expect429(await check(uuid, domain.domain));
    });

    it('the limit is per license', async () => {
      const { key, project, uuid, domain } = await setup({ license: { max_usage_per_day: 1 } });
      const other = await makeLicense(t, key, project.id, { max_usage_per_day: 1 });
      expectAnswer(await check(uuid, domain.domain), { has_paid: true });
      expect429(await check(uuid, domain.domain));
      expectAnswer(await check(other.uuid, domain.domain), { has_paid: true });
    });
  });

  describe('allow_configs', () => {
    it('a license with allow_configs takes action, include and domain from body.config', async () => {
      const { uuid, domain, key, project } = await setup({ license: { allow_configs: true } });
      expectAnswer(await check(uuid).send({ config: { action: 'check_project' } }), { has_paid: false });
      expectAnswer(await check(uuid).send({ config: { domain: domain.domain } }), { has_paid: true });
      expectAnswer(await check(uuid).send({ config: { domain: domain.domain, include: 'injectables' } }), {
        has_paid: true,
        injectables: true,
      });
      expectError(await check(uuid).send({ config: { action: 'nope' } }), 422, ['action']);
      expectError(await check(uuid, domain.domain).send({ config: { include: 'foo' } }), 422, ['include']);
      expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: true }));
      expectAnswer(await check(uuid).send({ config: { action: 'check_project', include: 'injectables' } }), {
        has_paid: true,
        injectables: true,
      });
    });

    it('a license without allow_configs has config ignored', async () => {
      const { uuid, domain } = await setup({ license: { allow_configs: false } });
      expectError(await check(uuid).send({ config: { action: 'check_project' } }), 400);
      expectError(await check(uuid).send({ config: { domain: domain.domain } }), 400);
      // An invalid config is ignored too, not a 422.
      expectAnswer(await check(uuid, domain.domain).send({ config: { action: 'nope', include: 'foo' } }), {
        has_paid: true,
      });
      expectAnswer(await check(uuid, domain.domain).send({ config: { include: 'injectables' } }), {
        has_paid: true,
      });
    });
  });

  describe('GET /project/{id}/has-paid (API key)', () => {
    const byKey = (key: string | undefined, projectId: number, domain?: string) => {
      const req = api(key).get(`/project/${projectId}/has-paid`);
      if (domain !== undefined) req.set('X-Service-Domain', domain);
      return req;
    };
    /** Same shape as 4.2; whether is_test_license belongs here (no license involved) is left open. */
    function expectKeyAnswer(
      res: Response,
      hasPaid: boolean,
      extra: { injectables?: boolean; redirect?: string | null } = {},
    ) {
      const data = expectSuccess(res);
      const keys = ['has_paid'];
      if (!hasPaid) keys.push('redirect_url');
      if (extra.injectables) keys.push('injectables');
      expect(
        Object.keys(data)
          .filter((k) => k !== 'is_test_license')
          .sort(),
      ).toEqual(keys.sort());
      expect(data.has_paid).toBe(hasPaid);
      if (!hasPaid) expect(data.redirect_url).toBe(extra.redirect === undefined ? REDIRECT : extra.redirect);
      if (extra.injectables) expect(data.injectables).toEqual([]);
    }

    it('action=check_project → the project’s has_paid (no domain needed)', async () => {
      const { key, project } = await setup();
      expectKeyAnswer(await byKey(key, project.id).query({ action: 'check_project' }), false);
      expectSuccess(await api(key).patch(`/project/${project.id}`, { has_paid: true }));
      expectKeyAnswer(await byKey(key, project.id).query({ action: 'check_project' }), true);
      expectKeyAnswer(
        await byKey(key, project.id).query({ action: 'check_project', include: 'injectables' }),
        true,
        { injectables: true },
      );
    });

    it('X-Service-Domain of a registered domain (or subdomain) → its has_paid, following PATCH at once', async () => {
      const { key, project, domain } = await setup({ domain: { has_paid: false } });
      expectKeyAnswer(await byKey(key, project.id, domain.domain), false);
      expectKeyAnswer(await byKey(key, project.id, `WWW.${domain.domain.toUpperCase()}.`), false);
      expectSuccess(await api(key).patch(`/project/${project.id}/domains/${domain.id}`, { has_paid: true }));
      expectKeyAnswer(await byKey(key, project.id, domain.domain), true);
      expectKeyAnswer(await byKey(key, project.id, domain.domain).query({ include: 'injectables' }), true, {
        injectables: true,
      });
    });

    it('400 without a domain; 403 for an unregistered or inactive domain', async () => {
      const { key, project } = await setup();
      expectError(await byKey(key, project.id), 400);
      const res = await byKey(key, project.id, host('nope'));
      expectError(res, 403);
      expect(res.body.message).toBe(NOT_REGISTERED);
      // every 403 of these checks carries the project's redirect URL (the caller may read the project).
      expect(res.body.data).toEqual({ redirect_url: REDIRECT });
      const inactive = await makeDomain(t, key, project.id, {
        domain: host('inactive'),
        has_paid: true,
        is_active: false,
      });
      expect(expectError(await byKey(key, project.id, inactive.domain), 403).message).toBe(NOT_REGISTERED);
    });

    it('422 errors.action / errors.include', async () => {
      const { key, project, domain } = await setup();
      expectError(await byKey(key, project.id, domain.domain).query({ action: 'x' }), 422, ['action']);
      expectError(await byKey(key, project.id, domain.domain).query({ include: 'foo' }), 422, ['include']);
    });

    it('401 without an API key (a license key is not accepted); 403 for an unknown key, another owner’s key or another project’s scoped key', async () => {
      const { project, uuid, domain } = await setup();
      expectError(await byKey(undefined, project.id, domain.domain), 401);
      expectError(await byKey(undefined, project.id, domain.domain).set('X-LICENSE-KEY', uuid), 401);
      expectError(await byKey(undefined, project.id, domain.domain).query({ license: uuid }), 401);
      expectError(await byKey(`lg_${'A'.repeat(43)}`, project.id, domain.domain), 403);
      const stranger = await makeAccount(t.app);
      // A stranger learns nothing about the project, its redirect URL included.
      expect(expectError(await byKey(stranger.key, project.id, domain.domain), 403).data).toBeNull();
      expectError(await byKey(stranger.key, project.id).query({ action: 'check_project' }), 403);
      // A key scoped to this project works; one scoped to another project of the owner does not.
      const owner = await makeUser(t.app);
      const ownerKey = await makeApiKey(t.app, owner);
      const p1 = await makeProject(t, ownerKey, { default_redirect_url: REDIRECT });
      const p2 = await makeProject(t, ownerKey);
      const scoped = await makeApiKey(t.app, owner, { project_id: p2.id });
      expectKeyAnswer(
        await byKey(await makeApiKey(t.app, owner, { project_id: p1.id }), p1.id).query({
          action: 'check_project',
        }),
        false,
      );
      expectError(await byKey(scoped, p1.id).query({ action: 'check_project' }), 403);
    });

    it('404 for an unknown or deleted project', async () => {
      const { key, project } = await setup();
      expectError(await byKey(key, 2_000_000_000).query({ action: 'check_project' }), 404);
      expectSuccess(await api(key).delete(`/project/${project.id}`));
      expectError(await byKey(key, project.id).query({ action: 'check_project' }), 404);
    });

    it('no license limits apply, and the calls are not counted for any license', async () => {
      const { key, project, license, domain } = await setup({
        license: { max_usage_per_day: 1, max_domains: 0, allowed_ips: '10.0.0.0/8', allowed_countries: 'DE' },
      });
      for (let i = 0; i < 3; i++) expectKeyAnswer(await byKey(key, project.id, domain.domain), true);
      expectKeyAnswer(await byKey(key, project.id, 'localhost').query({ action: 'check_project' }), false);
      expect((await usage(key, project.id, license.id)).today.count).toBe(0);
    });
  });

  describe('concurrency (exact under concurrency)', () => {
    it('uses counted in memory for a license deleted before they are written leave no row; a live license keeps its count', async () => {
      const counters = t.app.get(UsageFlush);
      const usageRows = async (licenseId: number) =>
        (await t.dataSource.query('SELECT count FROM license_usage WHERE license_id = ?', [licenseId])).map(
          (r: { count: unknown }) => Number(r.count),
        );
      const [gone, kept] = [await setup(), await setup()];
      await counters.flush();
      for (let i = 0; i < 3; i++) {
        expect((await check(gone.uuid, gone.domain.domain)).status).toBe(200);
        expect((await check(kept.uuid, kept.domain.domain)).status).toBe(200);
      }
      expectSuccess(await api(gone.key).delete(`/project/${gone.project.id}/licenses/${gone.license.id}`));
      await counters.flush();
      expect(await usageRows(gone.license.id)).toEqual([]);
      expect(await usageRows(kept.license.id)).toEqual([3]);
    });

    it.each([1, 2, 3])(
      'round %i: 60 parallel checks on max_usage_per_day 20 → exactly 20 × 200 and 40 × 429',
      async () => {
        const { key, project, license, uuid, domain } = await setup({ license: { max_usage_per_day: 20 } });
        const responses = await Promise.all(Array.from({ length: 60 }, () => check(uuid, domain.domain)));
        expect(tally(responses)).toEqual({ 200: 20, 429: 40 });
        for (const r of responses) {
          if (r.status === 200) expectAnswer(r, { has_paid: true });
          else expect429(r);
        }
        expect((await usage(key, project.id, license.id)).today.count).toBe(20);
      },
    );

    it.each([1, 2, 3])(
      'round %i: 5 parallel checks from 5 new registered domains on max_domains 2 → exactly 2 × 200 and 3 × 403',
      async () => {
        const { key, project, license, uuid } = await setup({ license: { max_domains: 2 } });
        const domains: Array<Record<string, any>> = [];
        for (let i = 0; i < 5; i++)
          domains.push(await makeDomain(t, key, project.id, { domain: host(`race${i}`), has_paid: true }));
        const responses = await Promise.all(domains.map((d) => check(uuid, d.domain)));
        expect(tally(responses)).toEqual({ 200: 2, 403: 3 });
        const winners = domains.filter((_, i) => responses[i].status === 200).map((d) => d.domain);
        for (const r of responses) if (r.status === 403) expectRefusal(r, 403, /limit|domains/i);
        const report = await usage(key, project.id, license.id);
        expect(report.domains.map((d: { domain: string }) => d.domain).sort()).toEqual(winners.sort());
        // The winners keep working; the losers stay refused.
        for (const d of domains) {
          const res = await check(uuid, d.domain);
          if (winners.includes(d.domain)) expectAnswer(res, { has_paid: true });
          else expectRefusal(res, 403, /limit|domains/i);
        }
      },
    );

    it.each([1, 2, 3])(
      'round %i: 5 parallel subdomains on max_subdomains_per_domain 2 → exactly 2 × 200 and 3 × 403',
      async () => {
        const { uuid, domain } = await setup({ license: { max_subdomains_per_domain: 2 } });
        const responses = await Promise.all(
          Array.from({ length: 5 }, (_, i) => check(uuid, `s${i}.${domain.domain}`)),
        );
        expect(tally(responses)).toEqual({ 200: 2, 403: 3 });
      },
    );

    it.each([1, 2, 3])(
      'round %i: 10 parallel calls from the same new domain on max_domains 1 all succeed and take one slot',
      async () => {
        const { key, project, license, uuid, domain } = await setup({
          license: { max_domains: 1, max_usage_per_day: 100 },
        });
        const responses = await Promise.all(Array.from({ length: 10 }, () => check(uuid, domain.domain)));
        expect(tally(responses)).toEqual({ 200: 10 });
        const report = await usage(key, project.id, license.id);
        expect(report.domains.map((d: { domain: string }) => d.domain)).toEqual([domain.domain]);
        expect(report.today.count).toBe(10);
      },
    );

    it.each([1, 2, 3])(
      'round %i: 10 parallel calls from the same new subdomain on max_subdomains_per_domain 1 all succeed and take one slot',
      async () => {
        const { key, project, license, uuid, domain } = await setup({
          license: { max_subdomains_per_domain: 1, max_usage_per_day: 100 },
        });
        const sub = `www.${domain.domain}`;
        const responses = await Promise.all(Array.from({ length: 10 }, () => check(uuid, sub)));
        expect(tally(responses)).toEqual({ 200: 10 });
        const report = await usage(key, project.id, license.id);
        expect(report.domains).toEqual([
          expect.objectContaining({ domain: domain.domain, subdomains: [sub] }),
        ]);
        expect(report.today.count).toBe(10);
      },
    );
  });
});

describe('runtime checks behind a proxy (TRUST_PROXY=true)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      TRUST_PROXY: 'true',
    });
  });
  afterAll(async () => t.close());

  async function licensed(allowed_ips: string) {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { default_redirect_url: REDIRECT, has_paid: true });
    const license = await makeLicense(t, key, project.id, { allowed_ips });
    return license.uuid as string;
  }
  const check = (uuid: string, forwardedFor?: string) => {
    const req = t
      .http()
      .post(RUNTIME)
      .set('Accept', 'application/json')
      .set('X-LICENSE-KEY', uuid)
      .query({ action: 'check_project' });
    if (forwardedFor !== undefined) req.set('X-Forwarded-For', forwardedFor);
    return req;
  };

  it('X-Forwarded-For 203.0.113.9: allowed by 203.0.113.0/24, refused by 198.51.100.0/24', async () => {
    const allowed = await licensed('203.0.113.0/24');
    const refused = await licensed('198.51.100.0/24');
    expectAnswer(await check(allowed, '203.0.113.9'), { has_paid: true });
    expectRefusal(await check(refused, '203.0.113.9'), 403, /IP/i);
    // Without the header the client is the socket address, 127.0.0.1.
    expectRefusal(await check(allowed), 403, /IP/i);
  });

  it('the client is the first X-Forwarded-For address', async () => {
    const allowed = await licensed('203.0.113.0/24');
    expectAnswer(await check(allowed, '203.0.113.9, 10.1.2.3'), { has_paid: true });
    expectRefusal(await check(allowed, '10.1.2.3, 203.0.113.9'), 403, /IP/i);
  });

  it('IPv6 forwarded addresses match IPv6 ranges', async () => {
    const allowed = await licensed('2001:db8::/32');
    expectAnswer(await check(allowed, '2001:db8::42'), { has_paid: true });
    expectRefusal(await check(allowed, '2001:db9::42'), 403, /IP/i);
  });
});
