import { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export { waitFor } from './wait.js';

/** SIGTERM, and the promise of its exit. */
export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

/** The pids of a process's children, from /proc (Linux). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Whether the process has a handler for `signal` (Linux: the SigCgt mask of /proc/<pid>/status). */
export function catches(pid: number, signal: 'SIGUSR2' | 'SIGTERM' | 'SIGHUP'): boolean {
  const number = { SIGHUP: 1, SIGUSR2: 12, SIGTERM: 15 }[signal];
  try {
    const mask = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(number - 1))) !== 0n;
  } catch {
    return false;
  }
}

/** Redis for the services suites (`npm run test:services`). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
