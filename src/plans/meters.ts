import {
  HttpStatus,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { growingLru } from '../common/cache/growing-lru.js';
import { ApiError, fieldError } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { JOBS } from '../common/jobs.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { Clock, sqlDatetime } from '../common/time.js';
import { affectedRows, CONTENDED } from '../database/affected-rows.js';
import { isUniqueViolation } from '../database/db-errors.js';
import { retrying } from '../database/retry.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { type Entitlements, METER_PREFIX, metersOf } from './entitlements.js';

/** What a record call answers: the meter this UTC month. */
export interface MeterAnswer {
  meter: string;
  used: number;
  limit: number;
  remaining: number;
  resets_at: string;
}

/** One call to record usage of a meter. */
export interface MeterRecord {
  project: ProjectEntity;
  licenseId: number;
  /** The license's effective entitlements. */
  entitlements: Entitlements;
  meter: string;
  amount: number;
  idempotencyKey?: string;
}

/** How long an idempotency key is bound to its first answer. */
export const IDEMPOTENCY_DAYS = 35;
const DAY_MS = 86_400_000;

export const keyReused = 'This idempotency key was sent before with another meter or amount.';

/** The UTC calendar month of `ms` as YYYY-MM. */
export function utcMonth(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** The start of the UTC month after the one `ms` falls in. */
export function nextUtcMonth(ms: number): Date {
  const at = new Date(ms);
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}

/** A record call past the meter's quota: thrown inside the unit so that nothing it wrote stays. */
class OverQuota extends Error {
  constructor(readonly answer: MeterAnswer) {
    super('over quota');
  }
}

/**
 * Metered usage (docs/plans.md#metered-usage): a meter's quota per license and UTC month, taken by one
 * conditional UPDATE (`used + amount <= limit`) in the database, never read-then-write, so racing
 * calls in this process or in other instances on the same database never take more than the quota.
 * An idempotency key is written in the same unit of work as the count it answers for: both land, or
 * neither (a refused call keeps no key).
 */
@Injectable()
export class Meters implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Meters');
  private readonly mysql: boolean;
  /** (license, meter, month) rows known to exist: the insert-if-missing is skipped for them. */
  private readonly rows = growingLru<string, true>(100_000);
  private readonly pruning = new PeriodicTask({
    ...JOBS.meterKeyPruning,
    logger: this.logger,
    run: async () => {
      const pruned = await this.prune();
      if (pruned > 0)
        this.logger.log(`pruned ${pruned} idempotency keys older than ${IDEMPOTENCY_DAYS} days`);
    },
  });

  constructor(
    private readonly dataSource: DataSource,
    private readonly projectChanges: ProjectChanges,
    private readonly clock: Clock,
  ) {
    this.mysql = dataSource.options.type !== 'better-sqlite3';
  }

  /**
   * Counts `amount` against the meter, or answers why not: 404 for a meter the license lacks, 429 past
   * the quota (nothing counted), 422 for an idempotency key sent before with another meter or amount;
   * a key sent before with the same answers the first answer and counts nothing.
   */
  async record(call: MeterRecord): Promise<MeterAnswer> {
    const limit = meterLimit(call.entitlements, call.meter);
    const now = this.clock.nowMs();
    const month = utcMonth(now);
    const resetsAt = nextUtcMonth(now);
    const answer = (used: number): MeterAnswer => ({
      meter: call.meter,
      used,
      limit,
      remaining: Math.max(0, limit - used),
      resets_at: toIsoTimestamp(resetsAt) as string,
    });
    for (let attempt = 1; ; attempt++) {
      await this.ensureRow(call.licenseId, call.meter, month);
      try {
        const taken = await retrying(() => this.take(call, limit, month, now, answer), CONTENDED);
        if (taken !== 'no_row') return taken;
        this.rows.delete(rowKey(call.licenseId, call.meter, month)); // deleted meanwhile: made again
      } catch (error) {
        if (error instanceof OverQuota) {
          // A key sent before answers its first answer, even once the quota is used up.
          const replayed = call.idempotencyKey === undefined ? null : await this.replay(call, now);
          if (replayed) return replayed;
          await this.announce(call, month, error.answer);
          throw new ApiError(
            HttpStatus.TOO_MANY_REQUESTS,
            `This license has used its quota of ${limit} for ${call.meter} this month; it resets at ${error.answer.resets_at}.`,
            null,
            { ...error.answer },
            { 'Retry-After': String(Math.max(1, Math.ceil((resetsAt.getTime() - now) / 1000))) },
          );
        }
        if (call.idempotencyKey === undefined || !isUniqueViolation(error)) throw error;
        const replayed = await this.replay(call, now);
        if (replayed) return replayed;
      }
      if (attempt >= 3) throw new Error('Could not record the meter usage');
    }
  }

  /** The unit of work of one record call: the key, the conditional UPDATE, the answer. */
  private take(
    call: MeterRecord,
    limit: number,
    month: string,
    now: number,
    answer: (used: number) => MeterAnswer,
  ): Promise<MeterAnswer | 'no_row'> {
    const { licenseId, meter, amount, idempotencyKey } = call;
    return this.projectChanges.run<MeterAnswer | 'no_row'>(
      call.project,
      async (manager) => {
        const took = await affectedRows(
          this.dataSource,
          'UPDATE meter_usage SET used = used + ? WHERE license_id = ? AND meter = ? AND month = ? AND used + ? <= ?',
          [amount, licenseId, meter, month, amount, limit],
          manager,
        );
        const row = await this.usedIn(manager, licenseId, meter, month);
        if (row === null) return { result: 'no_row' as const, events: [], unchanged: true };
        const answered = answer(row.used);
        if (took === 0) throw new OverQuota(answered);
        // The key last, with its answer: a call racing with the same key counted too, and now finds
        // the key taken (on MySQL, once this unit commits), so its unit rolls back with its count.
        if (idempotencyKey !== undefined)
          await manager.query(
            'INSERT INTO meter_idempotency_keys (license_id, idempotency_key, meter, amount, answer, created_at) VALUES (?, ?, ?, ?, ?, ?)',
            [licenseId, idempotencyKey, meter, amount, JSON.stringify(answered), sqlDatetime(now)],
          );
        const events: Array<[WebhookEvent, unknown]> =
          answered.used >= limit && (await this.claimNotice(manager, licenseId, meter, month))
            ? [['license.quota_reached', quotaEvent(call, month, answered)]]
            : [];
        // A count, not a management write: no audit row, and no cache holds it.
        return { result: answered, events };
      },
      { invalidates: false },
    );
  }

  /** A key sent before: its first answer when it was for this meter and amount (422 otherwise); null when it has expired (then dropped). */
  private async replay(call: MeterRecord, now: number): Promise<MeterAnswer | null> {
    const rows: Array<{
      meter: string;
      amount: number | string;
      answer: string | null;
      created_at: Date | string;
    }> = await this.dataSource.query(
      'SELECT meter, amount, answer, created_at FROM meter_idempotency_keys WHERE license_id = ? AND idempotency_key = ?',
      [call.licenseId, call.idempotencyKey],
    );
    const row = rows[0];
    if (!row) return null; // refused and rolled back meanwhile: try again
    const cutoff = sqlDatetime(now - IDEMPOTENCY_DAYS * DAY_MS);
    const created =
      row.created_at instanceof Date ? sqlDatetime(row.created_at) : String(row.created_at).slice(0, 19);
    if (created <= cutoff) {
      await this.dataSource.query(
        'DELETE FROM meter_idempotency_keys WHERE license_id = ? AND idempotency_key = ? AND created_at <= ?',
        [call.licenseId, call.idempotencyKey, cutoff],
      );
      return null;
    }
    if (row.meter !== call.meter || Number(row.amount) !== call.amount)
      throw fieldError('idempotency_key', keyReused);
    if (row.answer === null) return null;
    return JSON.parse(row.answer) as MeterAnswer;
  }

  /** The month's row, made when missing (a no-op when another call made it first). */
  private async ensureRow(licenseId: number, meter: string, month: string): Promise<void> {
    const key = rowKey(licenseId, meter, month);
    if (this.rows.has(key)) return;
    await this.dataSource.query(
      this.mysql
        ? 'INSERT INTO meter_usage (license_id, meter, month, used, quota_reached) VALUES (?, ?, ?, 0, 0) ON DUPLICATE KEY UPDATE used = used'
        : 'INSERT INTO meter_usage (license_id, meter, month, used, quota_reached) VALUES (?, ?, ?, 0, 0) ON CONFLICT DO NOTHING',
      [licenseId, meter, month],
    );
    this.rows.set(key, true);
  }

  private async usedIn(
    manager: EntityManager,
    licenseId: number,
    meter: string,
    month: string,
  ): Promise<{ used: number } | null> {
    const rows: Array<{ used: number | string }> = await manager.query(
      'SELECT used FROM meter_usage WHERE license_id = ? AND meter = ? AND month = ?',
      [licenseId, meter, month],
    );
    return rows[0] ? { used: Number(rows[0].used) } : null;
  }

  /** Whether this call is the first to announce the meter's quota reached this month (a conditional UPDATE). */
  private async claimNotice(manager: EntityManager, licenseId: number, meter: string, month: string) {
    return (
      (await affectedRows(
        this.dataSource,
        'UPDATE meter_usage SET quota_reached = 1 WHERE license_id = ? AND meter = ? AND month = ? AND quota_reached = 0',
        [licenseId, meter, month],
        manager,
      )) > 0
    );
  }

  /** A call refused by the quota announces it too, when nothing has this month. */
  private async announce(call: MeterRecord, month: string, answered: MeterAnswer): Promise<void> {
    await this.projectChanges.run(
      call.project,
      async (manager) => {
        const claimed = await this.claimNotice(manager, call.licenseId, call.meter, month);
        return {
          result: undefined,
          events: claimed ? [['license.quota_reached', quotaEvent(call, month, answered)]] : [],
        };
      },
      { invalidates: false },
    );
  }

  /** The license's meters this month: `{code: {used, limit, resets_at}}`. */
  async report(
    licenseId: number,
    entitlements: Entitlements,
  ): Promise<Record<string, Omit<MeterAnswer, 'meter' | 'remaining'>>> {
    const meters = metersOf(entitlements);
    if (meters.length === 0) return {};
    const now = this.clock.nowMs();
    const rows: Array<{ meter: string; used: number | string }> = await this.dataSource.query(
      'SELECT meter, used FROM meter_usage WHERE license_id = ? AND month = ?',
      [licenseId, utcMonth(now)],
    );
    const used = new Map(rows.map((r) => [r.meter, Number(r.used)]));
    const resetsAt = toIsoTimestamp(nextUtcMonth(now)) as string;
    return Object.fromEntries(
      meters.map(([code, limit]) => [code, { used: used.get(code) ?? 0, limit, resets_at: resetsAt }]),
    );
  }

  /** Deletes the idempotency keys past IDEMPOTENCY_DAYS; answers how many. */
  async prune(): Promise<number> {
    const cutoff = sqlDatetime(this.clock.nowMs() - IDEMPOTENCY_DAYS * DAY_MS);
    return affectedRows(this.dataSource, 'DELETE FROM meter_idempotency_keys WHERE created_at <= ?', [
      cutoff,
    ]);
  }

  onApplicationBootstrap(): void {
    this.pruning.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pruning.stop();
  }
}

/** The meter's monthly quota among the entitlements; 404 when the license has no such meter. */
export function meterLimit(entitlements: Entitlements, meter: string): number {
  const limit = entitlements[meter];
  if (!meter.startsWith(METER_PREFIX) || typeof limit !== 'number')
    throw new ApiError(HttpStatus.NOT_FOUND, `This license has no meter "${meter}".`);
  return limit;
}

const rowKey = (licenseId: number, meter: string, month: string) => `${licenseId}\n${meter}\n${month}`;

function quotaEvent(call: MeterRecord, month: string, answered: MeterAnswer) {
  return {
    license_id: call.licenseId,
    project_id: call.project.id,
    meter: call.meter,
    limit: answered.limit,
    used: answered.used,
    month,
  };
}
