import { Injectable, OnModuleInit } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  DataSource,
  EntityManager,
  EntityTarget,
  ObjectLiteral,
  QueryRunner,
  SelectQueryBuilder,
} from 'typeorm';
import { isCommitOutcomeUnknown, isConnectionLost, isDeadlock } from './db-errors.js';
import { retrying } from './retry.js';
import { WalCheckpoints } from './wal-checkpoints.js';

/**
 * Several statements that must land together (a change and its webhook outbox row; docs/architecture.md#the-outbox).
 *
 * MySQL/MariaDB: an ordinary transaction on a pooled connection of its own.
 *
 * SQLite: every request shares better-sqlite3's one connection, so an open transaction would take in
 * any statement another request runs meanwhile — and lose it on rollback. Here a unit therefore owns
 * the connection: statements from outside the unit wait until it ends, and a unit starts only once
 * the statements already under way have finished. AsyncLocalStorage tells the unit's own statements
 * from the others'.
 *
 * Units waiting their turn on SQLite are committed together: one transaction, each unit in a SAVEPOINT
 * of its own, so a unit that fails rolls back only its own work. The COMMIT (the WAL write) costs
 * several times a metered-usage call's statements
 * (docs/benchmarks.md#metered-usage-ahead-of-express-2026-11-27); the checkpoints that SQLite would
 * run inside it run on a thread of their own (WalCheckpoints). Every unit of the group is answered
 * once the COMMIT has landed, never before.
 */
@Injectable()
export class UnitOfWork implements OnModuleInit {
  private readonly sqlite: boolean;
  private readonly context = new AsyncLocalStorage<symbol>();
  private active: symbol | null = null;
  private inFlight = 0;
  private waiters: Array<() => void> = [];
  /** SQLite: units waiting for the next group, and whether a group is running. */
  private queued: Array<Queued> = [];
  private grouping = false;

  /** `checkpoints`: SQLite's checkpoints off the event loop (the service; the CLI leaves them to SQLite). */
  constructor(
    private readonly dataSource: DataSource,
    private readonly checkpoints?: WalCheckpoints,
  ) {
    this.sqlite = dataSource.options.type === 'better-sqlite3';
  }

  onModuleInit(): void {
    if (!this.sqlite) return;
    // The driver hands out one shared QueryRunner; gate its query method.
    const runner: QueryRunner = this.dataSource.createQueryRunner();
    const original = runner.query.bind(runner) as (...args: unknown[]) => Promise<unknown>;
    (runner as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
      if (this.active !== null && this.context.getStore() === this.active) return original(...args);
      while (this.active !== null || this.starting)
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      this.inFlight++;
      try {
        return await original(...args);
      } finally {
        this.inFlight--;
        this.wake();
      }
    };
  }

  private starting = false;

  async run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.sqlite) return this.transactionRetrying(work);
    if (this.active !== null && this.context.getStore() === this.active) {
      // Already inside this unit: join it.
      return work(this.dataSource.manager);
    }
    // The unit's work runs here, after the await, in its caller's own async context (the audit
    // context, the request's log), not in that of the call that started the group.
    const turn = await new Promise<Turn>((start, fail) => {
      this.queued.push({ start, fail });
      // The group starts once the event loop has read what else arrived: a unit's statements run
      // without a pause, so units that came in one by one would otherwise each be a group alone.
      if (!this.grouping) {
        this.grouping = true;
        setImmediate(() => void this.group());
      }
    });
    let outcome: Settled;
    try {
      const value = await this.context.run(turn.token, async () => {
        // Named apart from TypeORM's own savepoints (typeorm_N), which a unit's work may open.
        await turn.runner.query('SAVEPOINT unit');
        try {
          const result = await work(turn.runner.manager);
          await turn.runner.query('RELEASE unit');
          return result;
        } catch (error) {
          // (When SQLite has rolled the whole transaction back, there is no savepoint left.)
          await turn.runner.query('ROLLBACK TO unit').catch(() => undefined);
          await turn.runner.query('RELEASE unit').catch(() => undefined);
          throw error;
        }
      });
      outcome = { ok: true, value };
    } catch (error) {
      outcome = { ok: false, value: error };
    }
    turn.finished(outcome);
    // Answered once the group's COMMIT has landed; a transaction lost takes this unit's work with it.
    const lost = await turn.committed;
    if (!outcome.ok) throw outcome.value;
    if (lost !== NOT_LOST) throw lost;
    return outcome.value as T;
  }

  /**
   * MySQL/MariaDB. InnoDB breaks a deadlock by rolling one transaction back whole; that one is run
   * again from the start (its work reads everything it decides on inside the unit), a few times.
   *
   * A connection lost before the COMMIT went out takes its transaction with it (the server rolls it
   * back), so the unit runs again once on a fresh connection: a pooled connection that died while
   * idle costs no failed call. Once the COMMIT has been sent, a lost connection or a silence past the
   * deadline leaves the outcome unknown (isCommitOutcomeUnknown): never run again, never "not stored".
   */
  private transactionRetrying<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return retrying(() => this.transaction(work), {
      attempts: DEADLOCK_ATTEMPTS,
      retryable: (error, attempt) =>
        isDeadlock(error) || (attempt === 1 && isConnectionLost(error) && !isCommitOutcomeUnknown(error)),
    });
  }

  private async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    let started = false;
    try {
      await runner.startTransaction();
      started = true;
      const result = await work(runner.manager);
      await runner.commitTransaction();
      return result;
    } catch (error) {
      // (When START TRANSACTION failed there is nothing to roll back, and no connection to do it on.)
      if (started && runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      throw error;
    } finally {
      await runner.release();
    }
  }

  /** SQLite: runs the queued units, a group at a time, until none is left. */
  private async group(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        this.starting = true;
        while (this.inFlight > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
        try {
          await this.runGroup();
        } finally {
          this.active = null;
          this.starting = false;
          this.wake();
        }
        // Statements from outside a unit that waited get their turn before the next group, and
        // the requests that arrived meanwhile join it.
        if (this.queued.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.grouping = false;
    }
  }

  /**
   * One transaction for the units queued now (and those queued while it runs, up to GROUP_MAX), each
   * in a SAVEPOINT. Answers are handed out after the COMMIT; when the transaction itself fails (the
   * COMMIT, or an error after which SQLite rolled the whole transaction back), every unit of the
   * group that had succeeded gets that error instead: none of its work stayed.
   */
  private async runGroup(): Promise<void> {
    const runner = this.dataSource.createQueryRunner();
    const outer = Symbol('group');
    const inOuter = <R>(step: () => Promise<R>) => {
      this.active = outer;
      return this.context.run(outer, step);
    };
    const ran: Array<Settled & { answer: (lost: unknown) => void }> = [];
    let lost: unknown = NOT_LOST;
    try {
      await inOuter(() => runner.startTransaction());
      while (this.queued.length > 0 && ran.length < GROUP_MAX) {
        const unit = this.queued.shift() as Queued;
        const token = Symbol('unit');
        this.active = token;
        let answer!: (lost: unknown) => void;
        const committed = new Promise<unknown>((resolve) => (answer = resolve));
        const outcome = await new Promise<Settled>((finished) =>
          unit.start({ runner, token, finished, committed }),
        );
        ran.push({ ...outcome, answer });
        if (!outcome.ok && !this.inTransaction()) throw outcome.value;
      }
      await inOuter(() => runner.commitTransaction());
    } catch (error) {
      lost = error;
      if (runner.isTransactionActive)
        await inOuter(() => runner.rollbackTransaction()).catch(() => undefined);
      // A ROLLBACK that found no transaction left TypeORM believing one is open: the next group's
      // BEGIN would become a SAVEPOINT.
      if (!this.inTransaction()) Object.assign(runner, { isTransactionActive: false, transactionDepth: 0 });
      // A group that could not even begin: its first unit gets the error.
      if (ran.length === 0 && this.queued.length > 0) (this.queued.shift() as Queued).fail(error);
    }
    if (lost === NOT_LOST) this.checkpoints?.committed();
    // A unit whose own work failed answers its own error; the others, whether their work stayed.
    for (const unit of ran) unit.answer(unit.ok ? lost : NOT_LOST);
  }

  /** Whether SQLite still holds the group's transaction (some errors roll it all back on their own). */
  private inTransaction(): boolean {
    const db = (this.dataSource.driver as unknown as { databaseConnection?: { inTransaction?: boolean } })
      .databaseConnection;
    return db?.inTransaction !== false;
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const resolve of waiting) resolve();
  }
}

const DEADLOCK_ATTEMPTS = 4;
/** At most this many units share one SQLite transaction: the first of them waits for the last. */
const GROUP_MAX = 64;

interface Queued {
  /** Gives the unit its turn: its caller then runs the work on the group's transaction. */
  start: (turn: Turn) => void;
  /** Refuses the unit before its turn (the group's transaction could not begin). */
  fail: (error: unknown) => void;
}

interface Turn {
  runner: QueryRunner;
  /** The unit's own token in the unit of work's context: its statements go to the group's runner. */
  token: symbol;
  /** Says how the unit's work ended; the group goes on with the next unit. */
  finished: (outcome: Settled) => void;
  /** Once the group has ended: NOT_LOST, or the error that lost its transaction. */
  committed: Promise<unknown>;
}

type Settled = { ok: boolean; value: unknown };

/** The group's transaction committed (an error value could be anything, undefined included). */
const NOT_LOST = Symbol('committed');

/**
 * The query, locking the rows it reads against other writers until the unit ends (MySQL: FOR UPDATE,
 * which also reads the latest committed rows rather than the transaction's snapshot; a SQLite unit
 * already excludes every other statement). An exclusive lock, not a shared one: TypeORM's `mysql`
 * driver writes `FOR SHARE` for any server from 8.0 on, which MariaDB 10/11 refuse.
 */
export function writeLocked<Q extends SelectQueryBuilder<ObjectLiteral>>(query: Q): Q {
  if (query.connection.options.type !== 'better-sqlite3') query.setLock('pessimistic_write');
  return query;
}

/**
 * A row as it stands inside a unit of work, locked against other writers until the unit ends. Events
 * that say what a change did compare against this, never against a copy read before the unit: racing
 * writes would otherwise each see the old state and each announce the change.
 */
export async function lockedRow<T extends ObjectLiteral>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  id: number,
): Promise<T> {
  return writeLocked(manager.createQueryBuilder(entity, 'row').where('row.id = :id', { id })).getOneOrFail();
}

/** Like lockedRow, by any columns, and null when no row matches. */
export async function lockedRowWhere<T extends ObjectLiteral>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  where: Partial<T>,
): Promise<T | null> {
  return writeLocked(manager.createQueryBuilder(entity, 'row').where(where)).getOne();
}
