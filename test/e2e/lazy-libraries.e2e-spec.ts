import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SSO_UNREACHABLE } from '../../src/auth/sso.service.js';
import { WRONG_CREDENTIALS } from '../../src/auth/sessions.service.js';
import { freePort, stop, waitFor } from '../utils/processes.js';

const MAIN = resolve('dist/src/main.js');

/** A module hook that appends every URL the server's imports resolve to, one a line, to the file it is given. */
const HOOKS = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) {
  file = data;
}
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(file, result.url + '\\n');
  return result;
}
`;
/** The same for require() (a .cts file's), which those hooks do not see on Node 20. */
const requireHook = (file: string) => `
const Module = require('node:module');
const { appendFileSync } = require('node:fs');
const { pathToFileURL } = require('node:url');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const resolved = resolveFilename.apply(this, args);
  if (resolved.startsWith('/')) appendFileSync(${JSON.stringify(file)}, pathToFileURL(resolved).href + '\\n');
  return resolved;
};
`;
const register = (file: string) =>
  `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url, { data: ${JSON.stringify(file)} });\n`;

const PACKAGES = {
  nodemailer: '/node_modules/nodemailer/',
  openidClient: '/node_modules/openid-client/',
  argon2: '/node_modules/@node-rs/argon2/',
  nestCore: '/node_modules/@nestjs/core/',
};

/**
 * The libraries of features a service may not use — mail (SMTP_URL), SSO (OIDC_*), passwords (Argon2) —
 * load when first needed, not at start: each holds megabytes a service without the feature would
 * carry for nothing (docs/benchmarks.md#the-soak-back-under-250-mb-2026-11-28). The built server runs with a hook that records what
 * its imports resolve to.
 */
describe('libraries loaded when first needed', () => {
  let dir: string;
  const servers: ChildProcess[] = [];
  let smtp: Server;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lg-lazy-'));
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  });

  afterAll(async () => {
    for (const server of servers) await stop(server);
    smtp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The built server in a directory of its own, with `extra` settings; what it resolved so far. */
  async function start(name: string, extra: Record<string, string>) {
    const log = join(dir, `${name}.resolved`);
    writeFileSync(log, '');
    writeFileSync(join(dir, `${name}.register.mjs`), register(log));
    writeFileSync(join(dir, `${name}.require.cjs`), requireHook(log));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = spawn(
      process.execPath,
      [
        '--require',
        join(dir, `${name}.require.cjs`),
        '--import',
        pathToFileURL(join(dir, `${name}.register.mjs`)).href,
        MAIN,
      ],
      {
        cwd: dir,
        // The defaults `npm start` runs with (jest's NODE_ENV=test left out), but for where and which database.
        env: {
          ...(process.env as Record<string, string>),
          NODE_ENV: undefined,
          PORT: String(port),
          DATABASE_URL: `sqlite:${join(dir, `${name}.sqlite`)}`,
          APP_KEY: randomBytes(32).toString('base64'),
          ...extra,
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    servers.push(server);
    await waitFor(async () => (await fetch(`${url}/api/v1/health/live`).catch(() => null))?.ok, 30_000);
    const loaded = () => {
      const text = readFileSync(log, 'utf8');
      return Object.fromEntries(
        Object.entries(PACKAGES).map(([key, path]) => [key, text.includes(path)]),
      ) as Record<keyof typeof PACKAGES, boolean>;
    };
    return { url, loaded };
  }

  it('without SMTP_URL: none at start; Argon2 with the first password checked, openid-client with the first SSO', async () => {
    // An issuer nobody answers at: SSO is configured, its discovery fails.
    const closed = await freePort();
    const { url, loaded } = await start('plain', {
      OIDC_ISSUER: `http://127.0.0.1:${closed}`,
      OIDC_CLIENT_ID: 'licensegate',
      OIDC_CLIENT_SECRET: 'a-secret-of-the-client',
    });
    // The hook works: Nest itself was resolved.
    expect(loaded()).toEqual({ nodemailer: false, openidClient: false, argon2: false, nestCore: true });

    const login = await fetch(`${url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'nobody@example.com', password: 'not-the-password-1' }),
    });
    expect(login.status).toBe(401);
    expect(((await login.json()) as { message: string }).message).toBe(WRONG_CREDENTIALS);
    expect(loaded()).toEqual({ nodemailer: false, openidClient: false, argon2: true, nestCore: true });

    const sso = await fetch(`${url}/api/v1/auth/sso/start`, { method: 'POST' });
    expect(sso.status).toBe(502);
    expect(((await sso.json()) as { message: string }).message).toBe(SSO_UNREACHABLE);
    expect(loaded()).toEqual({ nodemailer: false, openidClient: true, argon2: true, nestCore: true });
  }, 60_000);

  it('with SMTP_URL: nodemailer from the start', async () => {
    smtp = createServer((socket) => socket.end());
    await new Promise<void>((done) => smtp.listen(0, '127.0.0.1', done));
    const port = (smtp.address() as { port: number }).port;
    const { loaded } = await start('mail', { SMTP_URL: `smtp://127.0.0.1:${port}` });
    await waitFor(async () => loaded().nodemailer, 10_000);
    expect(loaded()).toEqual({ nodemailer: true, openidClient: false, argon2: false, nestCore: true });
  }, 60_000);
});
