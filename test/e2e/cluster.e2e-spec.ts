import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createTestDatabase } from '../utils/test-app.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

async function waitFor<T>(probe: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const value = await probe().catch(() => undefined);
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}

/** The pids of a process's children, from /proc (Linux). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('CLUSTER_WORKERS (SPEC 1, 12)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let primary: ChildProcess;
  let url = '';

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
    db = await createTestDatabase();
    // Migrations run once, before the workers race to start.
    execFileSync(process.execPath, ['dist/src/cli.js', 'users:list'], {
      env: { ...process.env, DATABASE_URL: db.url, APP_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' },
    });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    primary = spawn(process.execPath, ['dist/src/main.js'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        PORT: String(port),
        DATABASE_URL: db.url,
        APP_KEY: randomBytes(32).toString('base64'),
        CLUSTER_WORKERS: '2',
        REDIS_URL,
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
  });

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

describe('CLUSTER_WORKERS without Redis', () => {
  it('refuses to start: the workers could not share cache generations or rate limits', () => {
    let failure: { status?: number; stderr?: Buffer } = {};
    try {
      execFileSync(process.execPath, ['dist/src/main.js'], {
        env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: 'sqlite::memory:', APP_KEY: randomBytes(32).toString('base64'), CLUSTER_WORKERS: '2', REDIS_URL: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 20_000,
      });
    } catch (error) {
      failure = error as typeof failure;
    }
    expect(failure.status).toBe(1);
    expect(String(failure.stderr)).toContain('CLUSTER_WORKERS: more than one worker needs REDIS_URL');
  });
});
