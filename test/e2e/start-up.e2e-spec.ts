import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, stop, waitFor } from '../utils/processes.js';

const MAIN = resolve('dist/src/main.js');

/** `npm start` as built, with its default LOG_LEVEL (info), in a directory of its own. */
function start(
  dir: string,
  env: Record<string, string>,
): { child: ChildProcess; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  const child = spawn(process.execPath, [MAIN], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      APP_KEY: randomBytes(32).toString('base64'),
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
      WEBHOOK_DISPATCHER: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  return { child, out: () => out, err: () => err };
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((done) =>
    child.exitCode !== null ? done(child.exitCode) : child.once('exit', (code) => done(code)),
  );

/** A port some other process listens on. */
function holdPort(port: number): Promise<Server> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(port, () => done(server));
  });
}

describe('start-up', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lg-start-up-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('--help lists the settings, one a line, and exits 0 without starting; a misspelt one is warned of', () => {
    const help = spawnSync(process.execPath, [MAIN, '--help'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DATABASE_PATH: 'x.sqlite' },
      encoding: 'utf8',
    });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm start/);
    expect(help.stdout).toMatch(
      /\n {2}DATABASE_URL +must be sqlite:<path> or mysql:\/\/user:pass@host:port\/db/,
    );
    expect(help.stdout).toMatch(/\n {2}PORT +an integer from 0 to 65535 \(default 3000\)\n/);
    expect(help.stderr).toBe('');

    const misspelt = spawnSync(process.execPath, [MAIN], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DATABASE_PATH: 'x.sqlite', PORT: 'eighty' },
      encoding: 'utf8',
    });
    expect(misspelt.status).toBe(1);
    expect(misspelt.stderr).toBe(
      'warning: DATABASE_PATH is not a setting LicenseGate reads (the nearest is DATABASE_URL); node dist/src/main.js --help lists them.\n' +
        'Configuration error: PORT: invalid value "eighty" (PORT must be an integer number)\n',
    );
  });

  it('says in one line where the API, its docs and the console are, and each answers there', async () => {
    const port = await freePort();
    const server = start(dir, { PORT: String(port) });
    try {
      // The line is written once the server listens: anything else at start-up comes before it.
      await waitFor(async () => server.out().includes('LicenseGate is listening'), 60_000);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/api/v1/health/live`)).ok);
      // Besides the request line of the probe above.
      const lines = server
        .out()
        .trim()
        .split('\n')
        .filter((l) => (JSON.parse(l) as { msg: string }).msg !== 'request completed');
      // A database without users: the setup link follows (docs/security.md#the-first-account).
      expect(lines).toHaveLength(2);
      const line = JSON.parse(lines[0]) as Record<string, unknown>;
      const setupLine = JSON.parse(lines[1]) as { msg: string; setup: boolean };
      expect(setupLine).toMatchObject({ level: 30, context: 'LicenseGate', setup: true });
      expect(setupLine.msg).toMatch(
        new RegExp(
          `^No account yet: open http://localhost:${port}/console/#/setup/[A-Za-z0-9_-]{43} to create the first one\\.$`,
        ),
      );
      expect(line).toMatchObject({
        level: 30,
        context: 'LicenseGate',
        msg: `LicenseGate is listening: the API at http://localhost:${port}/api/v1/, its docs at http://localhost:${port}/api/docs, the console at http://localhost:${port}/console/; database: SQLite ${join(dir, 'db.sqlite')}`,
        api: `http://localhost:${port}/api/v1/`,
        docs: `http://localhost:${port}/api/docs`,
        console: `http://localhost:${port}/console/`,
      });
      expect(server.err()).toBe('');
      const api = await fetch(String(line.api));
      expect({ status: api.status, body: await api.json() }).toEqual({
        status: 200,
        body: { status: 'ok', message: 'LicenseGate API v1', data: null, errors: null },
      });
      const docs = await fetch(String(line.docs));
      expect(docs.status).toBe(200);
      expect(await docs.text()).toContain('<title>Swagger UI</title>');
      const page = await fetch(String(line.console));
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>LicenseGate console</title>');

      // The printed code makes the first account.
      const code = setupLine.msg.split('/setup/')[1].split(' ')[0];
      const made = await fetch(`http://127.0.0.1:${port}/api/v1/auth/setup`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ code, email: 'first@example.test', password: 'correct horse battery' }),
      });
      expect(made.status).toBe(200);
    } finally {
      await stop(server.child);
    }

    // Started again, with a user: the listening line alone.
    const again = start(dir, { PORT: String(port) });
    try {
      await waitFor(async () => again.out().includes('LicenseGate is listening'), 60_000);
      expect(again.out()).not.toContain('No account yet');
    } finally {
      await stop(again.child);
    }
  }, 90_000);

  it('CONSOLE_ENABLED=false: the line names the API and its docs only, and /console/ is not served', async () => {
    const port = await freePort();
    const server = start(dir, { PORT: String(port), CONSOLE_ENABLED: 'false' });
    try {
      await waitFor(async () => server.out().includes('LicenseGate is listening'), 60_000);
      const line = server
        .out()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => String(l.msg).startsWith('LicenseGate is listening'));
      expect(line?.msg).toBe(
        `LicenseGate is listening: the API at http://localhost:${port}/api/v1/, its docs at http://localhost:${port}/api/docs; database: SQLite ${join(dir, 'db.sqlite')}`,
      );
      expect(line).not.toHaveProperty('console');
      expect((await fetch(`http://127.0.0.1:${port}/console/`)).status).toBe(404);
    } finally {
      await stop(server.child);
    }
  }, 90_000);

  it('at debug, lists each route as served: GET /metrics, never under /api/v1', async () => {
    const port = await freePort();
    const server = start(dir, { PORT: String(port), LOG_LEVEL: 'debug' });
    try {
      await waitFor(async () => server.out().includes('LicenseGate is listening'), 60_000);
      const messages = server
        .out()
        .trim()
        .split('\n')
        .map((l) => String((JSON.parse(l) as { msg: unknown }).msg));
      expect(messages).toContain('Mapped {/metrics, GET} route');
      expect(messages).toContain('Mapped {/api/v1/project, POST} route');
      expect(messages.filter((m) => m.includes('/api/v1/metrics'))).toEqual([]);
    } finally {
      await stop(server.child);
    }
  }, 90_000);

  it('REDIS_URL set and nothing answering there: starts, warns once, answers from the database, and readiness says Redis is down', async () => {
    const port = await freePort();
    const server = start(dir, { PORT: String(port), REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    try {
      await waitFor(async () => server.out().includes('LicenseGate is listening'), 60_000);
      const warnings = server
        .out()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 40)
        .map((l) => l.msg);
      expect(warnings).toEqual([
        expect.stringMatching(/^Redis unavailable: connect ECONNREFUSED 127\.0\.0\.1:\d+$/),
        'Redis is not reachable yet: answering from the database meanwhile',
      ]);
      const refused = await fetch(`http://127.0.0.1:${port}/api/v1/project/has-paid`, {
        method: 'POST',
        headers: { 'X-LICENSE-KEY': 'no-such-key' },
      });
      expect({ status: refused.status, body: await refused.json() }).toEqual({
        status: 403,
        body: {
          status: 'error',
          message: 'Invalid license key.',
          data: { redirect_url: null },
          errors: null,
        },
      });
      const ready = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      const body = (await ready.json()) as {
        message: string;
        data: { error: { redis: { status: string; message: string } } };
      };
      expect(ready.status).toBe(503);
      expect(body.message).toBe('Service unavailable.');
      expect(body.data.error.redis).toEqual({
        status: 'down',
        message: 'Redis is not answering.', // generic: the cause is in the log
      });
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/health/live`)).status).toBe(200);
      // Still up well after the first reconnection attempts, and no stack trace anywhere.
      await new Promise((r) => setTimeout(r, 1500));
      expect(server.child.exitCode).toBeNull();
      expect(server.err()).toBe('');
    } finally {
      await stop(server.child);
    }
  }, 90_000);

  it('a port in use: one line that says what to do, exit code 1, no stack trace', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    try {
      const server = start(dir, { PORT: String(port) });
      expect(await exitOf(server.child)).toBe(1);
      expect(server.err()).toBe(`Port ${port} is already in use: set PORT.\n`);
      expect(server.out()).toBe('');
    } finally {
      holder.close();
    }
  }, 90_000);

  it.each([
    [
      { APP_KEY: '', APP_KEY_FILE: tmpdir() },
      `Configuration error: APP_KEY_FILE: cannot read the key file ${tmpdir()} (EISDIR): set APP_KEY, or point APP_KEY_FILE at a file this process can read and write\n`,
    ],
    [
      { REDIS_URL: 'redis://:secret@' },
      'Configuration error: REDIS_URL: invalid value (must be a redis:// or rediss:// URL with a host, e.g. redis://127.0.0.1:6379)\n',
    ],
    [
      { THROTTLE_RUNTIME_LIMIT: 'lots' },
      'Configuration error: THROTTLE_RUNTIME_LIMIT: invalid value "lots" (THROTTLE_RUNTIME_LIMIT must be an integer number)\n',
    ],
  ])(
    'a bad setting (%p): one line naming the key, exit code 1, no stack trace',
    async (env, line) => {
      const server = start(dir, { PORT: String(await freePort()), ...env });
      expect(await exitOf(server.child)).toBe(1);
      expect(server.err()).toBe(line);
      expect(server.out()).toBe('');
    },
    90_000,
  );

  it('a database that cannot be opened: one line naming DATABASE_URL and the cause, exit code 1, no stack trace', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    const server = start(dir, {
      PORT: String(await freePort()),
      DATABASE_URL: `sqlite:${join(file, 'db.sqlite')}`,
    });
    expect(await exitOf(server.child)).toBe(1);
    expect(server.err()).toMatch(
      new RegExp(
        `^Could not start: the database \\(DATABASE_URL\\) could not be opened: E[A-Z]+: [^\\n]*${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^\\n]*\\n$`,
      ),
    );
    expect(server.out()).toBe('');
  }, 90_000);
});
