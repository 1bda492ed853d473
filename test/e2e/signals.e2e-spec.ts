import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, stop, waitFor } from '../utils/processes.js';

const MAIN = resolve('dist/src/main.js');
const CLI = resolve('dist/src/cli.js');

/** `npm start` as built, in a directory of its own (where heap snapshots land). */
describe('signals (README "Signals")', () => {
  let dir: string;
  let env: Record<string, string>;
  let server: ChildProcess;
  let url: string;
  let port: number;
  let output = '';
  const snapshots = () => readdirSync(dir).filter((name) => name.endsWith('.heapsnapshot'));

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
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
    server = spawn(process.execPath, ['--max-old-space-size=384', '--max-semi-space-size=32', MAIN], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
    const [file] = await waitFor(async () => (snapshots().length === 1 && /Heap snapshot written to/.test(output) ? snapshots() : undefined), 30_000);
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

  it('SIGTERM lets a request in flight finish, closes its keep-alive connection, then the process ends', async () => {
    const cli = (...args: string[]) => JSON.parse(execFileSync(process.execPath, [CLI, ...args], { cwd: dir, env }).toString());
    cli('users:create', '--email', 'signals@example.com');
    const { key } = cli('keys:create', '--email', 'signals@example.com');
    const body = JSON.stringify({ name: 'Made while stopping' });
    let signalledAt = 0;
    const answer = await new Promise<{ text: string; closedAfter: number }>((resolvePromise, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('error', reject);
      socket.on('close', () => resolvePromise({ text, closedAfter: Date.now() - signalledAt }));
      socket.on('connect', async () => {
        // A keep-alive request whose body takes 2 s to arrive; SIGTERM comes half-way.
        socket.write(`POST /api/v1/project HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
        for (let i = 0; i < body.length; i += 8) {
          await new Promise((r) => setTimeout(r, 250));
          if (i === 16) {
            signalledAt = Date.now();
            server.kill('SIGTERM');
          }
          socket.write(body.slice(i, i + 8));
        }
      });
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => server.once('exit', (code, signal) => r({ code, signal })));
    expect(answer.text).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer.text).toContain('"name":"Made while stopping"');
    // Closed right after its answer, not at the end of the 65 s keep-alive timeout.
    expect(answer.closedAfter).toBeLessThan(10_000);
    const { code, signal } = server.exitCode !== null || server.signalCode !== null ? { code: server.exitCode, signal: server.signalCode } : await exited;
    expect([0, 'SIGTERM']).toContain(code ?? signal);
  }, 60_000);
});
