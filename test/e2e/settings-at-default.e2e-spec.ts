import { afterAll, describe, expect, it } from '@jest/globals';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseActivationEntity } from '../../src/licenses/license-usage.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { allowanceUsed } from '../../src/portal/portal.service.js';
import { makeAccount, makeLicense, makeUser, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Behaviour the feature tests run with a setting moved off its default, run here at the default:
 * the portal's self-service frees (SELF_DEACTIVATIONS_PER_DAY, 3), and the console's API-key sign-in
 * in production (CONSOLE_API_KEY_SIGN_IN unset).
 */

type Json = Record<string, any>;
const PASSWORD = 'correct horse battery';

describe('settings at their defaults', () => {
  const apps: TestApp[] = [];
  const app = (env: Record<string, string>) => createTestApp(env).then((t) => (apps.push(t), t));
  afterAll(async () => {
    for (const t of apps) await t.close();
  });

  it('the portal frees 3 sites a day per license when SELF_DEACTIVATIONS_PER_DAY is unset', async () => {
    const t = await app({ THROTTLE_API_LIMIT: '100000' });
    expect(t.config.env.SELF_DEACTIVATIONS_PER_DAY).toBe(3);
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const buyer = await t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: project.id, email: `buyer-${uniqueToken()}@example.test`, name: null });
    const license = await makeLicense(t, key, project.id);
    await t.dataSource.getRepository(LicenseEntity).update({ id: license.id }, { customer_id: buyer.id });
    const sites = [];
    for (let i = 0; i < 4; i++) {
      const host = `s${i}-${uniqueToken()}.example.com`;
      sites.push(
        await t.dataSource
          .getRepository(LicenseActivationEntity)
          .save({ license_id: license.id, domain: host.split('.').slice(-2).join('.'), host }),
      );
    }
    const made = expectSuccess(
      await apiAs(t, key).post(`/project/${project.id}/portal-sessions`, { customer_id: buyer.id }),
      201,
    );
    const opened = await t.http().post(new URL(made.url as string).pathname);
    expect(opened.status).toBe(303);
    const cookie = (opened.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    const session = expectSuccess(await t.http().get('/api/v1/portal/session').set('Cookie', cookie));
    const portal = (method: 'get' | 'delete', path: string) =>
      t
        .http()
        [method](`/api/v1/portal${path}`)
        .set('Accept', 'application/json')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', session.csrf_token as string);

    const shown = expectSuccess(await portal('get', `/licenses/${license.id}`));
    expect(shown.self_deactivations).toMatchObject({ per_day: 3, left_today: 3 });
    for (const [i, left] of [2, 1, 0].entries())
      expect(
        expectSuccess(await portal('delete', `/licenses/${license.id}/activations/${sites[i].id}`)),
      ).toEqual({ deactivated: 1, left_today: left, per_day: 3 });
    const refused = await portal('delete', `/licenses/${license.id}/activations/${sites[3].id}`);
    expect(expectError(refused, 429).message).toBe(allowanceUsed(3));
    expect(refused.body.data).toEqual({ left_today: 0, per_day: 3 });
  });

  describe('CONSOLE_API_KEY_SIGN_IN unset, in production', () => {
    const production = (env: Record<string, string> = {}) =>
      app({ NODE_ENV: 'production', PUBLIC_URL: 'https://licenses.example.com', ...env });
    const signInOptions = async (t: TestApp) =>
      expectSuccess(await t.http().get('/api/v1/auth/config')) as Json;

    it('offers the API key until someone has a password, then no more', async () => {
      const t = await production();
      expect(t.config.env.CONSOLE_API_KEY_SIGN_IN).toBeUndefined();
      await makeAccount(t.app);
      expect(await signInOptions(t)).toMatchObject({ password: true, api_key: true });
      await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test`, password: PASSWORD });
      expect(await signInOptions(t)).toMatchObject({ password: true, api_key: false });
    });

    it('does not offer it when SSO is configured, even before anyone has a password', async () => {
      const t = await production({
        OIDC_ISSUER: 'https://id.example.com',
        OIDC_CLIENT_ID: 'licensegate',
        OIDC_CLIENT_SECRET: 'a-test-client-secret-of-some-length',
      });
      expect(await signInOptions(t)).toMatchObject({ sso: true, api_key: false });
    });

    it('set to true, offers it whatever else there is', async () => {
      const t = await production({ CONSOLE_API_KEY_SIGN_IN: 'true' });
      await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test`, password: PASSWORD });
      expect(await signInOptions(t)).toMatchObject({ api_key: true });
    });
  });
});
