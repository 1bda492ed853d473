import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { growingLru } from '../common/cache/growing-lru.js';
import { DataSource } from 'typeorm';
import { GenerationCache, SharedLoads } from '../common/cache/generation-cache.js';
import { ProjectGenerations } from '../common/cache/generations.js';
import type { MaybePromise } from '../common/maybe-promise.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { JOBS } from '../common/jobs.js';
import { sqlDatetime } from '../common/time.js';
import { affectedRows, CONTENDED } from '../database/affected-rows.js';
import { databaseFailure, isUniqueViolation } from '../database/db-errors.js';
import { retrying } from '../database/retry.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { utcDay } from '../licenses/licenses.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { AppConfig } from '../config/app-config.js';

export type Activation = 'ok' | 'max_domains' | 'max_subdomains';

/** What activations read of a license. */
type ActivatedLicense = Pick<
  LicenseEntity,
  'id' | 'project_id' | 'max_domains' | 'max_subdomains_per_domain'
>;

/** An activation's license, and its project (for the limit's event). */
export interface ActivationContext {
  license: ActivatedLicense;
  project: ProjectEntity;
}

/**
 * An activation this process has seen recorded; `seen`: when its last_seen_at was last marked.
 * `capped`: answered but not recorded, the license holding LICENSE_MAX_ACTIVATIONS already.
 */
interface KnownActivation {
  seen: number;
  capped?: true;
}

/** last_seen_at is marked at most this often per activation and process, and written within a second: within a minute of the truth. */
const SEEN_EVERY_MS = 30_000;
/** Activations per last_seen_at statement. */
const SEEN_CHUNK = 200;
const PRUNE_EVERY_MS = 600_000;
const TOTAL_SQL = 'SELECT COUNT(*) FROM license_activations WHERE license_id = ?';
/** Below LICENSE_MAX_ACTIVATIONS by more than this, no insert counts the license's activations. */
const CAP_MARGIN = 100;

/**
 * Domain activations (docs/architecture.md#counters-usage-and-activations): the conditional insert
 * that enforces max_domains and max_subdomains_per_domain in the database (racing calls, in this
 * process or in other instances, can never both take the last slot), the activations this process
 * has seen recorded, their seen marks written to last_seen_at once a second, and the
 * license.domain_limit_reached notices.
 */
@Injectable()
export class Activations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Counters');
  /**
   * Activations this process has seen recorded, with their project's generation read before
   * (common/cache/generations.ts): a repeat call from the same place asks nothing of the database
   * until a write to the project (one that frees an activation, say) makes them stale.
   */
  private readonly knownActivations: GenerationCache<string, KnownActivation>;
  private readonly recording = new SharedLoads<string, Activation>();
  /** Activations seen since the last write (key as in knownActivations → ms), for last_seen_at. */
  private seen = new Map<string, number>();
  /** Licenses and limits whose license.domain_limit_reached of the day is recorded. */
  private readonly noticed = growingLru<string, true>(50_000);
  private readonly mysql: boolean;
  private readonly maxActivations: number;
  private readonly task: PeriodicTask;
  private prunedDays = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly projectChanges: ProjectChanges,
    private readonly generations: ProjectGenerations,
    config: AppConfig,
  ) {
    this.maxActivations = config.env.LICENSE_MAX_ACTIVATIONS;
    this.mysql = dataSource.options.type !== 'better-sqlite3';
    this.knownActivations = new GenerationCache(generations, { max: 200_000 });
    this.task = new PeriodicTask({
      ...JOBS.lastSeenWrites,
      logger: this.logger,
      run: async () => {
        await this.writeSeen();
        await this.pruneDays();
      },
      lines: {
        failing: (error) => [
          { db: databaseFailure(error) },
          'last_seen_at could not be written: kept in memory until the database answers',
        ],
        recovered: 'last_seen_at written again',
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

  /** Writes the seen marks now (and prunes the per-day rows when due); never rejects. */
  flush(): Promise<void> {
    return this.task.runNow();
  }

  /**
   * Records that the license was used from `host` under the registered `domain` ('' host = the domain
   * itself). A new domain past `max_domains`, or a new subdomain past `max_subdomains_per_domain`, is
   * refused, and the first refusal of the day for that place is announced (license.domain_limit_reached).
   *
   * Activations this process has seen recorded are remembered with the project's generation read before
   * (common/cache/generations.ts): a deactivation bumps it, on every instance, so from the next call on
   * every instance asks the database again and a freed slot is free at once. While the generation
   * cannot be trusted (null) nothing is remembered.
   */
  activate(entry: ActivationContext, domain: string, host: string): MaybePromise<Activation> {
    const { license } = entry;
    const domainKey = `${license.id}\u0000${domain}\u0000`;
    const generation = this.generations.current(license.project_id);
    // Recorded before by this process, and nothing changed in the project since: nothing to ask the database.
    const known = this.knownActivations.peek(domainKey, generation);
    if (known !== undefined) {
      if (host === '' || known.capped) {
        this.touch(domainKey, known);
        return 'ok';
      }
      const knownHost = this.knownActivations.peek(domainKey + host, generation);
      if (knownHost !== undefined) {
        this.touch(domainKey, known);
        this.touch(domainKey + host, knownHost);
        return 'ok';
      }
    }
    // Concurrent first calls from one place (a new license on a busy site) share one recording: the
    // same activation can only have one outcome, and the database sees one insert, not a burst of
    // racing inserts and unique violations. Only calls of one generation share: a call that began after
    // a deactivation must not take the answer of a recording that began before it.
    return this.recording.run(`${generation}\u0000${domainKey}${host}`, () =>
      this.record(entry, domain, host, domainKey, generation),
    );
  }

  private async record(
    entry: ActivationContext,
    domain: string,
    host: string,
    domainKey: string,
    generation: number | null,
  ): Promise<Activation> {
    const { license } = entry;
    const known = (key: string) => this.knownActivations.peek(key, generation) !== undefined;
    // A row found (not inserted) was last seen at some earlier time: this call is a sighting to write.
    const remember = (key: string, recorded: 'inserted' | 'existed' | 'capped') => {
      if (recorded === 'existed') this.seen.set(key, Date.now());
      this.knownActivations.set(key, license.project_id, generation, {
        seen: Date.now(),
        ...(recorded === 'capped' ? { capped: true } : {}),
      });
    };
    if (!known(domainKey)) {
      const recorded = await this.insertIf(
        license.id,
        domain,
        '',
        license.max_domains === null
          ? null
          : "SELECT COUNT(*) FROM license_activations WHERE license_id = ? AND host = ''",
        [license.id],
        license.max_domains,
      );
      if (!recorded) return this.refused(entry, 'max_domains', domain, host);
      remember(domainKey, recorded);
      if (recorded === 'capped') return this.capped(entry, domain, host);
    }
    if (host === '') return 'ok';
    const hostKey = domainKey + host;
    if (known(hostKey)) return 'ok';
    const recorded = await this.insertIf(
      license.id,
      domain,
      host,
      license.max_subdomains_per_domain === null
        ? null
        : "SELECT COUNT(*) FROM license_activations WHERE license_id = ? AND domain = ? AND host <> ''",
      [license.id, domain],
      license.max_subdomains_per_domain,
    );
    if (!recorded) return this.refused(entry, 'max_subdomains', domain, host);
    remember(hostKey, recorded);
    if (recorded === 'capped') return this.capped(entry, domain, host);
    return 'ok';
  }

  /**
   * Marks a known activation seen now when its last_seen_at was last set SEEN_EVERY_MS ago or more:
   * the flush writes it. A busy activation costs one row in one batched statement every half minute.
   */
  private touch(key: string, known: KnownActivation): void {
    const now = Date.now();
    if (known.capped || now - known.seen < SEEN_EVERY_MS) return;
    known.seen = now;
    this.seen.set(key, now);
  }

  /**
   * Announces license.domain_limit_reached for the first refusal of a license by a limit on a UTC day
   * (not per place: random subdomains must not make more events, docs/security.md); the event names
   * the place of that first refusal. A row in license_limit_notices (license, day, the limit's name,
   * '') claims it, in the unit that records the event, so racing refusals on any number of instances
   * announce it once. Remembered in process afterwards, so a site hammering at the limit costs no
   * write per call. The refusal is answered whatever becomes of the notice.
   */
  private async refused(
    entry: ActivationContext,
    outcome: Exclude<Activation, 'ok'>,
    domain: string,
    host: string,
  ): Promise<Activation> {
    const limit = outcome === 'max_domains' ? 'max_domains' : 'max_subdomains_per_domain';
    await this.notice(entry, limit, 'license.domain_limit_reached', { limit, domain, host });
    return outcome;
  }

  /**
   * A new place past LICENSE_MAX_ACTIVATIONS: answered as any other, not recorded (so a public key
   * cannot be used to lock its buyer out, nor grow the table without end), and announced once per
   * license and UTC day (license.activation_cap_reached).
   */
  private async capped(entry: ActivationContext, domain: string, host: string): Promise<Activation> {
    await this.notice(entry, 'activations', 'license.activation_cap_reached', {
      max_activations: this.maxActivations,
      domain,
      host,
    });
    return 'ok';
  }

  /**
   * Records `type` once per license, `limit` and UTC day (see `refused`); never rejects.
   */
  private async notice(
    entry: ActivationContext,
    limit: string,
    type: 'license.domain_limit_reached' | 'license.activation_cap_reached',
    detail: Record<string, unknown>,
  ): Promise<void> {
    const { license, project } = entry;
    const day = utcDay();
    const key = `${day}\u0000${license.id}\u0000${limit}`;
    if (this.noticed.has(key)) return;
    // Claimed before the write, so racing refusals in this process make one transaction, not one each.
    this.noticed.set(key, true);
    const event = { license_id: license.id, project_id: project.id, ...detail };
    try {
      await this.projectChanges.run(
        project,
        async (manager) => {
          try {
            await affectedRows(
              this.dataSource,
              'INSERT INTO license_limit_notices (license_id, day, domain, host) VALUES (?, ?, ?, ?)',
              [license.id, day, limit, ''],
              manager,
            );
          } catch (error) {
            // Announced already, by this call's twin here or on another instance.
            if (isUniqueViolation(error)) return { result: undefined };
            throw error;
          }
          // A runtime notice, not a management write: no audit row.
          return { result: undefined, events: [[type, event]] };
        },
        { invalidates: false }, // a notice is in no cache
      );
    } catch (error) {
      this.noticed.delete(key);
      this.logger.warn(
        { db: databaseFailure(error) },
        `${type} could not be recorded; the next call tries again`,
      );
    }
  }

  /**
   * The per-day rows of the self-service allowance and of the limit notices matter only for their day:
   * those before yesterday (instances' clocks may differ a little) go, every 10 minutes.
   */
  private async pruneDays(): Promise<void> {
    if (Date.now() - this.prunedDays < PRUNE_EVERY_MS) return;
    this.prunedDays = Date.now();
    const yesterday = utcDay(new Date(Date.now() - 86_400_000));
    try {
      await this.dataSource.query('DELETE FROM license_limit_notices WHERE day < ?', [yesterday]);
      await this.dataSource.query('DELETE FROM license_deactivations WHERE day < ?', [yesterday]);
    } catch {
      // The database is away: the next round, in 10 minutes, prunes what is left.
    }
  }

  /**
   * Sets last_seen_at of the activations seen since the last flush: one statement per second of
   * sightings and 200 activations, never moving a value back (another instance may have written a
   * later one). Nothing to settle: writing a sighting twice changes nothing, so what failed is simply
   * kept for the next flush. A deleted activation stays deleted (an UPDATE creates no row).
   */
  private async writeSeen(): Promise<void> {
    if (this.seen.size === 0) return;
    const batch = this.seen;
    this.seen = new Map();
    const bySecond = new Map<string, string[]>();
    for (const [key, at] of batch) {
      const second = sqlDatetime(at);
      const keys = bySecond.get(second);
      if (keys) keys.push(key);
      else bySecond.set(second, [key]);
    }
    try {
      for (const [second, keys] of bySecond) {
        for (let i = 0; i < keys.length; i += SEEN_CHUNK) {
          const chunk = keys.slice(i, i + SEEN_CHUNK).map((key) => key.split('\u0000'));
          const places = chunk.map(() => '(license_id = ? AND domain = ? AND host = ?)').join(' OR ');
          const params = chunk.flatMap(([licenseId, domain, host]) => [Number(licenseId), domain, host]);
          await this.dataSource.query(
            `UPDATE license_activations SET last_seen_at = ? WHERE last_seen_at < ? AND (${places})`,
            [second, second, ...params],
          );
        }
      }
    } catch (error) {
      for (const [key, at] of batch) if ((this.seen.get(key) ?? 0) < at) this.seen.set(key, at);
      throw error; // logged once by the task, until a write works again
    }
  }

  private async count(sql: string, params: unknown[]): Promise<number> {
    const rows = await this.dataSource.query<Record<string, number | string>[]>(sql, params);
    return Number(Object.values(rows[0])[0]);
  }

  /**
   * Inserts the activation unless it exists; with a limit, only while `countSql` is below it, and
   * always only while the license holds fewer than LICENSE_MAX_ACTIVATIONS. Answers 'inserted' (its
   * last_seen_at is now), 'existed', 'capped' (not recorded: the license is at the cap), or null
   * when the limit refused it.
   */
  private async insertIf(
    licenseId: number,
    domain: string,
    host: string,
    countSql: string | null,
    countParams: unknown[],
    max: number | null,
  ): Promise<'inserted' | 'existed' | 'capped' | null> {
    const exists = async () =>
      (
        await this.dataSource.query<unknown[]>(
          'SELECT 1 AS one FROM license_activations WHERE license_id = ? AND domain = ? AND host = ?',
          [licenseId, domain, host],
        )
      ).length > 0;
    if (await exists()) return 'existed';
    const dual = this.mysql ? ' FROM DUAL' : '';
    // Far below the cap (a plain read says so) the insert is the one it always was: a count in the
    // insert locks the license's rows on MySQL, and racing first calls from new hosts would deadlock.
    // Near it, the count goes into the insert, so racing calls cannot pass the cap.
    const nearCap = (await this.count(TOTAL_SQL, [licenseId])) >= this.maxActivations - CAP_MARGIN;
    return retrying(async () => {
      try {
        const conditions = [
          ...(nearCap ? [`(${TOTAL_SQL}) < ?`] : []),
          ...(countSql === null ? [] : [`(${countSql}) < ?`]),
        ];
        const inserted =
          conditions.length === 0
            ? await affectedRows(
                this.dataSource,
                'INSERT INTO license_activations (license_id, domain, host) VALUES (?, ?, ?)',
                [licenseId, domain, host],
              )
            : await affectedRows(
                this.dataSource,
                `INSERT INTO license_activations (license_id, domain, host) SELECT ?, ?, ?${dual} WHERE ${conditions.join(' AND ')}`,
                [
                  licenseId,
                  domain,
                  host,
                  ...(nearCap ? [licenseId, this.maxActivations] : []),
                  ...(countSql === null ? [] : [...countParams, max]),
                ],
              );
        if (inserted > 0) return 'inserted';
        // Nothing inserted: over a limit — unless a racing call for this very activation took the
        // slot first, in which case the slot is ours too.
        if (await exists()) return 'existed';
        // The license's own limit refuses before the cap lets a place through unrecorded.
        if (countSql !== null && (await this.count(countSql, countParams)) >= (max ?? 0)) return null;
        return (await this.count(TOTAL_SQL, [licenseId])) >= this.maxActivations ? 'capped' : null;
      } catch (error) {
        // Another call recorded the same activation first: it exists, which is all we need.
        if (isUniqueViolation(error)) return 'existed';
        throw error;
      }
    }, CONTENDED);
  }
}
