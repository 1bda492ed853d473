import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { PeriodicTask } from '../common/periodic-task.js';
import { JOBS } from '../common/jobs.js';
import { databaseFailure } from '../database/db-errors.js';
import { FlushedCounts } from '../database/flushed-counts.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** Rows per flush statement (SQLite allows 500 terms in one compound SELECT). */
const FLUSH_CHUNK = 200;

/**
 * The calls of licenses without a daily limit, counted in memory and added to license_usage once a
 * second (docs/architecture.md#counters-usage-and-activations), so that unlimited licenses never
 * serialise on a row. While the database is away the counts stay in memory and are written once it
 * is back; a flush whose COMMIT went unanswered is sent again under the same id, so it is counted
 * once whether or not the first one landed (database/flushed-counts.ts).
 */
@Injectable()
export class UsageFlush implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Counters');
  /** Calls by `license_id:day:paid` (paid 1 or 0), merged into one row per license and day when written. */
  private readonly usage: FlushedCounts;
  private readonly mysql: boolean;
  private readonly task: PeriodicTask;
  /** The last day counted, and its keys' tails: remade once a day, not per call. */
  private day = '';
  private paidTail = '';
  private unpaidTail = '';

  constructor(dataSource: DataSource, unit: UnitOfWork) {
    this.mysql = dataSource.options.type !== 'better-sqlite3';
    this.usage = new FlushedCounts(unit, async (manager, counts) => {
      const rows = byLicenseDay(counts);
      for (let i = 0; i < rows.length; i += FLUSH_CHUNK)
        await manager.query(...this.upsert(rows.slice(i, i + FLUSH_CHUNK)));
    });
    this.task = new PeriodicTask({
      ...JOBS.usageFlush,
      logger: this.logger,
      run: async () => {
        if (this.usage.size > 0) await this.usage.flush();
      },
      lines: {
        failing: (error) => [
          { db: databaseFailure(error) },
          'Usage counts could not be written: kept in memory until the database answers',
        ],
        recovered: 'Usage counts written again',
      },
    });
  }

  onModuleInit(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
    await this.task.runNow();
  }

  /**
   * One call of the unlimited license `licenseId` on UTC `day`, answered paid or not: one Map
   * increment (the answer rides in the key rather than a second counter, so the hot path stays one),
   * under a key made of one concatenation, as before the answer was counted.
   */
  add(licenseId: number, day: string, paid: boolean): void {
    if (day !== this.day) {
      this.day = day;
      this.paidTail = `:${day}:1`;
      this.unpaidTail = `:${day}:0`;
    }
    this.usage.add(licenseId + (paid ? this.paidTail : this.unpaidTail));
  }

  /**
   * Adds the in-memory counts to the database: one upsert statement per flush (per 200 licenses),
   * whatever the count. Counts of a license deleted since they were taken are dropped with it, not
   * written back as a row of a license that no longer exists. One flush at a time; never rejects.
   */
  flush(): Promise<void> {
    return this.task.runNow();
  }

  /**
   * The upsert adding `chunk`'s counts, and its parameters. A row written before paid answers were
   * counted keeps paid null (null + n): that day's split stays unknown rather than half counted. The
   * values are named n and p, not count and paid: MySQL reads a bare `paid` in the update as
   * ambiguous between the table and the select.
   */
  private upsert(chunk: UsageRow[]): [string, unknown[]] {
    const rows = chunk
      .map((_, j) => (j === 0 ? 'SELECT ? AS license_id, ? AS day, ? AS n, ? AS p' : 'SELECT ?, ?, ?, ?'))
      .join(' UNION ALL ');
    const params = chunk.flatMap((row) => [row.licenseId, row.day, row.n, row.paid]);
    const select = `SELECT v.license_id, v.day, v.n, v.p FROM (${rows}) v WHERE EXISTS (SELECT 1 FROM licenses l WHERE l.id = v.license_id)`;
    const sql = this.mysql
      ? `INSERT INTO license_usage (license_id, day, count, paid) ${select} ON DUPLICATE KEY UPDATE count = count + VALUES(count), paid = paid + VALUES(paid)`
      : `INSERT INTO license_usage (license_id, day, count, paid) ${select} ON CONFLICT (license_id, day) DO UPDATE SET count = count + excluded.count, paid = paid + excluded.paid`;
    return [sql, params];
  }
}

/** One license's calls of one day: all of them, and those answered paid. */
interface UsageRow {
  licenseId: number;
  day: string;
  n: number;
  paid: number;
}

/** The counts by `license_id:day:paid` as one row per license and day (the key without `:paid`). */
function byLicenseDay(counts: Array<[string, number]>): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  for (const [key, n] of counts) {
    const at = key.slice(0, -2);
    let row = rows.get(at);
    if (!row) {
      const colon = at.indexOf(':');
      row = { licenseId: Number(at.slice(0, colon)), day: at.slice(colon + 1), n: 0, paid: 0 };
      rows.set(at, row);
    }
    row.n += n;
    if (key.endsWith(':1')) row.paid += n;
  }
  return [...rows.values()];
}
