import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ACCOUNT_EXISTS, AuthService } from '../../src/auth/auth.service.js';
import { FAILURES_PER_EMAIL_AND_ADDRESS, LOGIN_WINDOW_MS } from '../../src/auth/login-limits.js';
import { tooManyLogins } from '../../src/auth/sessions.service.js';
import { SetupService, WRONG_SETUP_CODE } from '../../src/auth/setup.service.js';
import { ApiError } from '../../src/common/http/errors.js';
import { makeUser, uniqueToken } from '../factories/index.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';

/**
 * The first account, made in the browser (docs/security.md#the-first-account): a service started on a
 * database without any user holds a setup code; with it, the first user is made and signed in.
 */

const PASSWORD = 'correct horse battery';
let addressSeq = 0;
/** Each test calls from an address of its own (TRUST_PROXY=loopback), so limits do not leak between them. */
const newAddress = () => `203.0.113.${++addressSeq}`;
const ENV = { TRUST_PROXY: 'loopback', THROTTLE_API_LIMIT: '100000' };

const countUsers = async (t: TestApp) =>
  Number((await t.dataSource.query('SELECT COUNT(*) AS n FROM users'))[0].n as number | string);

function setup(t: TestApp, body: Record<string, unknown>, address = newAddress()) {
  return t.http().post('/api/v1/auth/setup').set('X-Forwarded-For', address).send(body);
}

const needed = async (t: TestApp) =>
  expectSuccess(await t.http().get('/api/v1/auth/setup')).needed as boolean;

describe('the first account', () => {
  let t: TestApp;
  let code: string;
  const clock = new ManualClock();

  beforeAll(async () => {
    t = await createTestApp(ENV, { clock });
    code = t.app.get(SetupService).pendingCode!;
  }, 120_000);
  afterAll(async () => t.close());

  it('a database without users: a code of 32 random bytes, and GET /auth/setup says one is needed', async () => {
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await needed(t)).toBe(true);
  });

  it('refuses another code with 403, and creates nothing', async () => {
    const email = `wrong-${uniqueToken()}@example.test`;
    for (const wrong of [`${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`, 'short', `${code}x`]) {
      const refused = expectError(await setup(t, { code: wrong, email, password: PASSWORD }), 403);
      expect(refused.message).toBe(WRONG_SETUP_CODE);
    }
    expect(await countUsers(t)).toBe(0);
  });

  it('counts wrong codes like failed sign-ins: 10 from an address, then 429 even with the right code', async () => {
    const address = newAddress();
    const email = `limited-${uniqueToken()}@example.test`;
    for (let i = 0; i < FAILURES_PER_EMAIL_AND_ADDRESS; i++)
      expectError(await setup(t, { code: `guess-${i}`, email, password: PASSWORD }, address), 403);
    const limited = await setup(t, { code, email, password: PASSWORD }, address);
    expect(expectError(limited, 429).message).toBe(tooManyLogins(LOGIN_WINDOW_MS / 1000));
    expect(limited.headers['retry-after']).toBe(String(LOGIN_WINDOW_MS / 1000));
    expect(await countUsers(t)).toBe(0);
    // Another address is not held back, and this one again once the window has passed.
    clock.advance(LOGIN_WINDOW_MS);
    expectError(await setup(t, { code: 'guess-again', email, password: PASSWORD }, address), 403);
  });

  it('names the field of a bad body with 422, and the code keeps working', async () => {
    const email = `bad-${uniqueToken()}@example.test`;
    const short = expectError(await setup(t, { code, email, password: 'too short' }), 422, ['password']);
    expect(short.errors.password).toEqual(['The password must be at least 12 characters.']);
    const badEmail = expectError(await setup(t, { code, email: 'not-an-email', password: PASSWORD }), 422, [
      'email',
    ]);
    expect(badEmail.errors.email).toEqual(['The email must be a valid email address.']);
    const missing = expectError(await setup(t, { email, password: PASSWORD }), 422, ['code']);
    expect(missing.errors.code).toEqual(['The code field is required.']);
    expect(await countUsers(t)).toBe(0);
    expect(t.app.get(SetupService).pendingCode).toBe(code);
  });

  it('creates the owner of a new account, signs them in as POST /auth/login does; then the code no longer works', async () => {
    const email = `First-${uniqueToken()}@Example.test`;
    const res = await setup(t, { code, email, password: PASSWORD });
    const data = expectSuccess(res);
    const [cookie] = res.headers['set-cookie'] as unknown as string[];
    expect(cookie).toMatch(/^lg_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(Object.keys(data).sort()).toEqual([
      'account_id',
      'csrf_token',
      'expires_at',
      'memberships',
      'user',
    ]);
    expect(data.user).toEqual({ id: expect.any(Number), email: email.toLowerCase(), name: null });
    expect(data.memberships).toEqual([
      { id: expect.any(Number), account_id: data.account_id, role: 'owner', project_ids: null },
    ]);
    expect(JSON.stringify(data)).not.toMatch(/password|argon/i);
    const [account] = await t.dataSource.query('SELECT holder_user_id FROM accounts WHERE id = ?', [
      data.account_id,
    ]);
    expect(account.holder_user_id).toBe(data.user.id);
    const [stored] = await t.dataSource.query('SELECT password_hash FROM users WHERE id = ?', [data.user.id]);
    expect(stored.password_hash).toMatch(/^\$argon2id\$/);

    // The session works, for reads and (with the csrf_token) writes.
    const me = expectSuccess(await t.http().get('/api/v1/auth/me').set('Cookie', cookie.split(';')[0]));
    expect(me.user).toEqual(data.user);
    expect(me.csrf_token).toBe(data.csrf_token);
    const project = await t
      .http()
      .post('/api/v1/project')
      .set('Cookie', cookie.split(';')[0])
      .set('X-CSRF-Token', data.csrf_token)
      .send({ name: 'First project' });
    expectSuccess(project, 201);
    // The same password signs in.
    expectSuccess(
      await t
        .http()
        .post('/api/v1/auth/login')
        .set('X-Forwarded-For', newAddress())
        .send({ email, password: PASSWORD }),
    );

    // Used: nothing more is needed, and the same code (or any other) is answered 409.
    expect(await needed(t)).toBe(false);
    expect(t.app.get(SetupService).pendingCode).toBeNull();
    for (const again of [code, 'another code'])
      expect(
        expectError(
          await setup(t, { code: again, email: `second-${uniqueToken()}@example.test`, password: PASSWORD }),
          409,
        ).message,
      ).toBe(ACCOUNT_EXISTS);
    expect(await countUsers(t)).toBe(1);
  });
});

describe('the first account on a database that has a user', () => {
  it('holds no code, says none is needed and answers 409 to any code', async () => {
    const t = await createTestApp(ENV);
    try {
      // A user made after start (the CLI, say): the code this process held is refused from then on.
      const code = t.app.get(SetupService).pendingCode!;
      await makeUser(t.app, { email: `cli-${uniqueToken()}@example.test` });
      expect(await needed(t)).toBe(false);
      const refused = await setup(t, {
        code,
        email: `late-${uniqueToken()}@example.test`,
        password: PASSWORD,
      });
      expect(expectError(refused, 409).message).toBe(ACCOUNT_EXISTS);

      // Started again on it: no code at all.
      const again = await createTestApp(ENV, { databaseUrl: t.config.env.DATABASE_URL });
      try {
        expect(again.app.get(SetupService).pendingCode).toBeNull();
        expect(await needed(again)).toBe(false);
      } finally {
        await again.close();
      }
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe('two setups at once', () => {
  it('on two instances of one database, each with its own code: one owner, the other 409', async () => {
    const db = await createTestDatabase();
    const a = await createTestApp(ENV, { databaseUrl: db.url });
    const b = await createTestApp(ENV, { databaseUrl: db.url });
    try {
      const [first, second] = await Promise.all(
        [a, b].map((t) =>
          setup(t, {
            code: t.app.get(SetupService).pendingCode,
            email: `race-${uniqueToken()}@example.test`,
            password: PASSWORD,
          }),
        ),
      );
      expect([first.status, second.status].sort()).toEqual([200, 409]);
      expect([first, second].find((res) => res.status === 409)?.body.message).toBe(ACCOUNT_EXISTS);
      expect(await countUsers(a)).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  }, 120_000);

  it('decided inside the unit of work: of concurrent first users, one is made and the others refused', async () => {
    const t = await createTestApp(ENV);
    try {
      const auth = t.app.get(AuthService);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 4 }, () =>
          auth.createUser({ email: `unit-${uniqueToken()}@example.test`, password: PASSWORD, first: true }),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(
        refused.map((o) => [(o.reason as ApiError).getStatus(), (o.reason as ApiError).message]),
      ).toEqual(Array(3).fill([409, ACCOUNT_EXISTS]));
      expect(await countUsers(t)).toBe(1);
      // Without `first` (users:create, invitations) users are made whatever exists.
      await auth.createUser({ email: `cli-${uniqueToken()}@example.test` });
      expect(await countUsers(t)).toBe(2);
    } finally {
      await t.close();
    }
  }, 120_000);
});
