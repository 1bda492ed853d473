import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { MaybePromise } from '../common/maybe-promise.js';
import { affectedRows, CONTENDED } from '../database/affected-rows.js';
import { isUniqueViolation } from '../database/db-errors.js';
import { retrying } from '../database/retry.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { utcDay } from '../licenses/licenses.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { UsageFlush } from './usage-flush.js';

/** What the usage counter reads of a license. */
export type UsageLicense = Pick<LicenseEntity, 'id' | 'max_usage_per_day'>;

/**
 * Daily usage (docs/architecture.md#counters-usage-and-activations): a license's max_usage_per_day
 * is enforced by single conditional statements in the database, never read-then-write, so racing
 * calls, in this process or in other instances on the same database, can never both take the last
 * use. Calls of licenses without a limit are counted in memory (UsageFlush).
 */
@Injectable()
export class UsageCounter {
  constructor(
    private readonly dataSource: DataSource,
    private readonly projectChanges: ProjectChanges,
    private readonly flushed: UsageFlush,
  ) {}

  /**
   * Takes one use of today's allowance: 'ok', 'last' when this call took the last one, or 'refused'
   * when the license is at its max_usage_per_day for this UTC day. The statement that takes the last
   * use commits together with the license.usage_limit_reached event. Without a limit the call is
   * counted in memory (written once a second) and always allowed, at once. `paid`: the answer the use
   * is for, counted in the same statement (the analytics' paid/unpaid split by license).
   */
  takeUsage(
    license: UsageLicense,
    project: ProjectEntity,
    paid: boolean,
  ): MaybePromise<'ok' | 'last' | 'refused'> {
    const day = utcDay();
    const max = license.max_usage_per_day;
    if (max === null) {
      this.flushed.add(license.id, day, paid);
      return 'ok';
    }
    if (max <= 0) return 'refused';
    return this.takeLimited(license, project, day, max, paid ? 1 : 0);
  }

  /** A use of a license with a daily limit: conditional statements in the database. */
  private takeLimited(
    license: UsageLicense,
    project: ProjectEntity,
    day: string,
    max: number,
    paid: 0 | 1,
  ): Promise<'ok' | 'last' | 'refused'> {
    const event = { license_id: license.id, project_id: project.id, max_usage_per_day: max, day };
    const run = (sql: string, params: unknown[]) => affectedRows(this.dataSource, sql, params);
    const takeLast = (sql: string, params: unknown[]) =>
      this.projectChanges.run(
        project,
        async (manager) => {
          const took = (await affectedRows(this.dataSource, sql, params, manager)) > 0;
          // A runtime count, not a management write: no audit row.
          return { result: took, events: took ? [['license.usage_limit_reached', event]] : [] };
        },
        { invalidates: false }, // a usage count is in no cache: a warm check keeps answering while the database is away
      );
    // Two conditional statements instead of one so that exactly one call learns it took the last use;
    // only that one needs a unit of work.
    const bump = async (): Promise<'ok' | 'last' | null> => {
      if (
        (await run(
          'UPDATE license_usage SET count = count + 1, paid = paid + ? WHERE license_id = ? AND day = ? AND count < ?',
          [paid, license.id, day, max - 1],
        )) > 0
      ) {
        return 'ok';
      }
      if (
        await takeLast(
          'UPDATE license_usage SET count = count + 1, paid = paid + ? WHERE license_id = ? AND day = ? AND count = ?',
          [paid, license.id, day, max - 1],
        )
      ) {
        return 'last';
      }
      return null;
    };
    const insert = 'INSERT INTO license_usage (license_id, day, count, paid) VALUES (?, ?, 1, ?)';
    return retrying(async () => {
      const taken = await bump();
      if (taken) return taken;
      // No row yet, or the row is at the limit: the insert tells which.
      try {
        if (max === 1) return (await takeLast(insert, [license.id, day, paid])) ? 'last' : 'refused';
        await run(insert, [license.id, day, paid]);
        return 'ok';
      } catch (error) {
        // The row exists: at the limit, unless another call inserted it just now. One more try settles it.
        if (isUniqueViolation(error)) return (await bump()) ?? 'refused';
        throw error;
      }
    }, CONTENDED);
  }
}
