import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { AddressInfo, createServer, Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const ROOT = resolve(__dirname, '..', '..');
const EXAMPLE = 'examples/check-and-decrypt.mjs';
const REDIRECT = 'https://pay.example.com/renew';

/**
 * Runs the example in a child process. Asynchronously on purpose: the service under test lives in
 * this process, so spawnSync would block the event loop the child's requests need.
 */
function runExample(
  env: Record<string, string | undefined>,
  script = EXAMPLE,
  command: string[] = [process.execPath, script],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const childEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...env })) if (v !== undefined) childEnv[k] = v;
    const child = spawn(command[0], command.slice(1), {
      cwd: ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', fail);
    child.on('close', (status) => {
      clearTimeout(timer);
      done({ status, stdout, stderr });
    });
  });
}

describe('examples/check-and-decrypt.mjs against the built SDK', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let key: string;
  let project: Record<string, any>;
  let license: Record<string, any>;
  const paidContents: string[] = [];
  let freeContent: string;

  beforeAll(async () => {
    // The SDK is built once for all suites by test/utils/global-setup.cjs.
    expect(existsSync(join(ROOT, 'sdk/dist/index.js'))).toBe(true);
    expect(existsSync(join(ROOT, 'sdk/dist/index.d.ts'))).toBe(true);

    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    project = await makeProject(t, key, { has_paid: true, default_redirect_url: REDIRECT });
    const domain = await makeDomain(t, key, project.id, { has_paid: true });
    // allow_configs: the examples also ask for payloads from a project-level check without a domain (docs/decisions.md#runtime-checks).
    license = await makeLicense(t, key, project.id, { allow_configs: true });
    const signingKey = expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${project.id}/signing-key`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key),
    );
    const secret = `example-${uniqueToken()}`;
    const create = async (body: Record<string, unknown>) =>
      expectSuccess(
        await t
          .http()
          .post(`/api/v1/project/${project.id}/injectables`)
          .set('Accept', 'application/json')
          .set('X-API-KEY', key)
          .send({ slug: `ex-${uniqueToken()}`, type: 'snippet', mode: 'inject', secret, ...body }),
        201,
      );
    for (const content of [
      `<script>window.PRO = "${uniqueToken()}";</script>`,
      `.pro { color: gold } /* ☃ ${uniqueToken()} */`,
    ]) {
      paidContents.push(content);
      await create({ content, only_if_paid: true, target_path: '#pro' });
    }
    freeContent = `free ${uniqueToken()}`;
    await create({ content: freeContent, only_if_paid: false });
    env = {
      LICENSEGATE_URL: `${t.url}/api/v1`,
      LICENSE_KEY: license.uuid,
      SERVICE_DOMAIN: domain.domain,
      INJECTABLE_SECRET: secret,
      PROJECT_ID: String(project.id),
      PUBLIC_KEY: signingKey.public_key,
    };
  }, 120_000);
  afterAll(async () => t?.close());

  it('prints every paid injectable decrypted and verified, exit 0', async () => {
    const run = await runExample(env);
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    for (const content of paidContents) expect(run.stdout).toContain(content);
    expect(run.stdout).not.toContain(freeContent);
    expect(run.stdout).toContain('OK: paid; 2 injectable(s) verified and decrypted.');
  });

  it('without SERVICE_DOMAIN it checks the project; the PEM key works as PUBLIC_KEY', async () => {
    const pem = expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${project.id}/signing-key`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key),
    ).public_key_pem;
    const run = await runExample({ ...env, SERVICE_DOMAIN: undefined, PUBLIC_KEY: pem });
    expect(run.status).toBe(0);
    for (const content of paidContents) expect(run.stdout).toContain(content);
  });

  it('exits non-zero on a wrong key, a wrong secret and a refused license', async () => {
    const other = await makeProject(t, key);
    const otherKey = expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${other.id}/signing-key`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key),
    ).public_key;
    const badKey = await runExample({ ...env, PUBLIC_KEY: otherKey });
    expect(badKey.status).toBe(1);
    expect(badKey.stderr).toMatch(/Signature check failed/);

    const badSecret = await runExample({ ...env, INJECTABLE_SECRET: 'wrong' });
    expect(badSecret.status).toBe(1);
    expect(badSecret.stderr).toMatch(/wrong secret/);

    expectSuccess(
      await t
        .http()
        .post(`/api/v1/project/${project.id}/licenses/${license.id}/revoke`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key),
    );
    const revoked = await runExample(env);
    expect(revoked.status).toBe(1);
    expect(revoked.stdout).toBe('');
    expect(revoked.stderr).toContain('HTTP 403');
    expect(revoked.stderr).toContain(`redirect: ${REDIRECT}`);

    const missing = await runExample({ ...env, LICENSEGATE_URL: undefined });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/baseUrl/);
  });
});

describe('examples/verify-signed.mjs: a signed answer and an offline token, verified with node:crypto alone', () => {
  const SCRIPT = 'examples/verify-signed.mjs';
  let t: TestApp;
  let key: string;
  let env: Record<string, string>;
  let project: Record<string, any>;
  const api = () => ({
    get: (path: string) =>
      t.http().get(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key),
    post: (path: string) =>
      t.http().post(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key),
  });

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    project = await makeProject(t, key, { has_paid: true, offline_grace_hours: 24 });
    const domain = await makeDomain(t, key, project.id, { has_paid: true });
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    env = {
      LICENSEGATE_URL: t.url,
      LICENSE_KEY: license.uuid,
      SERVICE_DOMAIN: domain.domain,
      PROJECT_ID: String(project.id),
      PUBLIC_KEY: expectSuccess(await api().get(`/project/${project.id}/signing-key`)).public_key,
    };
  });
  afterAll(async () => t?.close());

  it('gives up on a service that accepts the connection and never answers: exit 1 after TIMEOUT_MS, saying so', async () => {
    // The example's socket, kept to be closed: the server never reads it, so the client hanging up
    // would leave it open (half-closed) for the rest of the worker's life.
    const accepted: Socket[] = [];
    const silent = createServer((socket) => accepted.push(socket.on('error', () => undefined)));
    await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const started = Date.now();
      const run = await runExample({ ...env, LICENSEGATE_URL: url, TIMEOUT_MS: '500' }, SCRIPT);
      expect({ status: run.status, stderr: run.stderr }).toEqual({
        status: 1,
        stderr: `licensegate: ${url}/api/v1 did not answer within 500 ms\n`,
      });
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      for (const socket of accepted) socket.destroy();
      await new Promise((done) => silent.close(done));
    }
  }, 30_000);

  it('verifies the answer and the token (raw or PEM key, with a domain or for the project), exit 0', async () => {
    const run = await runExample(env, SCRIPT);
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(run.stdout).toMatch(
      /^OK: signed answer verified \(HTTP 200, signed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\): \{"has_paid":true,"token":"LG1\.[^"]+","is_test_license":false\}\n/,
    );
    expect(run.stdout).toMatch(
      new RegExp(
        `OK: offline token verified: license \\d+, domain ${env.SERVICE_DOMAIN.replace(/\./g, '\\.')}, valid until \\d{4}-`,
      ),
    );

    const pem = expectSuccess(await api().get(`/project/${project.id}/signing-key`)).public_key_pem;
    const byProject = await runExample(
      { ...env, SERVICE_DOMAIN: undefined, PUBLIC_KEY: pem, LICENSEGATE_URL: `${t.url}/api/v1/` },
      SCRIPT,
    );
    expect(byProject.status).toBe(0);
    expect(byProject.stdout).toContain('domain (project check)');
  });

  it("exits 1 on another project's key, another project id, and a revoked license (its refusal still verified)", async () => {
    const other = await makeProject(t, key);
    const otherKey = expectSuccess(await api().get(`/project/${other.id}/signing-key`)).public_key;
    const badKey = await runExample({ ...env, PUBLIC_KEY: otherKey }, SCRIPT);
    expect(badKey.status).toBe(1);
    expect(badKey.stderr).toBe(
      "licensegate: the answer's signature does not verify: altered in transit, or another project's key\n",
    );

    const badProject = await runExample({ ...env, PROJECT_ID: String(other.id) }, SCRIPT);
    expect(badProject.status).toBe(1);
    expect(badProject.stderr).toBe(
      `licensegate: the offline token is for project ${project.id}, not ${other.id}\n`,
    );

    const revoked = await makeLicense(t, key, project.id);
    expectSuccess(await api().post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
    const refused = await runExample({ ...env, LICENSE_KEY: revoked.uuid }, SCRIPT);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toMatch(/^OK: signed answer verified \(HTTP 403, /);
    expect(refused.stderr).toBe('licensegate: refused: This license has been revoked.\n');
  });

  it('a paid project with offline_grace_hours 0 gets no token; an unpaid domain neither', async () => {
    expectSuccess(
      await t
        .http()
        .patch(`/api/v1/project/${project.id}`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key)
        .send({ offline_grace_hours: 0 }),
    );
    const noGrace = await runExample(env, SCRIPT);
    expect(noGrace.status).toBe(0);
    expect(noGrace.stdout).toContain("Paid, but no offline token: the project's offline_grace_hours is 0.");
    const unpaid = await makeDomain(t, key, project.id, { has_paid: false });
    const run = await runExample({ ...env, SERVICE_DOMAIN: unpaid.domain }, SCRIPT);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Not paid: no offline token.');
  });
});

describe("the README's walkthrough, as written", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('goes from a key to a verified payload, printing what its comments say', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = /\n## Walkthrough[^]*?```bash\n([^]*?)```/.exec(readme)?.[1] ?? '';
    const api = 'API=http://localhost:3000/api/v1';
    // The SDK is built by test/utils/global-setup.cjs with this same script; building it again here
    // would rewrite sdk/dist/ under the suites that run it meanwhile.
    const build = 'node sdk/scripts/build.mjs';
    expect(block).toContain(api);
    expect(block).toContain(build);
    const script = block.replace(api, `API=${t.url}/api/v1`).replace(build, 'true');
    // The walkthrough's server is this test's: the CLI opens its database with its key.
    const run = await runExample(
      { DATABASE_URL: t.config.env.DATABASE_URL, APP_KEY: t.config.appKey.toString('base64') },
      '',
      ['bash', '-c', script],
    );
    // The example's output, as the block's closing comments give it.
    const closing = block
      .trimEnd()
      .split('\n')
      .slice(-3)
      .map((line) => line.replace(/^# /, ''));
    expect(closing[2]).toBe('OK: paid; 1 injectable(s) verified and decrypted.');
    // Each line as the comment beside its command says.
    expect(run.stdout.split('\n')).toEqual([
      expect.stringMatching(/^\{"id":1,"email":"you@example\.com",/),
      expect.stringMatching(/^lg_[A-Za-z0-9_-]{43}$/),
      '1',
      'shop.example.com',
      expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      'pro',
      'true',
      ...closing,
      '',
    ]);
    // A made-up key: the envelope's message, on stderr (json exits 1; the walkthrough goes on).
    expect(run.stderr).toBe('Invalid license key.\n');
    expect(run.status).toBe(0);
  }, 120_000);
});
