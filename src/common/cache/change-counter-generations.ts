import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { PeriodicTask } from '../periodic-task.js';
import { JOBS } from '../jobs.js';
import { ProjectGenerations } from './generations.js';

/**
 * Without Redis no instance hears another's writes (several instances on one MySQL, or on one SQLite
 * file, the CLI beside the server). Every write to a project adds one to its `change_seq` in the
 * write's own transaction (recordChange), and each instance reads the counters of the projects it
 * has cached something of every CHANGES_POLL_MS: a project whose counter moved starts a new
 * generation there. Nothing cached is served longer than this after a write another instance
 * committed: while the counters cannot be read (the database away), every project starts a new
 * generation this long after the last read that worked began (docs/security.md).
 */
export const UNSHARED_MAX_AGE_MS = 5000;
/** A project's change counter as the drivers give it (MySQL: a BIGINT comes as a string). */
type Counter = { change_seq: number | string };

/** How often the watched projects' change counters are read. */
const CHANGES_POLL_MS = JOBS.changeCounters.everyMs;
/** Projects whose counters one statement reads. */
const CHANGES_CHUNK = 500;
/** Projects watched at most; past it, every project starts a new generation and is watched afresh. */
const MAX_WATCHED = 100_000;

/**
 * The generations without Redis: this process sees every write it makes itself at once, and another
 * instance's within a second, from the change counters. Without a database (unit tests) only bump()
 * and the age bound move them.
 */
export class ChangeCounterGenerations extends ProjectGenerations implements OnApplicationShutdown {
  private readonly logger = new Logger('ProjectGenerations');
  /** When every project starts a new generation next (see UNSHARED_MAX_AGE_MS). */
  private rollAt = 0;
  /**
   * The projects this process has cached something of, each with its change_seq as last read
   * (undefined: not read yet).
   */
  private readonly watched = new Map<number, number | undefined>();
  /** With a database to read (the app; not the unit tests): reads the change counters. */
  private readonly changes: PeriodicTask | null;
  /** When the change counters are read next (on the first call from then on). */
  private readAt = 0;

  constructor(private readonly dataSource?: DataSource) {
    super();
    this.changes = dataSource
      ? new PeriodicTask({
          ...JOBS.changeCounters, // never started: runNow() from check
          logger: this.logger,
          run: () => this.readChanges(),
        })
      : null;
  }

  current(projectId: number): number | null {
    this.check(projectId);
    return this.known(projectId);
  }

  /**
   * What was loaded under a generation read more than UNSHARED_MAX_AGE_MS after the last read of the
   * change counters that worked began is stale (the generation was read before the rows, so no entry
   * outlives the bound, even while the counters cannot be read); and the counters are read again
   * when the last read is CHANGES_POLL_MS old. Driven by the calls and the clock they read, not by a
   * timer: nothing is served between calls, and tests move the clock. One clock read per call, no
   * I/O on the call itself.
   */
  private check(projectId: number): void {
    const now = this.now();
    if (now >= this.rollAt) {
      if (this.rollAt !== 0) this.forgetAll();
      this.rollAt = now + UNSHARED_MAX_AGE_MS;
    }
    if (!this.changes) return;
    if (!this.watched.has(projectId)) this.watch(projectId);
    if (now >= this.readAt) {
      this.readAt = now + CHANGES_POLL_MS;
      void this.changes.runNow();
    }
  }

  /**
   * A project seen for the first time: its counter is read at the next poll, and whatever was cached
   * of it before then starts a new generation there (its rows may predate that read).
   */
  private watch(projectId: number): void {
    if (this.watched.size >= MAX_WATCHED) {
      this.watched.clear();
      this.forgetAll();
    }
    this.watched.set(projectId, undefined);
  }

  /**
   * Reads the project's change counter now when this process has not read it yet, and starts the
   * project a new generation: what a load then reads is vouched for by this read, and the next read
   * of every counter does not take it for stale, as it must take anything cached of a project before
   * its counter was first read.
   */
  override observe(projectId: number): Promise<void> | undefined {
    if (!this.changes || this.watched.get(projectId) !== undefined) return undefined;
    return this.firstRead(projectId);
  }

  private async firstRead(projectId: number): Promise<void> {
    const [row] = await (this.dataSource as DataSource).query<Counter[]>(
      'SELECT change_seq FROM projects WHERE id = ?',
      [projectId],
    );
    if (this.watched.get(projectId) !== undefined) return; // a read of every counter came first
    if (!this.watched.has(projectId)) this.watch(projectId);
    this.watched.set(projectId, row === undefined ? -1 : Number(row.change_seq));
    this.changed(projectId);
  }

  /**
   * Reads the watched projects' change counters: a project whose counter moved since the last read
   * (or that is read for the first time, or is gone) starts a new generation. Every write committed
   * before the read began is then known, so nothing need be dropped for age until UNSHARED_MAX_AGE_MS
   * after it.
   */
  private async readChanges(): Promise<void> {
    const started = this.now();
    const ids = [...this.watched.keys()];
    for (let i = 0; i < ids.length; i += CHANGES_CHUNK) {
      const chunk = ids.slice(i, i + CHANGES_CHUNK);
      const rows = await (this.dataSource as DataSource).query<Array<Counter & { id: number | string }>>(
        `SELECT id, change_seq FROM projects WHERE id IN (${chunk.map(() => '?').join(', ')})`,
        chunk,
      );
      const read = new Map(rows.map((row) => [Number(row.id), Number(row.change_seq)]));
      for (const id of chunk) {
        if (!this.watched.has(id)) continue; // everything started over meanwhile
        const seq = read.get(id) ?? -1;
        if (this.watched.get(id) === seq) continue;
        this.watched.set(id, seq);
        this.changed(id);
      }
    }
    this.rollAt = Math.max(this.rollAt, started + UNSHARED_MAX_AGE_MS);
  }

  /** Also reads the counter's new value, so that this process's next read does not take its own write for another's. */
  override async recordChange(manager: EntityManager, projectId: number): Promise<number | undefined> {
    await super.recordChange(manager, projectId);
    if (!this.changes) return undefined;
    const [row] = await manager.query<Counter[]>('SELECT change_seq FROM projects WHERE id = ?', [projectId]);
    return row === undefined ? undefined : Number(row.change_seq);
  }

  /** The number the read cache's keys carry: the in-process generation, its counter read first. */
  async shared(projectId: number): Promise<string> {
    await this.observe(projectId);
    return String(this.current(projectId));
  }

  bump(projectId: number, seq?: number): Promise<void> {
    this.changed(projectId);
    if (seq !== undefined && this.watched.has(projectId)) this.watched.set(projectId, seq);
    return Promise.resolve();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.changes?.stop();
  }
}
