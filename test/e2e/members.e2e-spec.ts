import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountEntity } from '../../src/auth/account.entity.js';
import { AuthService } from '../../src/auth/auth.service.js';
import type { Role } from '../../src/auth/roles.js';
import { SSO_NOT_CONFIGURED } from '../../src/auth/sso.service.js';
import type { UserEntity } from '../../src/auth/user.entity.js';
import { makeApiKey, makeProject, makeUser, uniqueToken } from '../factories/index.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { startSmtp } from '../utils/smtp.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Members and invitations (docs/security.md#members-and-invitations): invite, accept once, expiry on
 * a moved clock, the owner rules, removal revoking keys, and password resets mailed through a local
 * SMTP server.
 */

type Json = Record<string, any>;
const PASSWORD = 'correct horse battery';
const HOUR = 3_600_000;
let addressSeq = 0;
const newAddress = () => `203.0.113.${++addressSeq}`;

describe('members', () => {
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await createTestApp(
      {
        TRUST_PROXY: 'loopback',
        THROTTLE_API_LIMIT: '100000',
        SMTP_URL: smtp.url,
        PUBLIC_URL: 'https://licenses.example.test',
      },
      { clock },
    );
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  /** A fresh account: its owner (with a password), the owner's key and the account id. */
  async function account() {
    const owner = await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test`, password: PASSWORD });
    const key = await makeApiKey(t.app, owner);
    const { id } = await t.dataSource
      .getRepository(AccountEntity)
      .findOneByOrFail({ holder_user_id: owner.id });
    return { owner, key, accountId: id, headers: { 'X-API-KEY': key } as Record<string, string> };
  }

  /** A member of `accountId` with `role`, signed in: their user, membership id and session headers. */
  async function member(accountId: number, role: Role) {
    const email = `${role}-${uniqueToken()}@example.test`;
    const user = await t.app
      .get(AuthService)
      .createUser({ email, password: PASSWORD, joins: { account_id: accountId, role, project_ids: null } });
    return { user, ...(await signIn(email)), membershipId: await membershipId(accountId, user) };
  }

  async function membershipId(accountId: number, user: UserEntity): Promise<number> {
    const [row] = await t.dataSource.query(
      'SELECT id FROM memberships WHERE account_id = ? AND user_id = ?',
      [accountId, user.id],
    );
    return Number(row.id);
  }

  async function signIn(email: string, password = PASSWORD) {
    const res = await t
      .http()
      .post('/api/v1/auth/login')
      .set('X-Forwarded-For', newAddress())
      .send({ email, password });
    const data = expectSuccess(res);
    const cookie = (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    return { headers: { Cookie: cookie, 'X-CSRF-Token': data.csrf_token as string }, data };
  }

  function send(method: string, path: string, headers: Record<string, string>, body?: object) {
    let req = t.http()[method.toLowerCase() as 'post'](path).set('X-Forwarded-For', newAddress());
    for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
    return body === undefined ? req : req.send(body);
  }

  const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);

  /** POST /auth/invitations/{token}/accept, signed out. */
  const accept = (token: string, body: object) =>
    send('POST', `/api/v1/auth/invitations/${token}/accept`, {}, body);

  it('invites: the URL is shown once and mailed, the token stored hashed; accepting creates the member with the role', async () => {
    const { headers, accountId, owner } = await account();
    const email = `new-${uniqueToken()}@example.test`;
    const invited = expectSuccess(
      await send('POST', '/api/v1/members/invitations', headers, {
        email: email.toUpperCase(),
        role: 'developer',
      }),
      201,
    );
    expect(invited).toMatchObject({ email, role: 'developer', project_ids: null, mailed: true });
    expect(invited.invitation_url).toMatch(
      /^https:\/\/licenses\.example\.test\/console\/#\/invitation\/[A-Za-z0-9_-]{43}$/,
    );
    expect(Date.parse(invited.expires_at) - clock.nowMs()).toBeGreaterThan(72 * HOUR - 2000);
    expect(Date.parse(invited.expires_at) - clock.nowMs()).toBeLessThanOrEqual(72 * HOUR);
    const token = tokenOf(invited.invitation_url);
    const [row] = await t.dataSource.query('SELECT token_hash FROM invitations WHERE id = ?', [invited.id]);
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.token_hash).not.toContain(token);
    const mail = smtp.mails.find((m) => m.to.includes(email))!;
    expect(mail.text).toContain(invited.invitation_url);
    expect(mail.text).toContain('as developer');

    const listed = expectSuccess(await send('GET', '/api/v1/members/invitations', headers));
    expect(listed.map((i: Json) => i.id)).toEqual([invited.id]);
    expect(JSON.stringify(listed)).not.toContain(token);

    const accepted = await accept(token, { password: PASSWORD });
    const session = expectSuccess(accepted);
    expect(session.user.email).toBe(email);
    expect(session.memberships).toEqual([
      expect.objectContaining({ account_id: accountId, role: 'developer' }),
    ]);
    expect((accepted.headers['set-cookie'] as unknown as string[])[0]).toMatch(/^lg_session=/);
    const members = expectSuccess(await send('GET', '/api/v1/members', headers));
    expect(members.map((m: Json) => [m.email, m.role])).toEqual([
      [owner.email, 'owner'],
      [email, 'developer'],
    ]);
    expect(members[1]).toMatchObject({ has_password: true, has_sso: false, project_ids: null });
    expect(expectSuccess(await send('GET', '/api/v1/members/invitations', headers))).toEqual([]);
    // The new member signs in with their password and works with their role.
    const signedIn = await signIn(email);
    expectSuccess(
      await send('POST', '/api/v1/project', signedIn.headers, { name: `P ${uniqueToken()}` }),
      201,
    );

    const again = expectError(await accept(token, { password: PASSWORD }), 409);
    expect(again.message).toBe('This invitation has already been used.');

    const log = expectSuccess(await send('GET', '/api/v1/audit-log?per_page=10', headers));
    const actions = log.data.map((e: Json) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['member.invited', 'member.joined']));
    const joined = log.data.find((e: Json) => e.action === 'member.joined');
    expect(joined.actor).toMatchObject({ type: 'user', user_id: session.user.id });
  });

  it('refuses an expired, revoked or made-up invitation, and bad bodies', async () => {
    const { headers } = await account();
    const invite = async () =>
      expectSuccess(
        await send('POST', '/api/v1/members/invitations', headers, {
          email: `x-${uniqueToken()}@example.test`,
          role: 'viewer',
        }),
        201,
      );
    const expiring = await invite();
    clock.advance(72 * HOUR + 1000);
    try {
      const expired = expectError(
        await accept(tokenOf(expiring.invitation_url), { password: PASSWORD }),
        410,
      );
      expect(expired.message).toBe('This invitation has expired: ask for a new one.');
    } finally {
      clock.advance(-(72 * HOUR + 1000));
    }
    const revoked = await invite();
    expectSuccess(await send('DELETE', `/api/v1/members/invitations/${revoked.id}`, headers));
    const gone = expectError(await accept(tokenOf(revoked.invitation_url), { password: PASSWORD }), 404);
    expect(gone.message).toBe('This invitation is not valid: it may have been revoked. Ask for a new one.');
    expectError(await send('DELETE', `/api/v1/members/invitations/${revoked.id}`, headers), 404);
    expectError(await accept('A'.repeat(43), { password: PASSWORD }), 404);
    expectError(await accept('short', { password: PASSWORD }), 404);

    const fresh = await invite();
    const noPassword = expectError(await accept(tokenOf(fresh.invitation_url), {}), 422, ['password']);
    expect(noPassword.errors.password).toEqual([
      'The password field is required: it is the password of your new user.',
    ]);
    // null is no password either: the same 422, not a 500.
    const nullPassword = expectError(await accept(tokenOf(fresh.invitation_url), { password: null }), 422, [
      'password',
    ]);
    expect(nullPassword.errors).toEqual(noPassword.errors);
    const short = expectError(await accept(tokenOf(fresh.invitation_url), { password: 'short' }), 422, [
      'password',
    ]);
    expect(short.errors.password).toEqual(['The password must be at least 12 characters.']);

    const bad = expectError(
      await send('POST', '/api/v1/members/invitations', headers, {
        email: '',
        role: 'king',
        project_ids: [0],
      }),
      422,
      ['email', 'role', 'project_ids'],
    );
    expect(bad.errors.role).toEqual([
      'The selected role is invalid: use one of owner, admin, developer, support, viewer.',
    ]);
    const foreign = expectError(
      await send('POST', '/api/v1/members/invitations', headers, {
        email: `y-${uniqueToken()}@example.test`,
        role: 'viewer',
        project_ids: [2_000_000_000],
      }),
      422,
      ['project_ids'],
    );
    expect(foreign.errors.project_ids).toEqual([
      'The project ids field names a project that is not in this account.',
    ]);
  });

  it('an email that already has a user accepts while signed in as that user, without a password', async () => {
    const { headers, accountId } = await account();
    const other = await makeUser(t.app, { email: `has-${uniqueToken()}@example.test`, password: PASSWORD });
    const invited = expectSuccess(
      await send('POST', '/api/v1/members/invitations', headers, { email: other.email, role: 'support' }),
      201,
    );
    const path = `/api/v1/auth/invitations/${tokenOf(invited.invitation_url)}/accept`;
    const anonymous = expectError(await send('POST', path, {}, { password: PASSWORD }), 401);
    expect(anonymous.message).toBe(
      'This email already has a user: sign in as that user, then accept the invitation (no password needed).',
    );
    const stranger = await member((await account()).accountId, 'viewer');
    const wrongUser = expectError(await send('POST', path, stranger.headers, {}), 403);
    expect(wrongUser.message).toMatch(/^This invitation is for another email/);
    const { headers: own } = await signIn(other.email);
    expectError(await send('POST', path, { Cookie: own.Cookie }, {}), 403);
    const accepted = expectSuccess(await send('POST', path, own, {}));
    expect(accepted.memberships.map((m: Json) => [m.account_id, m.role])).toEqual(
      expect.arrayContaining([[accountId, 'support']]),
    );
    const again = expectError(
      await send('POST', '/api/v1/members/invitations', headers, { email: other.email, role: 'viewer' }),
      409,
    );
    expect(again.message).toBe('This email already belongs to a member of the account.');
  });

  it('keeps the last owner (409), lets nobody change their own role (403), and keeps owner changes to owners', async () => {
    const { headers, accountId, owner } = await account();
    const ownerMembership = await membershipId(accountId, owner);
    const demote = expectError(
      await send('PATCH', `/api/v1/members/${ownerMembership}`, headers, { role: 'admin' }),
      409,
    );
    expect(demote.message).toBe(
      "The account's last owner cannot be removed or demoted: make another member owner first.",
    );
    expectError(await send('DELETE', `/api/v1/members/${ownerMembership}`, headers), 409);

    const admin = await member(accountId, 'admin');
    // A role of null is refused like any value that is not a role: 422, the member unchanged.
    const nullRole = expectError(
      await send('PATCH', `/api/v1/members/${admin.membershipId}`, headers, { role: null }),
      422,
      ['role'],
    );
    expect(nullRole.errors.role).toEqual(['The role field must be a string.']);
    const listed = expectSuccess(await send('GET', '/api/v1/members', headers));
    expect(listed.find((m: Json) => m.id === admin.membershipId)?.role).toBe('admin');
    const own = expectError(
      await send('PATCH', `/api/v1/members/${admin.membershipId}`, admin.headers, { role: 'owner' }),
      403,
    );
    expect(own.message).toBe('Nobody changes their own role or projects: ask another owner or admin.');
    const ownerOnly = 'Only an owner may grant, change or remove the owner role.';
    const dev = await member(accountId, 'developer');
    expect(
      expectError(
        await send('PATCH', `/api/v1/members/${dev.membershipId}`, admin.headers, { role: 'owner' }),
        403,
      ).message,
    ).toBe(ownerOnly);
    expect(
      expectError(
        await send('PATCH', `/api/v1/members/${ownerMembership}`, admin.headers, { role: 'viewer' }),
        403,
      ).message,
    ).toBe(ownerOnly);
    expect(
      expectError(await send('DELETE', `/api/v1/members/${ownerMembership}`, admin.headers), 403).message,
    ).toBe(ownerOnly);
    expect(
      expectError(
        await send('POST', '/api/v1/members/invitations', admin.headers, {
          email: `o-${uniqueToken()}@example.test`,
          role: 'owner',
        }),
        403,
      ).message,
    ).toBe(ownerOnly);
    // What an admin may do: change others below owner.
    const project = await makeProject(t, headers['X-API-KEY']);
    const changed = expectSuccess(
      await send('PATCH', `/api/v1/members/${dev.membershipId}`, admin.headers, {
        role: 'support',
        project_ids: [project.id],
      }),
    );
    expect(changed).toMatchObject({ role: 'support', project_ids: [project.id] });
    // A developer may not manage members at all.
    const refused = expectError(
      await send('PATCH', `/api/v1/members/${admin.membershipId}`, dev.headers, { role: 'viewer' }),
      403,
    );
    expect(refused.message).toBe('This action needs the admin role or higher; your role is support.');
    expectSuccess(await send('GET', '/api/v1/members', dev.headers));

    // Two owners: one may step the other down, and then not the last.
    const second = await member(accountId, 'owner');
    expectSuccess(
      await send('PATCH', `/api/v1/members/${ownerMembership}`, second.headers, { role: 'admin' }),
    );
    const last = expectError(
      await send('DELETE', `/api/v1/members/${second.membershipId}`, admin.headers),
      403,
    );
    expect(last.message).toBe(ownerOnly);
    const log = expectSuccess(await send('GET', '/api/v1/audit-log?action=member.updated', headers));
    expect(log.data[0]).toMatchObject({
      action: 'member.updated',
      actor: { type: 'user', user_id: second.user.id },
    });
    expect(log.data[0].changes.role).toEqual(['owner', 'admin']);
    expectError(await send('PATCH', '/api/v1/members/2000000000', headers, { role: 'viewer' }), 404);
  });

  it('removing a member ends their sessions and revokes the API keys they made', async () => {
    const { headers, accountId } = await account();
    const admin = await member(accountId, 'admin');
    const made = expectSuccess(
      await send('POST', '/api/v1/api-keys', admin.headers, { name: 'theirs' }),
      201,
    );
    expectSuccess(await send('GET', '/api/v1/project', { 'X-API-KEY': made.key }));
    expectSuccess(await send('DELETE', `/api/v1/members/${admin.membershipId}`, headers));
    const [key] = await t.dataSource.query('SELECT revoked_at FROM api_keys WHERE id = ?', [made.id]);
    expect(key.revoked_at).not.toBeNull();
    const gone = expectError(await send('GET', '/api/v1/project', { 'X-API-KEY': made.key }), 403);
    expect(gone.message).toBe('This API key has been revoked.');
    expectError(await send('GET', '/api/v1/project', admin.headers), 401);
    const log = expectSuccess(await send('GET', '/api/v1/audit-log?per_page=5', headers));
    expect(log.data.map((e: Json) => e.action)).toEqual(
      expect.arrayContaining(['member.removed', 'api_key.revoked']),
    );
    // The owner's key made by the CLI is not the removed member's: it works.
    expectSuccess(await send('GET', '/api/v1/members', headers));
  });

  it('resets a forgotten password by mail: always 202, a one-use link, other sessions end', async () => {
    const user = await makeUser(t.app, { email: `reset-${uniqueToken()}@example.test`, password: PASSWORD });
    const before = await signIn(user.email);
    const before_count = smtp.mails.length;
    expectSuccess(
      await send(
        'POST',
        '/api/v1/auth/password-reset',
        {},
        { email: `nobody-${uniqueToken()}@example.test` },
      ),
      202,
    );
    expect(smtp.mails.length).toBe(before_count);
    expectSuccess(
      await send('POST', '/api/v1/auth/password-reset', {}, { email: user.email.toUpperCase() }),
      202,
    );
    const mail = smtp.mails.find((m) => m.to.includes(user.email))!;
    const link = /https:\/\/licenses\.example\.test\/console\/#\/password-reset\/([A-Za-z0-9_-]{43})/.exec(
      mail.text,
    );
    expect(link).not.toBeNull();
    const token = link![1];
    const [row] = await t.dataSource.query('SELECT token_hash FROM password_resets WHERE user_id = ?', [
      user.id,
    ]);
    expect(row.token_hash).not.toContain(token);
    const next = 'a brand new passphrase';
    expectError(await send('POST', `/api/v1/auth/password-reset/${token}`, {}, { password: 'short' }), 422, [
      'password',
    ]);
    expectSuccess(await send('POST', `/api/v1/auth/password-reset/${token}`, {}, { password: next }));
    const reused = expectError(
      await send('POST', `/api/v1/auth/password-reset/${token}`, {}, { password: next }),
      404,
    );
    expect(reused.message).toBe(
      'This password reset link is not valid: it has been used, has expired, or was replaced. Ask for a new one.',
    );
    expectError(await send('GET', '/api/v1/auth/me', before.headers), 401);
    await signIn(user.email, next);
    expectError(
      await t
        .http()
        .post('/api/v1/auth/login')
        .set('X-Forwarded-For', newAddress())
        .send({ email: user.email, password: PASSWORD }),
      401,
    );
  });

  it('limits password-reset requests per email and address (429)', async () => {
    const address = newAddress();
    const email = `limit-${uniqueToken()}@example.test`;
    for (let i = 0; i < 10; i++)
      expectSuccess(
        await t.http().post('/api/v1/auth/password-reset').set('X-Forwarded-For', address).send({ email }),
        202,
      );
    const limited = await t
      .http()
      .post('/api/v1/auth/password-reset')
      .set('X-Forwarded-For', address)
      .send({ email });
    expect(expectError(limited, 429).message).toMatch(
      /^Too many failed sign-ins\. Retry after \d+ seconds\.$/,
    );
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
  });

  it('tells the console how it may sign in', async () => {
    const options = expectSuccess(await t.http().get('/api/v1/auth/config'));
    expect(options).toEqual({ password: true, sso: false, api_key: true, password_reset: true });
  });

  it('with SSO off, its routes say so before validating the body', async () => {
    for (const [path, body] of [
      ['/api/v1/auth/sso/start', {}],
      ['/api/v1/auth/sso/callback', { query: '?code=x&state=y' }],
      // Each would be a 422 about its field if the body were validated first.
      ['/api/v1/auth/sso/callback', { query: null }],
      ['/api/v1/auth/sso/callback', {}],
      ['/api/v1/auth/sso/link', {}],
      ['/api/v1/auth/sso/link', { password: 'correct horse battery' }],
    ] as const) {
      const res = await t.http().post(path).send(body);
      expect({ path, body, message: expectError(res, 404).message }).toEqual({
        path,
        body,
        message: SSO_NOT_CONFIGURED,
      });
    }
  });
});
