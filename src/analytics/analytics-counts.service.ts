import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { RefusalReason } from '../common/http/errors.js';
import { JOBS } from '../common/jobs.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { FlushedCounts } from '../database/flushed-counts.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type Outcome = 'paid' | 'unpaid' | 'refused';

const HOUR_MS = 3_600_000;
/** Rows per upsert statement: 7 parameters each, far below SQLite's and MySQL's limits. */
const CHUNK = 200;

/** 'YYYY-MM-DD HH' of the UTC hour of `ms`: runtime_answers.hour. */
export const hourKey = (ms: number): string =>
  new Date(ms - (ms % HOUR_MS)).toISOString().slice(0, 13).replace('T', ' ');

/**
 * Every runtime answer counted in memory by (project, UTC hour, outcome, reason, domain, country) and
 * added to runtime_answers by a flush every JOBS.analyticsFlush.everyMs, on shutdown too, one upsert per row
 * (docs/analytics.md). Instances add to the same rows, so the totals are exact sums across them; a
 * flush the database did not take keeps its counts, and one whose COMMIT went unanswered is not
 * counted twice (database/flushed-counts.ts). Rows past ANALYTICS_RETENTION_DAYS are pruned hourly.
 */
@Injectable()
export class AnalyticsCounts implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Analytics');
  readonly enabled: boolean;
  private readonly counts: FlushedCounts;
  private readonly flusher: PeriodicTask;
  private readonly pruner: PeriodicTask;
  private readonly mysql: boolean;
  /** The current hour's key, remade once an hour rather than once a call. */
  private hourStart = -1;
  private hour = '';

  constructor(
    private readonly dataSource: DataSource,
    unit: UnitOfWork,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {
    this.enabled = config.env.ANALYTICS_ENABLED;
    this.mysql = dataSource.options.type !== 'better-sqlite3';
    this.counts = new FlushedCounts(
      unit,
      (manager, counts) => this.upsert(manager, counts),
      () => clock.nowMs(),
    );
    this.flusher = new PeriodicTask({
      ...JOBS.analyticsFlush,
      logger: this.logger,
      run: () => this.counts.flush(),
    });
    this.pruner = new PeriodicTask({
      ...JOBS.analyticsPruning,
      logger: this.logger,
      run: () => this.prune(),
    });
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.flusher.start();
    this.pruner.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pruner.stop();
    await this.flusher.stop();
    await this.flusher.runNow();
  }

  /**
   * Counts one runtime answer: a Map increment under a composite key, no I/O. `reason` is '' for
   * answers that were not refused, `domainId` 0 and `country` '' for none.
   */
  count(
    projectId: number,
    outcome: Outcome,
    reason: RefusalReason | '',
    domainId: number,
    country: string,
  ): void {
    if (!this.enabled) return;
    const now = this.clock.nowMs();
    if (now - this.hourStart >= HOUR_MS || now < this.hourStart) {
      this.hourStart = now - (now % HOUR_MS);
      this.hour = hourKey(now);
    }
    this.counts.add(`${projectId}|${this.hour}|${outcome}|${reason}|${domainId}|${country}`);
  }

  /** Writes what was counted now (tests, shutdown); never rejects, the counts wait for the next flush. */
  flush(): Promise<void> {
    return this.flusher.runNow();
  }

  /** Deletes the rows of hours that ended ANALYTICS_RETENTION_DAYS or more ago (one indexed statement). */
  async prune(): Promise<void> {
    const before = hourKey(this.clock.nowMs() - this.config.env.ANALYTICS_RETENTION_DAYS * 24 * HOUR_MS);
    await this.dataSource.query('DELETE FROM runtime_answers WHERE hour < ?', [before]);
  }

  private async upsert(manager: EntityManager, counts: Array<[string, number]>): Promise<void> {
    for (let i = 0; i < counts.length; i += CHUNK) {
      const chunk = counts.slice(i, i + CHUNK);
      const params: unknown[] = [];
      for (const [key, n] of chunk) {
        const [project, hour, outcome, reason, domain, country] = key.split('|');
        params.push(Number(project), hour, outcome, reason, Number(domain), country, n);
      }
      const values = chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
      const insert = `INSERT INTO runtime_answers (project_id, hour, outcome, reason, domain_id, country, count) VALUES ${values}`;
      await manager.query(
        this.mysql
          ? `${insert} ON DUPLICATE KEY UPDATE count = count + VALUES(count)`
          : `${insert} ON CONFLICT (project_id, hour, outcome, reason, domain_id, country) DO UPDATE SET count = count + excluded.count`,
        params,
      );
    }
  }
}
