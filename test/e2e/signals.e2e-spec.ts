import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { childrenOf, freePort, stop, waitFor } from '../utils/processes.js';

const MAIN = resolve('dist/src/main.js');
const CLI = resolve('dist/src/cli.js');

/** `npm start` as built, in a directory of its own (where heap snapshots land). */
describe('signals (docs/operations.md, "Signals")', () => {
  let dir: string;
  let env: Record<string, string>;
  let server: ChildProcess;
  let url: string;
  let port: number;
  let output = '';
  const snapshots = () => readdirSync(dir).filter((name) => name.endsWith('.heapsnapshot'));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lg-signals-'));
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      ...(process.env as Record<string, string>),
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
      APP_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_DISPATCHER: 'false',
    };
    server = spawn(process.execPath, ['--max-old-space-size=384', '--max-semi-space-size=8', MAIN], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout?.on('data', (d) => (output += d));
    server.stderr?.on('data', (d) => (output += d));
    await waitFor(async () => (await fetch(`${url}/api/v1/health/live`)).ok, 30_000);
  }, 90_000);

  afterAll(async () => {
    if (server) await stop(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGUSR2 writes a heap snapshot into the working directory, logs where, and the service keeps serving', async () => {
    expect(snapshots()).toEqual([]);
    server.kill('SIGUSR2');
    const [file] = await waitFor(
      async () =>
        snapshots().length === 1 && /Heap snapshot written to/.test(output) ? snapshots() : undefined,
      30_000,
    );
    expect(readFileSync(join(dir, file), 'utf8').slice(0, 20)).toMatch(/^\{"snapshot":/);
    const line = JSON.parse(output.split('\n').find((l) => l.includes('Heap snapshot written to')) as string);
    expect(line).toMatchObject({ level: 40, context: 'Signals', file: join(dir, file) });

    expect(server.exitCode).toBeNull();
    expect(server.signalCode).toBeNull();
    expect((await fetch(`${url}/api/v1/health/live`)).status).toBe(200);
    // And again: each signal writes one more.
    server.kill('SIGUSR2');
    await waitFor(async () => snapshots().length === 2, 30_000);
    expect((await fetch(`${url}/api/v1/health/live`)).status).toBe(200);
  }, 90_000);

  /** A keep-alive request whose body takes 2 s to arrive, with `signal` sent half-way; its answer and when its socket closed. */
  function requestAcrossSignal(
    target: ChildProcess,
    targetPort: number,
    key: string,
    signal: NodeJS.Signals,
  ) {
    const body = JSON.stringify({ name: 'Made while stopping' });
    let signalledAt = 0;
    return new Promise<{ text: string; closedAfter: number }>((resolvePromise, reject) => {
      const socket = connect(targetPort, '127.0.0.1');
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('error', reject);
      socket.on('close', () => resolvePromise({ text, closedAfter: Date.now() - signalledAt }));
      const trickle = async () => {
        socket.write(
          `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
        );
        for (let i = 0; i < body.length; i += 8) {
          await new Promise((r) => setTimeout(r, 250));
          if (i === 16) {
            signalledAt = Date.now();
            target.kill(signal);
          }
          socket.write(body.slice(i, i + 8));
        }
      };
      socket.on('connect', () => void trickle());
    });
  }

  const exitOf = (child: ChildProcess) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve(child.exitCode ?? child.signalCode)
      : new Promise<number | string | null>((r) => child.once('exit', (code, signal) => r(code ?? signal)));

  const apiKey = (database: string) => {
    const cli = (...args: string[]) =>
      JSON.parse(
        execFileSync(process.execPath, [CLI, ...args], {
          cwd: dir,
          env: { ...env, DATABASE_URL: database },
        }).toString(),
      );
    cli('users:create', '--email', 'signals@example.com');
    return cli('keys:create', '--email', 'signals@example.com').key as string;
  };

  it('SIGTERM lets a request in flight finish, closes its keep-alive connection, then the process ends', async () => {
    const answer = await requestAcrossSignal(server, port, apiKey(env.DATABASE_URL), 'SIGTERM');
    expect(answer.text).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer.text).toContain('"name":"Made while stopping"');
    // Closed right after its answer, not at the end of the 65 s keep-alive timeout.
    expect(answer.closedAfter).toBeLessThan(10_000);
    // Nest stops the app, then ends the process with the signal it got.
    expect([0, 'SIGTERM']).toContain(await exitOf(server));
  }, 60_000);

  it('SIGHUP (a terminal that hangs up) stops as gracefully: the request in flight is answered', async () => {
    const database = `sqlite:${join(dir, 'hup.sqlite')}`;
    const key = apiKey(database);
    const hupPort = await freePort();
    const other = spawn(process.execPath, [MAIN], {
      cwd: dir,
      env: { ...env, PORT: String(hupPort), DATABASE_URL: database },
      stdio: 'ignore',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${hupPort}/api/v1/health/live`)).ok, 30_000);
    const answer = await requestAcrossSignal(other, hupPort, key, 'SIGHUP');
    expect(answer.text).toMatch(/^HTTP\/1\.1 201 /);
    expect([0, 'SIGHUP']).toContain(await exitOf(other));
  }, 60_000);
});

describe('npm start stops with the process the user started', () => {
  it('SIGTERM to npm (not to node) stops the server: npm runs it with exec, so npm forwards the signal to it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lg-npm-start-'));
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: resolve('.'),
      env: {
        ...(process.env as Record<string, string>),
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        PORT: String(port),
        DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`,
        APP_KEY: randomBytes(32).toString('base64'),
        WEBHOOK_DISPATCHER: 'false',
      },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/api/v1/health/live`)).ok, 60_000);
      // The server is npm's own child: no shell in between to swallow the signal.
      const [server] = childrenOf(npm.pid as number);
      expect(readFileSync(`/proc/${server}/cmdline`, 'utf8').split('\0')).toContain(
        MAIN.replace(`${resolve('.')}/`, ''),
      );
      const exited = new Promise<number | null>((done) => npm.once('exit', (code) => done(code)));
      npm.kill('SIGTERM');
      await exited;
      await waitFor(() => !existsSync(`/proc/${server}`), 10_000, 'the server process to exit');
      await expect(fetch(`http://127.0.0.1:${port}/api/v1/health/live`)).rejects.toThrow();
    } finally {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
