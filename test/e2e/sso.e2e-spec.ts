import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountEntity } from '../../src/auth/account.entity.js';
import { makeApiKey, makeUser, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { startOidcProvider, TestProvider } from '../utils/oidc.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Single sign-on with OpenID Connect (docs/security.md#sso) against a real OpenID provider (the
 * oidc-provider package) started here: invited and existing members link their identity on their
 * first sign-in, later ones match by (issuer, subject); an allowed domain joins with the default
 * role; an unknown or unverified email and a mismatched state are refused.
 */

type Json = Record<string, any>;
const PUBLIC_URL = 'http://licensegate.test';
const PASSWORD = 'correct horse battery';
const cookieOf = (res: { headers: Record<string, unknown> }, name: string) =>
  ((res.headers['set-cookie'] as string[] | undefined) ?? [])
    .map((line) => line.split(';')[0])
    .find((pair) => pair.startsWith(`${name}=`) && pair.length > name.length + 1);

describe('single sign-on', () => {
  let t: TestApp;
  let provider: TestProvider;
  let ownerKey: string;
  let accountId: number;

  beforeAll(async () => {
    provider = await startOidcProvider();
    t = await createTestApp({
      ...provider.env,
      PUBLIC_URL,
      OIDC_ALLOWED_DOMAINS: 'allowed.test',
      THROTTLE_API_LIMIT: '100000',
    });
    await provider.register(`${PUBLIC_URL}/console/`);
    // The first account: where an allowed domain's new people join.
    const owner = await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test`, password: PASSWORD });
    ownerKey = await makeApiKey(t.app, owner);
    accountId = (
      await t.dataSource.getRepository(AccountEntity).findOneByOrFail({ holder_user_id: owner.id })
    ).id;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await provider?.close();
  });

  /** Starts at the service, signs `login` in at the provider, comes back: the callback's answer. */
  async function sso(login: string, tamper?: (callback: URL, cookie: string) => [URL, string]) {
    const start = await t.http().post('/api/v1/auth/sso/start');
    const started = expectSuccess(start);
    const pending = cookieOf(start, 'lg_sso')!;
    expect(pending).toBeDefined();
    const line = (start.headers['set-cookie'] as unknown as string[])[0];
    expect(line).toMatch(/; Path=\/api\/v1\/auth\/sso;/);
    expect(line).toMatch(/; HttpOnly; SameSite=Lax$/);
    const authorization = new URL(started.authorization_url as string);
    expect(authorization.origin).toBe(provider.issuer);
    expect(authorization.searchParams.get('scope')).toBe('openid email');
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('redirect_uri')).toBe(`${PUBLIC_URL}/console/`);
    expect(authorization.searchParams.get('state')).toBeTruthy();
    expect(authorization.searchParams.get('nonce')).toBeTruthy();
    let back = await provider.signIn(authorization.href, login);
    expect(`${back.origin}${back.pathname}`).toBe(`${PUBLIC_URL}/console/`);
    let cookie = pending;
    if (tamper) [back, cookie] = tamper(back, cookie);
    return t.http().post('/api/v1/auth/sso/callback').set('Cookie', cookie).send({ query: back.search });
  }

  /** The signed-in answer of a callback, checked against GET /auth/me with its cookie. */
  async function me(res: { status: number; body: Json; headers: Record<string, unknown> }) {
    const data = expectSuccess(res as never);
    if (data.outcome !== undefined) expect(data.outcome).toBe('signed_in');
    const session = cookieOf(res, 'lg_session');
    expect(session).toBeDefined();
    return expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', session!));
  }

  const refusal = (res: { status: number; body: Json; headers: Record<string, unknown> }, status: number) => {
    expect(cookieOf(res, 'lg_session')).toBeUndefined();
    return expectError(res as never, status).message as string;
  };

  it('tells the console SSO is on', async () => {
    expect(expectSuccess(await t.http().get('/api/v1/auth/config'))).toMatchObject({
      sso: true,
      api_key: true,
    });
  });

  it('an invited person signs in with SSO: they join with the role, and later sign-ins match by issuer and subject', async () => {
    const email = `invited-${uniqueToken()}@example.test`;
    expectSuccess(
      await t
        .http()
        .post('/api/v1/members/invitations')
        .set('X-API-KEY', ownerKey)
        .send({ email, role: 'support' }),
      201,
    );
    const signedIn = await me(await sso(email));
    expect(signedIn.user.email).toBe(email);
    expect(signedIn.memberships).toEqual([
      expect.objectContaining({ account_id: accountId, role: 'support' }),
    ]);
    const [identity] = await t.dataSource.query(
      'SELECT issuer, subject FROM user_identities WHERE user_id = ?',
      [signedIn.user.id],
    );
    expect(identity).toEqual({ issuer: provider.issuer, subject: email });
    const again = await sso(email);
    expect((await me(again)).user.id).toBe(signedIn.user.id);
    const members = expectSuccess(await t.http().get('/api/v1/members').set('X-API-KEY', ownerKey));
    expect(members.find((m: Json) => m.email === email)).toMatchObject({
      has_sso: true,
      has_password: false,
    });
    // The invitation is used.
    expect(
      expectSuccess(await t.http().get('/api/v1/members/invitations').set('X-API-KEY', ownerKey)),
    ).toEqual([]);
  });

  it('an existing password user confirms their password once to link SSO', async () => {
    const user = await makeUser(t.app, { email: `pw-${uniqueToken()}@example.test`, password: PASSWORD });
    const first = await sso(user.email);
    expect(expectSuccess(first)).toEqual({ outcome: 'confirm_password', session: null });
    expect(cookieOf(first, 'lg_session')).toBeUndefined();
    const link = cookieOf(first, 'lg_sso_link')!;
    const wrong = expectError(
      await t.http().post('/api/v1/auth/sso/link').set('Cookie', link).send({ password: 'not the password' }),
      401,
    );
    expect(wrong.message).toBe('The email or password is incorrect.');
    const none = expectError(await t.http().post('/api/v1/auth/sso/link').send({ password: PASSWORD }), 401);
    expect(none.message).toBe('This single sign-on has expired: sign in with SSO again.');
    const linked = await t
      .http()
      .post('/api/v1/auth/sso/link')
      .set('Cookie', link)
      .send({ password: PASSWORD });
    expect(expectSuccess(linked).user.id).toBe(user.id);
    expect(cookieOf(linked, 'lg_session')).toBeDefined();
    expect((await me(await sso(user.email))).user.id).toBe(user.id);
  });

  it('admits a new person of an allowed domain with the default role (viewer)', async () => {
    const email = `new-${uniqueToken()}@allowed.test`;
    const signedIn = await me(await sso(email));
    expect(signedIn.memberships).toEqual([
      expect.objectContaining({ account_id: accountId, role: 'viewer' }),
    ]);
    const log = expectSuccess(
      await t.http().get('/api/v1/audit-log?action=member.joined').set('X-API-KEY', ownerKey),
    );
    expect(log.data[0]).toMatchObject({ actor: { type: 'user', user_id: signedIn.user.id } });
  });

  it('refuses an unknown email with a clear message, and an unverified one', async () => {
    const email = `stranger-${uniqueToken()}@elsewhere.test`;
    expect(refusal(await sso(email), 400)).toBe(
      `No member has the email ${email}, and its domain is not admitted: ask an owner or admin of your account for an invitation.`,
    );
    expect(refusal(await sso(`unverified:someone-${uniqueToken()}@allowed.test`), 400)).toBe(
      'Your identity provider has not verified your email address (email_verified), so it cannot sign you in.',
    );
    const [row] = await t.dataSource.query('SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]);
    expect(Number(row.n)).toBe(0);
  });

  it('refuses a start from a page at another address than PUBLIC_URL, saying where SSO works', async () => {
    // The sign-in's cookie would stay with 127.0.0.1 while the provider sends the browser to PUBLIC_URL.
    const elsewhere = await t.http().post('/api/v1/auth/sso/start').set('Origin', 'http://127.0.0.1:3000');
    expect(refusal(elsewhere, 400)).toBe(
      `Single sign-on works from ${PUBLIC_URL}/console/ only, where your identity provider sends you back: open the console at that address (or set PUBLIC_URL to the one you use).`,
    );
    expect(cookieOf(elsewhere, 'lg_sso')).toBeUndefined();
    // The console's own page, and a caller that is no browser (no Origin), start as before.
    const here = await t.http().post('/api/v1/auth/sso/start').set('Origin', PUBLIC_URL);
    expect(new URL(expectSuccess(here).authorization_url as string).origin).toBe(provider.issuer);
    expect(cookieOf(here, 'lg_sso')).toBeDefined();
  });

  it('refuses a callback whose state does not match the sign-in, or that has no sign-in cookie', async () => {
    const email = `new-${uniqueToken()}@allowed.test`;
    const mismatch =
      'Single sign-on failed: the answer of the identity provider does not belong to this sign-in (state, nonce or code). Start again.';
    const otherStart = cookieOf(await t.http().post('/api/v1/auth/sso/start'), 'lg_sso')!;
    expect(refusal(await sso(email, (back) => [back, otherStart]), 400)).toBe(mismatch);
    expect(
      refusal(
        await sso(email, (back, cookie) => {
          const forged = new URL(back);
          forged.searchParams.set('state', 'forged-state');
          return [forged, cookie];
        }),
        400,
      ),
    ).toBe(mismatch);
    expect(refusal(await sso(email, (back) => [back, 'lg_other=1']), 400)).toBe(mismatch);
    // Nobody was admitted by the refused answers.
    const [row] = await t.dataSource.query('SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]);
    expect(Number(row.n)).toBe(0);
  });
});
