import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

describe('CLUSTER_WORKERS without Redis', () => {
  it('refuses to start: the workers could not share cache generations or rate limits', () => {
    let failure: { status?: number; stderr?: Buffer } = {};
    try {
      execFileSync(process.execPath, ['dist/src/main.js'], {
        env: {
          ...process.env,
          NODE_ENV: 'test',
          LOG_LEVEL: 'silent',
          PORT: '0',
          DATABASE_URL: 'sqlite::memory:',
          APP_KEY: randomBytes(32).toString('base64'),
          CLUSTER_WORKERS: '2',
          REDIS_URL: '',
        },
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

// CLUSTER_WORKERS when the workers cannot start (TypeORM's retries first): test/slow/cluster-start.slow-spec.ts.
