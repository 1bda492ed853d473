import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { runCli } from '../../src/admin-cli.js';
import { AuthService } from '../../src/auth/auth.service.js';
import { addressGroup } from '../../src/auth/login-limits.js';
import { SessionsService } from '../../src/auth/sessions.service.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { migrations } from '../../src/database/entities.js';
import { makeApiKey, makeProject, makeUser, uniqueToken } from '../factories/index.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';

/**
 * Users' sessions (docs/security.md#sessions): sign-in with email and password, the lg_session cookie,
 * CSRF on writes, idle and absolute expiry on a moved clock, failed-login limits, password changes.
 */

const PASSWORD = 'correct horse battery';
const HOUR = 3_600_000;
let addressSeq = 0;
/** Each test signs in from an address of its own (TRUST_PROXY=loopback), so limits do not leak between them. */
const newAddress = () => `198.51.100.${++addressSeq}`;

describe('sessions', () => {
  let t: TestApp;
  const clock = new ManualClock();

  beforeAll(async () => {
    t = await createTestApp({ TRUST_PROXY: 'loopback', THROTTLE_API_LIMIT: '100000' }, { clock });
  }, 120_000);
  afterAll(async () => t.close());

  /** A user with an account of their own; null: one with no password (who signs in only with keys). */
  async function person(password: string | null = PASSWORD) {
    return makeUser(t.app, { email: `p-${uniqueToken()}@example.test`, password: password ?? undefined });
  }

  function login(email: string, password: string, address = '198.51.100.250') {
    return t.http().post('/api/v1/auth/login').set('X-Forwarded-For', address).send({ email, password });
  }

  /** Signs in; returns the Cookie header to send back and the csrf_token. */
  async function signIn(email: string, password = PASSWORD) {
    const res = await login(email, password, newAddress());
    const data = expectSuccess(res);
    const cookie = (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    return { cookie, csrf: data.csrf_token as string, data };
  }

  it('signs in: the cookie is HttpOnly, SameSite=Strict, Path=/, not Secure over http; the answer names the memberships', async () => {
    const user = await person();
    const res = await login(user.email.toUpperCase(), PASSWORD, newAddress());
    const data = expectSuccess(res);
    const [cookie] = res.headers['set-cookie'] as unknown as string[];
    expect(cookie).toMatch(/^lg_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).toMatch(/; Max-Age=604800/);
    expect(cookie).not.toMatch(/Secure/);
    expect(data.user).toEqual({ id: user.id, email: user.email, name: null });
    expect(data.memberships).toEqual([expect.objectContaining({ role: 'owner', project_ids: null })]);
    expect(data.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(data)).not.toMatch(/password|argon/i);
    // Stored hashed: neither the token nor the password is in the database.
    const token = cookie.split(';')[0].slice('lg_session='.length);
    const [row] = await t.dataSource.query('SELECT token_hash FROM sessions WHERE user_id = ?', [user.id]);
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.token_hash).not.toContain(token);
    const [stored] = await t.dataSource.query('SELECT password_hash FROM users WHERE id = ?', [user.id]);
    expect(stored.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('answers a wrong password, an unknown email and a user without a password alike', async () => {
    const user = await person();
    const keyOnly = await person(null);
    const address = newAddress();
    const wrong = expectError(await login(user.email, 'not the password!', address), 401);
    const unknown = expectError(await login(`nobody-${uniqueToken()}@example.test`, PASSWORD, address), 401);
    const noPassword = expectError(await login(keyOnly.email, PASSWORD, address), 401);
    expect(wrong.message).toBe('The email or password is incorrect.');
    expect(unknown).toEqual(wrong);
    expect(noPassword).toEqual(wrong);
  });

  it('refuses bad bodies with 422, never 500', async () => {
    const address = newAddress();
    expectError(await login('', '', address), 422, ['email', 'password']);
    const long = expectError(await login('a@example.test', 'x'.repeat(1025), address), 422, ['password']);
    expect(long.errors.password).toEqual(['The password field must not be greater than 1024 characters.']);
    expectError(
      await t
        .http()
        .post('/api/v1/auth/login')
        .send({ email: ['a'], password: 5 }),
      422,
      ['email', 'password'],
    );
  });

  it('GET /auth/me answers the same csrf_token; without a cookie 401', async () => {
    const user = await person();
    const { cookie, csrf } = await signIn(user.email);
    const me = expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', cookie));
    expect(me.csrf_token).toBe(csrf);
    expect(me.user.email).toBe(user.email);
    const none = expectError(await t.http().get('/api/v1/auth/me'), 401);
    expect(none.message).toBe('Not signed in: sign in with POST /api/v1/auth/login.');
    const keyed = expectError(
      await t
        .http()
        .get('/api/v1/auth/me')
        .set('X-API-KEY', await makeApiKey(t.app, user)),
      403,
    );
    expect(keyed.message).toBe(
      'This route is for a person signed in with a session; an API key has none (see GET /api/v1/api-keys/current).',
    );
    const made = expectError(
      await t
        .http()
        .get('/api/v1/auth/me')
        .set('Cookie', `lg_session=${'A'.repeat(43)}`),
      401,
    );
    expect(made.message).toBe('Your session has ended: sign in again.');
  });

  it('manages with the cookie: reads without CSRF, writes only with X-CSRF-Token; audited as the user', async () => {
    const user = await person();
    const { cookie, csrf } = await signIn(user.email);
    const refused = expectError(
      await t.http().post('/api/v1/project').set('Cookie', cookie).send({ name: 'No CSRF' }),
      403,
    );
    expect(refused.message).toBe(
      'This request was made with a session cookie but without a valid X-CSRF-Token header: send the csrf_token of GET /api/v1/auth/me.',
    );
    expectError(
      await t
        .http()
        .post('/api/v1/project')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A'))
        .send({ name: 'Wrong CSRF' }),
      403,
    );
    const project = expectSuccess(
      await t
        .http()
        .post('/api/v1/project')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', csrf)
        .send({ name: 'With CSRF' }),
      201,
    );
    const listed = expectSuccess(await t.http().get('/api/v1/project').set('Cookie', cookie));
    expect(listed.data.map((p: { id: number }) => p.id)).toEqual([project.id]);
    const log = expectSuccess(await t.http().get('/api/v1/audit-log').set('Cookie', cookie));
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({
      action: 'project.created',
      actor: { type: 'user', user_id: user.id, api_key_id: null, api_key_prefix: null },
    });
    // Nothing was written by the refused requests.
    const [{ n }] = await t.dataSource.query('SELECT COUNT(*) AS n FROM projects WHERE user_id = ?', [
      user.id,
    ]);
    expect(Number(n)).toBe(1);
  });

  it('lets the API key decide when a key and a cookie are both sent', async () => {
    const user = await person();
    const other = await makeUser(t.app);
    const otherKey = await makeApiKey(t.app, other);
    const mine = await makeProject(t, await makeApiKey(t.app, user));
    const theirs = await makeProject(t, otherKey);
    const { cookie } = await signIn(user.email);
    const listed = expectSuccess(
      await t.http().get('/api/v1/project').set('Cookie', cookie).set('X-API-KEY', otherKey),
    );
    expect(listed.data.map((p: { id: number }) => p.id)).toEqual([theirs.id]);
    // A key's write needs no CSRF token, cookie or not; a bad key is refused although the cookie is good.
    expectSuccess(
      await t
        .http()
        .post('/api/v1/project')
        .set('Cookie', cookie)
        .set('X-API-KEY', otherKey)
        .send({ name: 'k' }),
      201,
    );
    const bad = expectError(
      await t
        .http()
        .get('/api/v1/project')
        .set('Cookie', cookie)
        .set('X-API-KEY', `lg_${'x'.repeat(43)}`),
      403,
    );
    expect(bad.message).toBe('Invalid API key.');
    expect(mine.id).not.toBe(theirs.id);
  });

  it('ends a session after 12 hours idle, and after 7 days however busy', async () => {
    const user = await person();
    const idle = await signIn(user.email);
    clock.advance(12 * HOUR - 1000);
    expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', idle.cookie));
    clock.advance(12 * HOUR - 1000);
    expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', idle.cookie));
    clock.advance(12 * HOUR);
    const ended = expectError(await t.http().get('/api/v1/auth/me').set('Cookie', idle.cookie), 401);
    expect(ended.message).toBe('Your session has ended: sign in again.');

    const busy = await signIn(user.email);
    for (let hours = 0; hours < 7 * 24 - 11; hours += 11) {
      clock.advance(11 * HOUR);
      expectSuccess(await t.http().get('/api/v1/project').set('Cookie', busy.cookie));
    }
    clock.advance(11 * HOUR);
    expectError(await t.http().get('/api/v1/project').set('Cookie', busy.cookie), 401);
  });

  it('prunes expired sessions', async () => {
    const user = await person();
    await signIn(user.email);
    await signIn(user.email);
    const count = async () =>
      Number(
        (await t.dataSource.query('SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?', [user.id]))[0].n,
      );
    expect(await count()).toBe(2);
    await t.app.get(SessionsService).prune();
    expect(await count()).toBe(2);
    clock.advance(12 * HOUR + 1000);
    expect(await t.app.get(SessionsService).prune()).toBeGreaterThanOrEqual(2);
    expect(await count()).toBe(0);
  });

  it('limits failed sign-ins per email and address: 10, then 429 even for the right password, alike for unknown emails', async () => {
    const user = await person();
    const address = newAddress();
    for (let i = 0; i < 10; i++) expectError(await login(user.email, `wrong password ${i}`, address), 401);
    const limited = expectError(await login(user.email, PASSWORD, address), 429);
    expect(limited.message).toMatch(/^Too many failed sign-ins\. Retry after \d+ seconds\.$/);
    const blocked = await login(user.email, PASSWORD, address);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(800);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(900);

    const ghost = `ghost-${uniqueToken()}@example.test`;
    for (let i = 0; i < 10; i++) expectError(await login(ghost, `wrong password ${i}`, address), 401);
    expect(expectError(await login(ghost, PASSWORD, address), 429).message).toBe(limited.message);

    // Another address is not limited for this email; after 15 minutes this one is not either.
    expectSuccess(await login(user.email, PASSWORD, newAddress()));
    clock.advance(15 * 60_000);
    expectSuccess(await login(user.email, PASSWORD, address));
  });

  it('limits failed sign-ins per address: 30 across emails', async () => {
    const user = await person();
    const address = newAddress();
    for (let i = 0; i < 30; i++)
      expectError(await login(`spray-${i}-${uniqueToken()}@example.test`, 'wrong password!', address), 401);
    expectError(await login(user.email, PASSWORD, address), 429);
    expectSuccess(await login(user.email, PASSWORD, newAddress()));
    clock.advance(15 * 60_000);
  });

  it('groups IPv6 addresses by /64', () => {
    expect(addressGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
  });

  it('a password change ends the other sessions and keeps this one', async () => {
    const user = await person();
    const here = await signIn(user.email);
    const elsewhere = await signIn(user.email);
    const next = 'a new and longer passphrase';
    expectError(
      await t
        .http()
        .post('/api/v1/auth/password')
        .set('Cookie', here.cookie)
        .send({ current_password: PASSWORD, new_password: next }),
      403,
    );
    const short = expectError(
      await t
        .http()
        .post('/api/v1/auth/password')
        .set('Cookie', here.cookie)
        .set('X-CSRF-Token', here.csrf)
        .send({ current_password: PASSWORD, new_password: 'too short' }),
      422,
      ['new_password'],
    );
    expect(short.errors.new_password).toEqual(['The new password must be at least 12 characters.']);
    const wrong = expectError(
      await t
        .http()
        .post('/api/v1/auth/password')
        .set('Cookie', here.cookie)
        .set('X-CSRF-Token', here.csrf)
        .send({ current_password: 'not my password', new_password: next }),
      403,
    );
    expect(wrong.message).toBe('The current password is incorrect.');
    expectSuccess(
      await t
        .http()
        .post('/api/v1/auth/password')
        .set('Cookie', here.cookie)
        .set('X-CSRF-Token', here.csrf)
        .send({ current_password: PASSWORD, new_password: next }),
    );
    expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', here.cookie));
    expectError(await t.http().get('/api/v1/auth/me').set('Cookie', elsewhere.cookie), 401);
    expectError(await login(user.email, PASSWORD, newAddress()), 401);
    expectSuccess(await login(user.email, next, newAddress()));
  });

  it('signs out: CSRF needed, the session ends and the cookie is cleared', async () => {
    const user = await person();
    const { cookie, csrf } = await signIn(user.email);
    expectError(await t.http().post('/api/v1/auth/logout').set('Cookie', cookie), 403);
    const res = await t.http().post('/api/v1/auth/logout').set('Cookie', cookie).set('X-CSRF-Token', csrf);
    expect(expectSuccess(res)).toBeNull();
    expect((res.headers['set-cookie'] as unknown as string[])[0]).toMatch(
      /^lg_session=; .*Expires=Thu, 01 Jan 1970/,
    );
    expectError(await t.http().get('/api/v1/auth/me').set('Cookie', cookie), 401);
  });

  it('CLI: users:create --password-stdin and users:set-password, which ends every session', async () => {
    const email = `cli-${uniqueToken()}@example.test`;
    const cli = async (stdin: string, ...args: string[]) => {
      let out = '';
      const code = await runCli(args, {
        env: {
          ...process.env,
          DATABASE_URL: t.config.env.DATABASE_URL,
          APP_KEY: t.config.appKey.toString('base64'),
          LOG_LEVEL: 'silent',
        },
        stdin: async () => stdin,
        out: (text) => (out += text),
        err: () => undefined,
      });
      return { code, out: JSON.parse(out.trim()) as Record<string, unknown> };
    };
    const short = await cli('short\n', 'users:create', '--email', email, '--password-stdin');
    expect(short).toEqual({ code: 1, out: { error: 'The password must be at least 12 characters.' } });
    const created = await cli(`${PASSWORD}\n`, 'users:create', '--email', email, '--password-stdin');
    expect(created.code).toBe(0);
    expect(JSON.stringify(created.out)).not.toMatch(/password/);
    const session = await signIn(email);
    const reset = await cli('another long password\n', 'users:set-password', '--email', email);
    expect(reset).toEqual({ code: 0, out: { id: created.out.id, email, sessions_ended: true } });
    expectError(await t.http().get('/api/v1/auth/me').set('Cookie', session.cookie), 401);
    await signIn(email, 'another long password');
    expect((await cli('', 'users:set-password', '--email', email)).out).toEqual({
      error: 'the password is read from standard input, which was empty',
    });
  });
});

describe('secure cookie', () => {
  it('is Secure when PUBLIC_URL is https', async () => {
    const t = await createTestApp({ PUBLIC_URL: 'https://licenses.example.com' });
    try {
      const user = await t.app
        .get(AuthService)
        .createUser({ email: 'secure@example.test', password: PASSWORD });
      const res = await t.http().post('/api/v1/auth/login').send({ email: user.email, password: PASSWORD });
      expectSuccess(res);
      expect((res.headers['set-cookie'] as unknown as string[])[0]).toMatch(/; Secure/);
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe('migration to accounts', () => {
  it('makes each existing user the owner of an account; their keys keep acting as it', async () => {
    const db = await createTestDatabase();
    const before = migrations.filter((m) => m.name !== 'Teams1764400000000');
    const ds = await new DataSource({ ...dataSourceOptions(db.url), migrations: before }).initialize();
    try {
      await ds.runMigrations();
      await ds.query(
        "INSERT INTO users (email, can_create_licenses, webhooks_enabled, created_at, updated_at) VALUES ('old@example.test', 1, 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
      );
      await ds.query(
        "INSERT INTO users (email, can_create_licenses, webhooks_enabled, created_at, updated_at) VALUES ('older@example.test', 1, 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
      );
      await ds.destroy();
      const after = await new DataSource({ ...dataSourceOptions(db.url), migrations }).initialize();
      try {
        await after.runMigrations();
        const rows = await after.query(
          'SELECT u.email, m.role, m.project_ids, a.holder_user_id = u.id AS holds FROM users u JOIN memberships m ON m.user_id = u.id JOIN accounts a ON a.id = m.account_id ORDER BY u.id',
        );
        expect(
          rows.map((r: Record<string, unknown>) => [r.email, r.role, r.project_ids, Number(r.holds)]),
        ).toEqual([
          ['old@example.test', 'owner', null, 1],
          ['older@example.test', 'owner', null, 1],
        ]);
      } finally {
        await after.destroy();
      }
    } finally {
      if (ds.isInitialized) await ds.destroy();
      await db.drop();
    }
  }, 120_000);
});
