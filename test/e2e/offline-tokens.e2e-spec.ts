import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, createPublicKey, KeyObject, verify } from 'node:crypto';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/*
 * Offline tokens (docs/decisions.md#signed-answers-and-offline-tokens), opened and verified with
 * nothing but node:crypto.
 */

const RUNTIME = '/api/v1/project/has-paid';
const INVALID_INCLUDE =
  'The selected include is invalid: include takes injectables, token, or both comma-separated.';
const TOKEN_NEEDS_LICENSE =
  'Offline tokens are issued to license keys: ask POST /project/has-paid with include=token.';
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** The payload of a token whose signature verifies with `publicKey`; throws otherwise. */
function openToken(token: string, publicKey: KeyObject): Record<string, unknown> {
  const parts = token.split('.');
  expect(parts).toHaveLength(3);
  const [version, payload, signature] = parts;
  expect(version).toBe('LG1');
  for (const part of [payload, signature]) expect(part).toMatch(/^[A-Za-z0-9_-]+$/);
  if (
    !verify(
      null,
      Buffer.from(`LG1-TOKEN\n${payload}`, 'utf8'),
      publicKey,
      Buffer.from(signature, 'base64url'),
    )
  )
    throw new Error('token signature does not verify');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}

describe('offline tokens', () => {
  let t: TestApp;
  let key: string;

  const check = (license: string, query: Record<string, string> = {}, domain?: string) => {
    const req = t
      .http()
      .post(RUNTIME)
      .set('Accept', 'application/json')
      .set('X-LICENSE-KEY', license)
      .query(query);
    return domain === undefined ? req : req.set('X-Service-Domain', domain);
  };
  const publicKeyOf = async (projectId: number) =>
    createPublicKey(
      expectSuccess(await apiAs(t, key).get(`/project/${projectId}/signing-key`)).public_key_pem,
    );

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t?.close());

  it('include=token adds a signed token to a paid answer, valid for the default 72 hours', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const domain = await makeDomain(t, key, project.id, { has_paid: true });
    const license = await makeLicense(t, key, project.id);
    const before = Math.floor(Date.now() / 1000);
    const data = expectSuccess(await check(license.uuid, { include: 'token' }, domain.domain));
    const after = Math.floor(Date.now() / 1000);
    expect(Object.keys(data)).toEqual(['has_paid', 'token', 'is_test_license']);
    expect(data.has_paid).toBe(true);
    const payload = openToken(data.token, await publicKeyOf(project.id));
    expect(Object.keys(payload)).toEqual([
      'project_id',
      'license_id',
      'key_sha256',
      'domain',
      'has_paid',
      'is_test_license',
      'iat',
      'exp',
    ]);
    expect(payload).toMatchObject({
      project_id: project.id,
      license_id: license.id,
      key_sha256: sha256(license.uuid),
      domain: domain.domain,
      has_paid: true,
      is_test_license: false,
    });
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.iat).toBeLessThanOrEqual(after);
    expect(payload.exp).toBe((payload.iat as number) + 72 * 3600);
    // Another project's key does not open it, and a changed payload does not verify.
    const otherKey = await publicKeyOf((await makeProject(t, key)).id);
    expect(() => openToken(data.token, otherKey)).toThrow('does not verify');
    const [v, part, sig] = data.token.split('.');
    const forged = Buffer.from(
      Buffer.from(part, 'base64url')
        .toString('utf8')
        .replace(/"exp":\d+/, '"exp":9999999999'),
    ).toString('base64url');
    expect(forged).not.toBe(part);
    const publicKey = await publicKeyOf(project.id);
    expect(() => openToken(`${v}.${forged}.${sig}`, publicKey)).toThrow('does not verify');
  });

  it('the token names the host the answer was for: a subdomain, a pinned domain, null for check_project', async () => {
    const project = await makeProject(t, key, { has_paid: true, offline_grace_hours: 1 });
    const domain = await makeDomain(t, key, project.id, { has_paid: true });
    const publicKey = await publicKeyOf(project.id);
    // allow_configs: only such a license gets a token from check_project without a calling domain (docs/decisions.md#runtime-checks).
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    const sub = `shop.${domain.domain}`;
    const fromSub = openToken(
      expectSuccess(await check(license.uuid, { include: 'token' }, `https://SHOP.${domain.domain}/cart`))
        .token,
      publicKey,
    );
    expect(fromSub.domain).toBe(sub);
    expect((fromSub.exp as number) - (fromSub.iat as number)).toBe(3600);
    const project_ = openToken(
      expectSuccess(await check(license.uuid, { include: 'token', action: 'check_project' })).token,
      publicKey,
    );
    expect(project_.domain).toBeNull();
    const pinned = await makeLicense(t, key, project.id, { domain_id: domain.id });
    expect(
      openToken(expectSuccess(await check(pinned.uuid, { include: 'token' })).token, publicKey).domain,
    ).toBe(domain.domain);
    const test = await makeLicense(t, key, project.id, { is_test_license: true });
    const local = openToken(
      expectSuccess(await check(test.uuid, { include: 'token' }, 'localhost')).token,
      publicKey,
    );
    expect(local).toMatchObject({ domain: 'localhost', is_test_license: true, license_id: test.id });
  });

  it('include=injectables,token (either order) carries both; include=injectables alone answers as before', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    expectSuccess(
      await apiAs(t, key).post(`/project/${project.id}/injectables`, {
        slug: `paid-${uniqueToken()}`,
        content: 'pro',
        secret: 's3cret-s3cret',
        only_if_paid: true,
      }),
      201,
    );
    for (const include of ['injectables,token', 'token,injectables', 'token,token,injectables']) {
      const data = expectSuccess(await check(license.uuid, { include, action: 'check_project' }));
      expect(Object.keys(data)).toEqual(['has_paid', 'injectables', 'token', 'is_test_license']);
      expect(data.injectables).toHaveLength(1);
      expect(openToken(data.token, await publicKeyOf(project.id)).license_id).toBe(license.id);
    }
    const plain = expectSuccess(
      await check(license.uuid, { include: 'injectables', action: 'check_project' }),
    );
    expect(Object.keys(plain)).toEqual(['has_paid', 'injectables', 'is_test_license']);
  });

  it("no token when unpaid, or when the project's offline_grace_hours is 0", async () => {
    const unpaid = await makeProject(t, key, {
      has_paid: false,
      default_redirect_url: 'https://example.com/pay',
    });
    const unpaidLicense = await makeLicense(t, key, unpaid.id, { allow_configs: true });
    expect(
      expectSuccess(
        await check(unpaidLicense.uuid, { include: 'injectables,token', action: 'check_project' }),
      ),
    ).toEqual({
      has_paid: false,
      redirect_url: 'https://example.com/pay',
      is_test_license: false,
    });
    const unpaidDomain = await makeDomain(t, key, unpaid.id, { has_paid: false });
    expect(
      expectSuccess(await check(unpaidLicense.uuid, { include: 'token' }, unpaidDomain.domain)),
    ).not.toHaveProperty('token');

    const noGrace = await makeProject(t, key, { has_paid: true, offline_grace_hours: 0 });
    const license = await makeLicense(t, key, noGrace.id, { allow_configs: true });
    expect(expectSuccess(await check(license.uuid, { include: 'token', action: 'check_project' }))).toEqual({
      has_paid: true,
      is_test_license: false,
    });
    // Turned on again, tokens come back at once.
    expectSuccess(await apiAs(t, key).patch(`/project/${noGrace.id}`, { offline_grace_hours: 2 }));
    const token = expectSuccess(
      await check(license.uuid, { include: 'token', action: 'check_project' }),
    ).token;
    const payload = openToken(token, await publicKeyOf(noGrace.id));
    expect((payload.exp as number) - (payload.iat as number)).toBe(7200);
  });

  it('include takes only injectables and token: anything else is a 422 on include', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id);
    for (const include of ['foo', 'token,', ',token', 'injectables,foo', 'token, injectables', 'TOKEN', '']) {
      const res = await check(license.uuid, { include, action: 'check_project' });
      expect({ include, status: res.status, errors: res.body.errors }).toEqual({
        include,
        status: 422,
        errors: { include: [INVALID_INCLUDE] },
      });
    }
    const twice = await t
      .http()
      .post(`${RUNTIME}?action=check_project&include=token&include=injectables`)
      .set('X-LICENSE-KEY', license.uuid);
    expect(expectError(twice, 422, ['include']).errors.include).toEqual([INVALID_INCLUDE]);
  });

  it('a license with allow_configs may ask for a token in body.config', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    const data = expectSuccess(
      await check(license.uuid).send({ config: { action: 'check_project', include: 'injectables,token' } }),
    );
    expect(Object.keys(data)).toEqual(['has_paid', 'injectables', 'token', 'is_test_license']);
    expect(openToken(data.token, await publicKeyOf(project.id)).domain).toBeNull();
    // Without allow_configs the config is ignored.
    const plain = await makeLicense(t, key, project.id);
    expect(
      expectSuccess(
        await check(plain.uuid, { action: 'check_project' }).send({ config: { include: 'token' } }),
      ),
    ).toEqual({ has_paid: true, is_test_license: false });
  });

  it('the API-key has-paid issues no token: include=token is a 422 there', async () => {
    const project = await makeProject(t, key, { has_paid: true });
    const res = await apiAs(t, key)
      .get(`/project/${project.id}/has-paid`)
      .query({ action: 'check_project', include: 'token' });
    expect(expectError(res, 422, ['include']).errors.include).toEqual([TOKEN_NEEDS_LICENSE]);
    expect(
      expectSuccess(
        await apiAs(t, key)
          .get(`/project/${project.id}/has-paid`)
          .query({ action: 'check_project', include: 'injectables' }),
      ),
    ).toEqual({
      has_paid: true,
      injectables: [],
    });
  });
});
