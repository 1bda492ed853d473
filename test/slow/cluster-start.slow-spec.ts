import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../utils/processes.js';

// npm run test:slow: the workers give up on the database only after TypeORM's default retries.

describe('CLUSTER_WORKERS when the workers cannot start', () => {
  it('a database that cannot be opened: the primary stops once the first worker fails, exit code 1, no worker forked again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lg-cluster-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    try {
      const child = spawn(process.execPath, ['dist/src/main.js'], {
        env: {
          PATH: process.env.PATH ?? '',
          LOG_LEVEL: 'silent',
          PORT: String(await freePort()),
          DATABASE_URL: `sqlite:${join(file, 'db.sqlite')}`,
          APP_KEY: randomBytes(32).toString('base64'),
          CLUSTER_WORKERS: '2',
          // Nothing answers there: the workers start without it (and fail on the database instead).
          REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr?.on('data', (d) => (err += d));
      const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
      expect(code).toBe(1);
      expect(err).toContain('Could not start: the database (DATABASE_URL) could not be opened: ');
      expect(err).toMatch(/worker \d+ exited \(1\) before the service could serve: stopping\n/);
      expect(err).not.toContain('starting a new one');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
