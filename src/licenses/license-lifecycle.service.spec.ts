import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { Clock } from '../common/time.js';
import type { AppConfig } from '../config/app-config.js';
import type { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { ProjectsService } from '../projects/projects.service.js';
import { LicenseLifecycle } from './license-lifecycle.service.js';
import type { LicenseEntity } from './license.entity.js';

describe('LicenseLifecycle on its timer', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('polls every LICENSE_EXPIRY_POLL_MS, logs the database failure with its code once, then the recovery once, and stops', async () => {
    const lines: unknown[][] = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((...line: unknown[]) => void lines.push(['warn', ...line]));
    jest
      .spyOn(Logger.prototype, 'log')
      .mockImplementation((...line: unknown[]) => void lines.push(['log', ...line]));
    let away = true;
    let queries = 0;
    // What mysql2 throws when the pool cannot reach the server: the driver's code and message.
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' });
    const query = {
      innerJoin: () => query,
      select: () => query,
      where: () => query,
      andWhere: () => query,
      orderBy: () => query,
      addOrderBy: () => query,
      limit: () => query,
      getMany: () => {
        queries++;
        return away ? Promise.reject(refused) : Promise.resolve([]);
      },
    };
    const licenses = { createQueryBuilder: () => query } as unknown as Repository<LicenseEntity>;
    const config = {
      env: { WEBHOOK_DISPATCHER: true, LICENSE_EXPIRY_POLL_MS: 5, LICENSE_EXPIRY_NOTICE_DAYS: 7 },
    } as unknown as AppConfig;
    const lifecycle = new LicenseLifecycle(
      licenses,
      {} as ProjectsService,
      {} as ProjectChanges,
      new Clock(),
      config,
    );
    jest.useFakeTimers();
    try {
      lifecycle.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(0); // the first run, at once
      await jest.advanceTimersByTimeAsync(10); // two more polls, failing too
      expect(queries).toBe(3);
      away = false;
      await jest.advanceTimersByTimeAsync(10);
      expect(queries).toBe(5);
      await lifecycle.onApplicationShutdown();
      await jest.advanceTimersByTimeAsync(50);
      expect(queries).toBe(5);
    } finally {
      jest.useRealTimers();
    }
    expect(lines).toEqual([
      [
        'warn',
        { db: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:3306' } },
        'Expiry notices failing; trying on (logged again once they work)',
      ],
      ['log', 'Expiry notices work again'],
    ]);
  });
});
