import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { catches, childrenOf, freePort, TEST_REDIS_URL, waitFor } from '../utils/processes.js';
import { createTestDatabase } from '../utils/test-app.js';

describe('CLUSTER_WORKERS', () => {
  let db: { url: string; drop: () => Promise<void> };
  let primary: ChildProcess;
  let url = '';
  // The working directory, where heap snapshots land.
  let dir = '';

  beforeAll(async () => {
    db = await createTestDatabase();
    // Migrations run once, before the workers race to start.
    execFileSync(process.execPath, ['dist/src/cli.js', 'users:list'], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        APP_KEY: randomBytes(32).toString('base64'),
        LOG_LEVEL: 'silent',
      },
    });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    dir = mkdtempSync(join(tmpdir(), 'lg-cluster-'));
    primary = spawn(process.execPath, [resolve('dist/src/main.js')], {
      cwd: dir,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        PORT: String(port),
        DATABASE_URL: db.url,
        APP_KEY: randomBytes(32).toString('base64'),
        CLUSTER_WORKERS: '2',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_KEY_PREFIX: `lg-cluster-${randomBytes(4).toString('hex')}:`,
        WEBHOOK_DISPATCHER: 'false',
      },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    await waitFor(async () => (await fetch(`${url}/api/v1/health/live`)).ok);
  }, 60_000);

  afterAll(async () => {
    if (primary && primary.exitCode === null) {
      primary.kill('SIGTERM');
      await new Promise((r) => primary.once('exit', r));
    }
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('SIGUSR2 to the primary: every worker writes a heap snapshot, and nothing stops', async () => {
    // Both workers up and listening for the signal (one still starting would die of it: its default action).
    const workers = await waitFor(async () => {
      const pids = childrenOf(primary.pid as number);
      return pids.length === 2 && pids.every((pid) => catches(pid, 'SIGUSR2')) ? pids : undefined;
    }, 30_000);
    primary.kill('SIGUSR2');
    const snapshots = await waitFor(async () => {
      const files = readdirSync(dir).filter((name) => name.endsWith('.heapsnapshot'));
      return files.length === 2 ? files : undefined;
    }, 60_000);
    // Heap.<date>.<time>.<pid>.<thread>.<n>.heapsnapshot
    expect(snapshots.map((name) => Number(name.split('.')[3])).sort()).toEqual([...workers].sort());
    expect(primary.exitCode).toBeNull();
    expect(childrenOf(primary.pid as number).sort()).toEqual([...workers].sort());
    for (let i = 0; i < 4; i++) expect((await fetch(`${url}/api/v1/health/live`)).status).toBe(200);
  }, 90_000);

  it('forks the workers, replaces one that dies, and stops them all on SIGTERM', async () => {
    const workers = await waitFor(async () => {
      const pids = childrenOf(primary.pid as number);
      return pids.length === 2 ? pids : undefined;
    });
    process.kill(workers[0], 'SIGKILL');
    const replaced = await waitFor(async () => {
      const pids = childrenOf(primary.pid as number);
      return pids.length === 2 && !pids.includes(workers[0]) ? pids : undefined;
    });
    expect(replaced).toContain(workers[1]);
    // The service answers throughout, from whichever worker takes the connection.
    for (let i = 0; i < 10; i++) expect((await fetch(`${url}/api/v1/health/live`)).status).toBe(200);

    primary.kill('SIGTERM');
    const code = await new Promise((resolve) => primary.once('exit', (c, s) => resolve(c ?? s)));
    expect([0, 'SIGTERM']).toContain(code);
    for (const pid of replaced) expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('CLUSTER_WORKERS start-up', () => {
  let db: { url: string; drop: () => Promise<void> };
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    const APP_KEY = randomBytes(32).toString('base64');
    execFileSync(process.execPath, ['dist/src/cli.js', 'users:list'], {
      env: { ...process.env, DATABASE_URL: db.url, APP_KEY, LOG_LEVEL: 'silent' },
    });
    env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: db.url,
      APP_KEY,
      CLUSTER_WORKERS: '2',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `lg-cluster-${randomBytes(4).toString('hex')}:`,
      WEBHOOK_DISPATCHER: 'false',
    };
  }, 60_000);
  afterAll(async () => db?.drop());

  /** The primary with its default LOG_LEVEL (info), its output and its exit. */
  function startPrimary(port: number) {
    const out = { stdout: '', stderr: '' };
    const child = spawn(process.execPath, [resolve('dist/src/main.js')], {
      env: { ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d) => (out.stdout += d));
    child.stderr?.on('data', (d) => (out.stderr += d));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    return { child, out, exited };
  }

  it('the primary says once where the API, its docs and the console are, whatever the number of workers', async () => {
    const port = await freePort();
    const primary = startPrimary(port);
    // The database by its host, port and name, never its user or password.
    const url = new URL(db.url);
    const database = `MySQL ${url.host}${url.pathname}`;
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/api/v1/health/live`)).ok, 60_000);
      // Both workers up: each would have written its own line by now.
      await waitFor(
        async () => childrenOf(primary.child.pid as number).length === 2 && primary.out.stdout.includes('\n'),
      );
      await new Promise((r) => setTimeout(r, 1000));
      // Besides the request lines of the probes above.
      const lines = primary.out.stdout
        .trim()
        .split('\n')
        .filter((line) => (JSON.parse(line) as { msg: string }).msg !== 'request completed');
      // No user yet: the primary also says once where the first account is made, with the code
      // every worker takes (docs/operations.md#the-first-account).
      expect(lines).toHaveLength(2);
      const setup = JSON.parse(lines[1]) as { msg: string; pid: number };
      expect(setup.pid).toBe(primary.child.pid);
      expect(setup.msg).toMatch(
        new RegExp(
          `^No account yet: open http://localhost:${port}/console/#/setup/[A-Za-z0-9_-]{43} to create the first one\\.$`,
        ),
      );
      const code = setup.msg.split('/setup/')[1].split(' ')[0];
      const made = await fetch(`http://127.0.0.1:${port}/api/v1/auth/setup`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ code, email: 'first@example.test', password: 'correct horse battery' }),
      });
      expect(made.status).toBe(200);
      expect(JSON.parse(lines[0])).toMatchObject({
        level: 30,
        pid: primary.child.pid,
        workers: 2,
        msg: `LicenseGate is listening: the API at http://localhost:${port}/api/v1/, its docs at http://localhost:${port}/api/docs, the console at http://localhost:${port}/console/; database: ${database}`,
        console: `http://localhost:${port}/console/`,
        database,
      });
      expect(database).not.toContain('root');
      expect(primary.out.stderr).toBe('');
    } finally {
      primary.child.kill('SIGTERM');
      await primary.exited;
    }
  }, 90_000);

  it('a port in use: the primary says it in one line, once, stops its workers and exits with 1', async () => {
    const port = await freePort();
    const holder = createServer();
    await new Promise<void>((done) => holder.listen(port, done));
    try {
      const primary = startPrimary(port);
      const workers = await waitFor(async () => {
        const pids = childrenOf(primary.child.pid as number);
        return pids.length > 0 ? pids : primary.child.exitCode !== null ? [] : undefined;
      });
      expect(await primary.exited).toBe(1);
      expect(primary.out.stderr).toBe(`Port ${port} is already in use: set PORT.\n`);
      expect(primary.out.stdout).toBe('');
      // No worker outlives it (nor is one started again).
      await waitFor(async () => workers.every((pid) => !alive(pid)), 10_000);
    } finally {
      holder.close();
    }
  }, 90_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
