import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { smtpOptions } from '../../src/auth/mailer.js';
import { oidcTimeoutSeconds, SSO_UNREACHABLE } from '../../src/auth/sso.service.js';
import { loadConfig } from '../../src/config/app-config.js';
import { makeApiKey, makeUser, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { startSilentServer } from '../utils/silent-server.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * An SMTP server or identity provider that accepts the connection and never answers: the request
 * that needs it answers within SMTP_TIMEOUT_MS / OIDC_TIMEOUT_MS (short here), never hangs.
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
  it('SMTP_TIMEOUT_MS (10 s) reaches every timeout of the transport; OIDC_TIMEOUT_MS (5 s) the client', () => {
    const { env } = loadConfig({ APP_KEY: Buffer.alloc(32, 7).toString('base64') }, () => undefined);
    expect(env.SMTP_TIMEOUT_MS).toBe(10_000);
    expect(smtpOptions('smtp://mail.example.test', env.SMTP_TIMEOUT_MS)).toEqual({
      url: 'smtp://mail.example.test',
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 10_000,
      dnsTimeout: 10_000,
    });
    expect(env.OIDC_TIMEOUT_MS).toBe(5000);
    expect(oidcTimeoutSeconds(env.OIDC_TIMEOUT_MS)).toBe(5);
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

describe('an identity provider that never answers', () => {
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  let discovery: Server;
  const apps: TestApp[] = [];

  const sso = (issuer: string) =>
    createTestApp({
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: 'licensegate',
      OIDC_CLIENT_SECRET: 'a-test-client-secret-of-some-length',
      OIDC_TIMEOUT_MS: String(TIMEOUT_MS),
      PUBLIC_URL,
      THROTTLE_API_LIMIT: '100000',
    }).then((t) => (apps.push(t), t));

  beforeAll(async () => {
    silent = await startSilentServer();
    // A provider whose discovery answers, and whose token endpoint is the silent server.
    discovery = createServer((req, res) => {
      const issuer = `http://127.0.0.1:${(discovery.address() as AddressInfo).port}`;
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `http://127.0.0.1:${silent.port}/token`,
          jwks_uri: `http://127.0.0.1:${silent.port}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    await new Promise<void>((resolve) => discovery.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    await silent?.close();
    await new Promise((resolve) => discovery?.close(resolve));
  });

  it('a discovery that hangs: POST /auth/sso/start answers 502 within the bound', async () => {
    const t = await sso(`http://127.0.0.1:${silent.port}`);
    const [res, ms] = await timed(() => t.http().post('/api/v1/auth/sso/start'));
    expectError(res, 502);
    expect(res.body.message).toBe(SSO_UNREACHABLE);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(WITHIN_MS);
  }, 30_000);

  it('a token exchange that hangs: POST /auth/sso/callback answers 502 within the bound', async () => {
    const t = await sso(`http://127.0.0.1:${(discovery.address() as AddressInfo).port}`);
    const start = await t.http().post('/api/v1/auth/sso/start');
    const { authorization_url } = expectSuccess(start);
    const state = new URL(authorization_url as string).searchParams.get('state')!;
    const cookie = (start.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    const [res, ms] = await timed(() =>
      t
        .http()
        .post('/api/v1/auth/sso/callback')
        .set('Cookie', cookie)
        .send({ query: `?code=a-code&state=${state}` }),
    );
    expectError(res, 502);
    expect(res.body.message).toBe(SSO_UNREACHABLE);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(WITHIN_MS);
  }, 30_000);
});
