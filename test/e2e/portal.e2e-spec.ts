import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { importPublicKey } from '../../sdk/src/crypto.js';
import { openOfflineToken } from '../../sdk/src/index.js';
import { AccountEntity } from '../../src/auth/account.entity.js';
import { AuthService } from '../../src/auth/auth.service.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseActivationEntity } from '../../src/licenses/license-usage.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import {
  allowanceUsed,
  CUSTOMER_OR_LICENSE,
  LINK_EXPIRED,
  LINK_UNKNOWN,
  LINK_USED,
  NOT_A_PORTAL_CREDENTIAL,
  NOT_A_CUSTOMER_OF_PROJECT,
  NOT_A_LICENSE_OF_PROJECT,
  NOT_IN_PORTAL,
  PORTAL_CSRF_REFUSED,
  PORTAL_SESSION_ENDED,
  PortalService,
  RETURN_URL_HTTPS,
  RETURN_URL_INVALID,
} from '../../src/portal/portal.service.js';
import { CROSS_SITE_OPEN } from '../../src/portal/portal-pages.js';
import { PortalLinkEntity } from '../../src/portal/portal.entity.js';
import { makeAccount, makeApiKey, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/*
 * The customer portal (docs/portal.md): links made by the vendor's server, opened once by the buyer's
 * browser, and a portal session that reaches its own licenses and nothing else.
 */

type Json = Record<string, any>;
const PASSWORD = 'correct horse battery';
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe('customer portal', () => {
  let t: TestApp;
  let clock: ManualClock;
  let key: string;
  let ownerId: number;

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await createTestApp(
      { THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000', SELF_DEACTIVATIONS_PER_DAY: '2' },
      { clock },
    );
    const account = await makeAccount(t.app, { password: PASSWORD });
    key = account.key;
    ownerId = account.user.id;
  }, 60_000);
  afterAll(async () => t?.close());

  const api = () => apiAs(t, key);

  async function customer(projectId: number, email = `buyer-${uniqueToken()}@example.test`) {
    return t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: projectId, email, name: `Buyer ${uniqueToken()}` });
  }

  /** A license of the project sold to `customerId`, with `fields` set as the billing feature would. */
  async function licenseOf(
    projectId: number,
    customerId: number | null,
    fields: Partial<LicenseEntity> = {},
  ) {
    const license = await makeLicense(t, key, projectId);
    await t.dataSource
      .getRepository(LicenseEntity)
      .update({ id: license.id }, { customer_id: customerId, ...fields });
    return license;
  }

  async function activation(licenseId: number, host: string) {
    return t.dataSource
      .getRepository(LicenseActivationEntity)
      .save({ license_id: licenseId, domain: host.split('.').slice(-2).join('.'), host });
  }

  async function link(projectId: number, body: Json) {
    return expectSuccess(await api().post(`/project/${projectId}/portal-sessions`, body), 201);
  }

  /** Opens a portal link: the cookie to send, the CSRF token and the session's answer. */
  async function open(projectId: number, body: Json) {
    const made = await link(projectId, body);
    const path = new URL(made.url as string).pathname;
    const res = await t.http().post(path);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/portal/');
    const setCookie = (res.headers['set-cookie'] as unknown as string[])[0];
    const cookie = setCookie.split(';')[0];
    const session = expectSuccess(await t.http().get('/api/v1/portal/session').set('Cookie', cookie));
    return { cookie, setCookie, csrf: session.csrf_token as string, session, path };
  }

  const portal = (cookie: string) => ({
    get: (path: string) =>
      t.http().get(`/api/v1/portal${path}`).set('Accept', 'application/json').set('Cookie', cookie),
    delete: (path: string, csrf?: string) => {
      const req = t
        .http()
        .delete(`/api/v1/portal${path}`)
        .set('Accept', 'application/json')
        .set('Cookie', cookie);
      return csrf === undefined ? req : req.set('X-CSRF-Token', csrf);
    },
  });

  describe('links', () => {
    it('answers a one-use link valid 15 minutes, audited; refuses what is not one customer or license of the project', async () => {
      const project = await makeProject(t, key);
      const other = await makeProject(t, key);
      const buyer = await customer(project.id);
      const stranger = await customer(other.id);
      const foreign = await licenseOf(other.id, stranger.id);
      const license = await licenseOf(project.id, buyer.id);

      const before = clock.nowMs();
      const made = await link(project.id, {
        customer_id: buyer.id,
        return_url: 'https://app.example.com/account',
      });
      expect(Object.keys(made).sort()).toEqual(['expires_at', 'url']);
      expect(made.url).toMatch(new RegExp(`^${t.config.publicUrl}/portal/[A-Za-z0-9_-]{43}$`));
      expect(new Date(made.expires_at as string).getTime()).toBe(
        Math.floor((before + 15 * 60_000) / 1000) * 1000,
      );
      expectSuccess(
        await api().post(`/project/${project.id}/portal-sessions`, { license_id: license.id }),
        201,
      );

      const refused = async (body: Json, field: string, message: string) => {
        const res = await api().post(`/project/${project.id}/portal-sessions`, body);
        expect(expectError(res, 422).errors).toEqual({ [field]: [message] });
      };
      await refused({}, 'customer_id', CUSTOMER_OR_LICENSE);
      await refused({ customer_id: buyer.id, license_id: license.id }, 'license_id', CUSTOMER_OR_LICENSE);
      await refused({ customer_id: stranger.id }, 'customer_id', NOT_A_CUSTOMER_OF_PROJECT);
      await refused({ license_id: foreign.id }, 'license_id', NOT_A_LICENSE_OF_PROJECT);
      await refused({ customer_id: 'one' }, 'customer_id', 'The customer id field must be an integer.');
      await refused({ customer_id: buyer.id, return_url: 'not a url' }, 'return_url', RETURN_URL_INVALID);
      // Outside production any scheme with a host will do (a local app, a desktop app's scheme).
      expectSuccess(
        await api().post(`/project/${project.id}/portal-sessions`, {
          customer_id: buyer.id,
          return_url: 'http://localhost:8080/account',
        }),
        201,
      );

      // A read-only key reads; it opens no portal.
      const { user } = await makeAccount(t.app);
      const ownProject = await makeProject(t, await makeApiKey(t.app, user));
      const readOnly = await makeApiKey(t.app, user, { read_only: true });
      expectError(
        await apiAs(t, readOnly).post(`/project/${ownProject.id}/portal-sessions`, { customer_id: 1 }),
        403,
      );
      // Another account's project: forbidden, as every management route.
      expectError(await api().post(`/project/${ownProject.id}/portal-sessions`, { customer_id: 1 }), 403);

      const log = expectSuccess(
        await api().get(`/project/${project.id}/audit-log?action=portal_session.created`),
      ).data as Json[];
      expect(log.length).toBe(3);
      expect(log[2]).toMatchObject({
        action: 'portal_session.created',
        resource_type: 'portal_session',
        project_id: project.id,
        actor: { type: 'api_key' },
        changes: {
          customer_id: [null, buyer.id],
          return_url: [null, 'https://app.example.com/account'],
        },
      });
      expect(JSON.stringify(log)).not.toContain(new URL(made.url as string).pathname.slice(8));
    });

    it('shows a Continue page that consumes nothing; its POST opens the portal once', async () => {
      const project = await makeProject(t, key, { name: 'Acme <Forms>' });
      const buyer = await customer(project.id);
      await licenseOf(project.id, buyer.id);
      const made = await link(project.id, { customer_id: buyer.id });
      const path = new URL(made.url as string).pathname;

      for (let i = 0; i < 2; i++) {
        const page = await t.http().get(path).set('Accept', 'text/html');
        expect(page.status).toBe(200);
        expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(page.headers['content-security-policy']).toContain("script-src 'self'");
        expect(page.headers['referrer-policy']).toBe('no-referrer');
        expect(page.headers['cache-control']).toBe('no-store');
        expect(page.text).toContain(`<form method="post" action="${path}">`);
        expect(page.text).toContain('>Continue</button>');
        expect(page.text).toContain('Acme &lt;Forms&gt;');
        expect(page.text).not.toMatch(/<script|style=|<style/);
        expect(page.headers['set-cookie']).toBeUndefined();
      }

      // Another site's form cannot open it (the browser says where the form was).
      const crossSite = await t
        .http()
        .post(path)
        .set('Sec-Fetch-Site', 'cross-site')
        .set('Accept', 'application/json');
      expect(expectError(crossSite, 403).message).toBe(CROSS_SITE_OPEN);
      const opened = await t
        .http()
        .post(path)
        .set('Sec-Fetch-Site', 'same-origin')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send('');
      expect(opened.status).toBe(303);
      expect(opened.headers.location).toBe('/portal/');
      const cookie = (opened.headers['set-cookie'] as unknown as string[])[0];
      expect(cookie).toMatch(
        /^lg_portal=[A-Za-z0-9_-]{43}; Max-Age=3600; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/,
      );

      // Used: a second POST (another tab, a replay) and a later GET are told so, as a page or an envelope.
      const again = await t.http().post(path).set('Accept', 'text/html');
      expect(again.status).toBe(410);
      expect(again.text).toContain(LINK_USED.replace(/'/g, '&#39;'));
      expect(again.headers['set-cookie']).toBeUndefined();
      expect(expectError(await t.http().post(path).set('Accept', 'application/json'), 410).message).toBe(
        LINK_USED,
      );
      expect(expectError(await t.http().get(path).set('Accept', 'application/json'), 410).message).toBe(
        LINK_USED,
      );

      const unknown = `/portal/${'x'.repeat(43)}`;
      expect((await t.http().get(unknown)).status).toBe(404);
      expect(expectError(await t.http().post(unknown).set('Accept', 'application/json'), 404).message).toBe(
        LINK_UNKNOWN,
      );
      expectError(await t.http().put(path).set('Accept', 'application/json'), 405);

      const log = expectSuccess(
        await api().get(`/project/${project.id}/audit-log?action=portal_session.opened`),
      ).data as Json[];
      expect(log).toHaveLength(1);
      expect(log[0].actor).toEqual({
        type: 'portal',
        api_key_id: null,
        api_key_prefix: null,
        user_id: null,
        customer_id: buyer.id,
      });
    });

    it('expires after 15 minutes by the clock, opened or not', async () => {
      const project = await makeProject(t, key);
      const buyer = await customer(project.id);
      const made = await link(project.id, { customer_id: buyer.id });
      const path = new URL(made.url as string).pathname;
      clock.advance(15 * 60_000 - 1000);
      expect((await t.http().get(path)).status).toBe(200);
      clock.advance(1000);
      expect(expectError(await t.http().get(path).set('Accept', 'application/json'), 410).message).toBe(
        LINK_EXPIRED,
      );
      const page = await t.http().post(path);
      expect(page.status).toBe(410);
      expect(page.text).toContain('This portal link has expired');
      expect(page.headers['set-cookie']).toBeUndefined();
      // Pruning deletes it (and every other expired link and session); then it is unknown.
      const links = t.dataSource.getRepository(PortalLinkEntity);
      expect(await links.countBy({ token_hash: sha256(path.slice('/portal/'.length)) })).toBe(1);
      expect(await t.app.get(PortalService).prune()).toBeGreaterThan(0);
      expect(await links.countBy({ token_hash: sha256(path.slice('/portal/'.length)) })).toBe(0);
      expect((await t.http().get(path)).status).toBe(404);
    });

    it('names the cookie __Host-lg_portal, Secure, when PUBLIC_URL is https; in production return_url is https', async () => {
      const https = await createTestApp({
        PUBLIC_URL: 'https://licenses.example.com',
        NODE_ENV: 'production',
        THROTTLE_API_LIMIT: '100000',
      });
      try {
        const owner = await makeAccount(https.app);
        const project = await makeProject(https, owner.key);
        const buyer = await https.dataSource
          .getRepository(CustomerEntity)
          .save({ project_id: project.id, email: 'b@example.test', name: null });
        const post = (body: Json) =>
          apiAs(https, owner.key).post(`/project/${project.id}/portal-sessions`, body);
        expect(
          expectError(await post({ customer_id: buyer.id, return_url: 'http://app.example.com/' }), 422)
            .errors,
        ).toEqual({ return_url: [RETURN_URL_HTTPS] });
        const made = expectSuccess(
          await post({ customer_id: buyer.id, return_url: 'https://app.example.com/' }),
          201,
        );
        expect(made.url).toMatch(/^https:\/\/licenses\.example\.com\/portal\/[A-Za-z0-9_-]{43}$/);
        const opened = await https.http().post(new URL(made.url as string).pathname);
        expect(opened.status).toBe(303);
        const setCookie = (opened.headers['set-cookie'] as unknown as string[])[0];
        expect(setCookie).toMatch(
          /^__Host-lg_portal=[A-Za-z0-9_-]{43}; Max-Age=3600; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Lax$/,
        );
        const cookie = setCookie.split(';')[0];
        const session = expectSuccess(await https.http().get('/api/v1/portal/session').set('Cookie', cookie));
        expect(session.return_url).toBe('https://app.example.com/');
        // The plain name means nothing there.
        expectError(
          await https.http().get('/api/v1/portal/session').set('Cookie', cookie.replace('__Host-', '')),
          401,
        );
      } finally {
        await https.close();
      }
    }, 60_000);
  });

  describe('a portal session', () => {
    let projectA: Json;
    let projectB: Json;
    let alice: CustomerEntity;
    let bob: CustomerEntity;
    let carol: CustomerEntity;
    let aliceLicenses: Json[];
    let bobLicense: Json;
    let carolLicense: Json;

    beforeAll(async () => {
      projectA = await makeProject(t, key, { has_paid: true, name: 'Forms Pro' });
      projectB = await makeProject(t, key, { has_paid: true });
      alice = await customer(projectA.id);
      bob = await customer(projectA.id);
      carol = await customer(projectB.id);
      aliceLicenses = [await licenseOf(projectA.id, alice.id), await licenseOf(projectA.id, alice.id)];
      bobLicense = await licenseOf(projectA.id, bob.id);
      carolLicense = await licenseOf(projectB.id, carol.id);
      await licenseOf(projectA.id, null);
    });

    it('answers the customer, their licenses of the project and nothing else, and the CSRF token', async () => {
      const { session } = await open(projectA.id, {
        customer_id: alice.id,
        return_url: 'https://app.example.com/',
      });
      expect(Object.keys(session).sort()).toEqual([
        'csrf_token',
        'customer',
        'expires_at',
        'licenses',
        'project',
        'return_url',
      ]);
      expect(session.customer).toEqual({ id: alice.id, email: alice.email, name: alice.name });
      expect(session.project).toEqual({ id: projectA.id, name: 'Forms Pro' });
      expect(session.return_url).toBe('https://app.example.com/');
      expect(session.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.licenses.map((l: Json) => l.id)).toEqual([aliceLicenses[1].id, aliceLicenses[0].id]);
      const first = session.licenses[1];
      expect(first).toMatchObject({
        id: aliceLicenses[0].id,
        key: aliceLicenses[0].uuid,
        title: aliceLicenses[0].title,
        status: 'active',
        payment: { state: 'paid', grace_until: null },
        activations: [],
        activations_total: 0,
        self_deactivations: { per_day: 2, left_today: 2 },
        offline_token: { available: true, reason: null },
        plan: null,
        meters: {},
      });
    });

    it('reaches nothing of another customer, of this project or another, on any portal route (404)', async () => {
      const { cookie, csrf } = await open(projectA.id, { customer_id: alice.id });
      const bobSite = await activation(bobLicense.id, `b-${uniqueToken()}.example.com`);
      const carolSite = await activation(carolLicense.id, `c-${uniqueToken()}.example.com`);
      const aliceSite = await activation(aliceLicenses[0].id, `a-${uniqueToken()}.example.com`);
      const listed = expectSuccess(await portal(cookie).get('/licenses')) as Json[];
      expect(listed.map((l) => l.id).sort()).toEqual(aliceLicenses.map((l) => l.id).sort());
      for (const [other, site] of [
        [bobLicense, bobSite],
        [carolLicense, carolSite],
      ] as const) {
        expect(expectError(await portal(cookie).get(`/licenses/${other.id}`), 404).message).toBe(
          'License not found.',
        );
        expectError(await portal(cookie).get(`/licenses/${other.id}/token`), 404);
        expectError(await portal(cookie).delete(`/licenses/${other.id}/activations/${site.id}`, csrf), 404);
        // Their activation under one of her licenses is not hers either.
        expect(
          expectError(
            await portal(cookie).delete(`/licenses/${aliceLicenses[0].id}/activations/${site.id}`, csrf),
            404,
          ).message,
        ).toBe('Activation not found.');
      }
      expectError(await portal(cookie).get('/licenses/2147000000'), 404);
      expectError(await portal(cookie).get('/licenses/abc'), 404);
      // Nothing was freed, nothing was counted.
      const rows = t.dataSource.getRepository(LicenseActivationEntity);
      expect(await rows.countBy({ id: bobSite.id })).toBe(1);
      expect(await rows.countBy({ id: carolSite.id })).toBe(1);
      const mine = expectSuccess(await portal(cookie).get(`/licenses/${aliceLicenses[0].id}`));
      expect(mine.activations.map((a: Json) => a.id)).toEqual([aliceSite.id]);
      expect(mine.self_deactivations.left_today).toBe(2);

      // Bob's portal, opened on his one license, sees only it.
      const bobs = await open(projectA.id, { license_id: bobLicense.id });
      expect(bobs.session.customer).toEqual({ id: bob.id, email: bob.email, name: bob.name });
      expect(bobs.session.licenses.map((l: Json) => l.id)).toEqual([bobLicense.id]);
      expectError(await portal(bobs.cookie).get(`/licenses/${aliceLicenses[0].id}`), 404);
    });

    it('is reached with the portal cookie only, and the portal cookie reaches nothing else', async () => {
      const { cookie } = await open(projectA.id, { customer_id: alice.id });
      // An API key or a console session opens no portal.
      expect(expectError(await apiAs(t, key).get('/portal/session'), 403).message).toBe(
        NOT_A_PORTAL_CREDENTIAL,
      );
      expect(expectError(await t.http().get('/api/v1/portal/session'), 401).message).toBe(NOT_IN_PORTAL);
      const account = await t.dataSource
        .getRepository(AccountEntity)
        .findOneByOrFail({ holder_user_id: ownerId });
      const email = `support-${uniqueToken()}@example.test`;
      await t.app.get(AuthService).createUser({
        email,
        password: PASSWORD,
        joins: { account_id: account.id, role: 'owner', project_ids: null },
      });
      const login = await t.http().post('/api/v1/auth/login').send({ email, password: PASSWORD });
      const consoleCookie = (login.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
      expect(expectError(await portal(consoleCookie).get('/session'), 403).message).toBe(
        NOT_A_PORTAL_CREDENTIAL,
      );
      // Sent along with the portal's cookie, neither matters: the portal's decides.
      expectSuccess(await portal(`${cookie}; ${consoleCookie}`).get('/session').set('X-API-KEY', key));
      // The portal's cookie is no console session and no key.
      for (const path of ['/api/v1/project', `/api/v1/project/${projectA.id}/licenses`, '/api/v1/auth/me'])
        expectError(await t.http().get(path).set('Accept', 'application/json').set('Cookie', cookie), 401);
      // A made-up or ended portal session.
      expect(expectError(await portal(`lg_portal=${'y'.repeat(43)}`).get('/session'), 401).message).toBe(
        PORTAL_SESSION_ENDED,
      );
    });

    it('refuses a write without the CSRF token, or with another session’s', async () => {
      const { cookie } = await open(projectA.id, { customer_id: alice.id });
      const other = await open(projectA.id, { customer_id: alice.id });
      const site = await activation(aliceLicenses[1].id, `csrf-${uniqueToken()}.example.com`);
      const path = `/licenses/${aliceLicenses[1].id}/activations/${site.id}`;
      expect(expectError(await portal(cookie).delete(path), 403).message).toBe(PORTAL_CSRF_REFUSED);
      expect(expectError(await portal(cookie).delete(path, other.csrf), 403).message).toBe(
        PORTAL_CSRF_REFUSED,
      );
      expect(await t.dataSource.getRepository(LicenseActivationEntity).countBy({ id: site.id })).toBe(1);
      expectSuccess(await portal(other.cookie).delete(path, other.csrf));
    });

    it('ends after an hour by the clock', async () => {
      const { cookie } = await open(projectA.id, { customer_id: alice.id });
      clock.advance(3_600_000 - 1000);
      expectSuccess(await portal(cookie).get('/session'));
      clock.advance(1000);
      expect(expectError(await portal(cookie).get('/session'), 401).message).toBe(PORTAL_SESSION_ENDED);
    });
  });

  it('frees sites within SELF_DEACTIVATIONS_PER_DAY, says how many are left, audited with the portal actor', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const buyer = await customer(project.id);
    const license = await licenseOf(project.id, buyer.id);
    const sites = [];
    for (let i = 0; i < 4; i++)
      sites.push(await activation(license.id, `s${i}-${uniqueToken()}.example.com`));
    const { cookie, csrf } = await open(project.id, { customer_id: buyer.id });
    const free = (id: number) => portal(cookie).delete(`/licenses/${license.id}/activations/${id}`, csrf);

    expect(expectSuccess(await free(sites[0].id))).toEqual({ deactivated: 1, left_today: 1, per_day: 2 });
    // Gone already: not found, and nothing counted.
    expectError(await free(sites[0].id), 404);
    expect(expectSuccess(await free(sites[1].id))).toEqual({ deactivated: 1, left_today: 0, per_day: 2 });
    const refused = await free(sites[2].id);
    expect(expectError(refused, 429).message).toBe(allowanceUsed(2));
    expect(refused.body.data).toEqual({ left_today: 0, per_day: 2 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const shown = expectSuccess(await portal(cookie).get(`/licenses/${license.id}`));
    expect(shown.activations.map((a: Json) => a.id)).toEqual([sites[2].id, sites[3].id]);
    expect(shown.self_deactivations).toMatchObject({ per_day: 2, left_today: 0 });

    const log = expectSuccess(await api().get(`/project/${project.id}/audit-log?action=license.deactivated`))
      .data as Json[];
    expect(log).toHaveLength(2);
    for (const row of log) {
      expect(row.actor).toEqual({
        type: 'portal',
        api_key_id: null,
        api_key_prefix: null,
        user_id: null,
        customer_id: buyer.id,
      });
      expect(row.resource_id).toBe(license.id);
    }
  });

  it("shows a license's plan, its effective entitlements and this month's meters", async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const plan = expectSuccess(
      await api().post(`/project/${project.id}/plans`, {
        code: 'pro',
        name: 'Pro',
        entitlements: { sso: true, seats: 5, 'meter.ai_credits': 100 },
      }),
      201,
    );
    const buyer = await customer(project.id);
    const license = await licenseOf(project.id, buyer.id, { plan_id: plan.id, entitlements: { seats: 9 } });
    const { cookie } = await open(project.id, { customer_id: buyer.id });
    const shown = expectSuccess(await portal(cookie).get(`/licenses/${license.id}`));
    expect(shown.plan).toEqual({ id: plan.id, code: 'pro', name: 'Pro' });
    expect(shown.entitlements).toEqual({ sso: true, seats: 9, 'meter.ai_credits': 100 });
    expect(shown.meters).toEqual({
      'meter.ai_credits': { used: 0, limit: 100, resets_at: expect.any(String) },
    });
  });

  it('shows a revoked license as such, and gives it no token', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const buyer = await customer(project.id);
    const license = await licenseOf(project.id, buyer.id);
    expectSuccess(await api().post(`/project/${project.id}/licenses/${license.id}/revoke`));
    const { cookie, session } = await open(project.id, { customer_id: buyer.id });
    expect(session.licenses[0]).toMatchObject({
      status: 'revoked',
      offline_token: {
        available: false,
        reason: 'This license has been revoked: an offline token is issued only for an active, paid license.',
      },
    });
    expect(session.licenses[0].revoked_at).toEqual(expect.any(String));
    expect(expectError(await portal(cookie).get(`/licenses/${license.id}/token`), 403).message).toBe(
      'This license has been revoked: an offline token is issued only for an active, paid license.',
    );
  });

  describe('offline tokens', () => {
    it('issues a token for a paid license that the JS SDK verifies with the project key', async () => {
      const project = await makeProject(t, key, { has_paid: true, offline_grace_hours: 24 });
      const buyer = await customer(project.id);
      const license = await licenseOf(project.id, buyer.id);
      const { cookie } = await open(project.id, { customer_id: buyer.id });
      const data = expectSuccess(await portal(cookie).get(`/licenses/${license.id}/token`));
      expect(Object.keys(data).sort()).toEqual(['expires_at', 'license_id', 'project_id', 'token']);
      const signingKey = expectSuccess(await api().get(`/project/${project.id}/signing-key`));
      const payload = await openOfflineToken(
        data.token as string,
        await importPublicKey(signingKey.public_key_pem),
      );
      expect(payload).not.toBeNull();
      expect(payload).toMatchObject({
        project_id: project.id,
        license_id: license.id,
        key_sha256: sha256(license.uuid as string),
        domain: null,
        has_paid: true,
        is_test_license: false,
      });
      expect(payload!.exp - payload!.iat).toBe(24 * 3600);
      expect(data.expires_at).toBe(new Date(payload!.exp * 1000).toISOString().replace('.000Z', 'Z'));
      // Another key does not verify it.
      const other = expectSuccess(await api().get(`/project/${(await makeProject(t, key)).id}/signing-key`));
      expect(
        await openOfflineToken(data.token as string, await importPublicKey(other.public_key_pem)),
      ).toBeNull();
    });

    it('says why there is none: unpaid; grace shows its date and caps the token', async () => {
      const project = await makeProject(t, key, { has_paid: false });
      const buyer = await customer(project.id);
      const unpaid = await licenseOf(project.id, buyer.id);
      const graceUntil = new Date(Math.floor(clock.nowMs() / 1000) * 1000 + 2 * 3_600_000);
      const inGrace = await licenseOf(project.id, buyer.id, {
        billing: 'license',
        has_paid: true,
        grace_until: graceUntil,
      });
      const { cookie, session } = await open(project.id, { customer_id: buyer.id });
      const byId = new Map((session.licenses as Json[]).map((l) => [l.id, l]));
      expect(byId.get(unpaid.id)).toMatchObject({
        status: 'active',
        payment: { state: 'unpaid', grace_until: null },
        offline_token: { available: false },
      });
      expect(byId.get(inGrace.id)).toMatchObject({
        status: 'active',
        payment: { state: 'grace', grace_until: graceUntil.toISOString().replace('.000Z', 'Z') },
        offline_token: { available: true },
      });
      expect(expectError(await portal(cookie).get(`/licenses/${unpaid.id}/token`), 403).message).toBe(
        'This license is not paid: an offline token is issued only for a paid license.',
      );
      const token = expectSuccess(await portal(cookie).get(`/licenses/${inGrace.id}/token`));
      expect(new Date(token.expires_at as string).getTime()).toBe(graceUntil.getTime());
    });
  });
});
