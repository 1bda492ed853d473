import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { smtpOptions } from '../../src/auth/mailer.js';
import { loadConfig } from '../../src/config/app-config.js';
import { makeApiKey, makeUser, uniqueToken } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { startSilentServer } from '../utils/silent-server.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * An SMTP server that accepts the connection and never answers: the request
 * that needs it answers within SMTP_TIMEOUT_MS (short here), never hangs.
 */

const PUBLIC_URL = 'https://licenses.example.test';
const TIMEOUT_MS = 300;
/** Room for a loaded machine above the configured bound; far below nodemailer's and openid-client's own waits. */
const WITHIN_MS = TIMEOUT_MS + 2500;

async function timed<T>(run: () => PromiseLike<T>): Promise<[T, number]> {
  const at = Date.now();
  const result = await run();
  return [result, Date.now() - at];
}

describe('the defaults bound every wait', () => {
  it('SMTP_TIMEOUT_MS (10 s) reaches every timeout of the transport', () => {
    const { env } = loadConfig({ APP_KEY: Buffer.alloc(32, 7).toString('base64') }, () => undefined);
    expect(env.SMTP_TIMEOUT_MS).toBe(10_000);
    expect(smtpOptions('smtp://mail.example.test', env.SMTP_TIMEOUT_MS)).toEqual({
      url: 'smtp://mail.example.test',
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 10_000,
      dnsTimeout: 10_000,
    });
  });
});

describe('an SMTP server that never answers', () => {
  let t: TestApp;
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  let key: string;

  beforeAll(async () => {
    silent = await startSilentServer();
    t = await createTestApp({
      SMTP_URL: `smtp://127.0.0.1:${silent.port}`,
      SMTP_TIMEOUT_MS: String(TIMEOUT_MS),
      PUBLIC_URL,
      THROTTLE_API_LIMIT: '100000',
    });
    const owner = await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test` });
    key = await makeApiKey(t.app, owner);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await silent?.close();
  });

  it('an invitation is made and answered 201 with mailed: false, within the bound', async () => {
    const email = `new-${uniqueToken()}@example.test`;
    const before = silent.connections();
    const [res, ms] = await timed(() =>
      t.http().post('/api/v1/members/invitations').set('X-API-KEY', key).send({ email, role: 'viewer' }),
    );
    const invited = expectSuccess(res, 201);
    expect(invited).toMatchObject({ email, role: 'viewer', mailed: false });
    expect(invited.invitation_url).toMatch(/^https:\/\/licenses\.example\.test\/console\/#\/invitation\//);
    expect(silent.connections()).toBe(before + 1);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(WITHIN_MS);
  });

  it('a password reset answers 202 within the bound; its link is stored all the same', async () => {
    const user = await makeUser(t.app, { email: `reset-${uniqueToken()}@example.test` });
    const [res, ms] = await timed(() =>
      t.http().post('/api/v1/auth/password-reset').send({ email: user.email }),
    );
    expectSuccess(res, 202);
    expect(ms).toBeLessThan(WITHIN_MS);
    const [row] = await t.dataSource.query('SELECT COUNT(*) AS n FROM password_resets WHERE user_id = ?', [
      user.id,
    ]);
    expect(Number(row.n)).toBe(1);
  });
});
