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
 */
@Injectable()
export class UnitOfWork implements OnModuleInit {
  private readonly sqlite: boolean;
  private readonly context = new AsyncLocalStorage<symbol>();
  private active: symbol | null = null;
  private inFlight = 0;
  private waiters: Array<() => void> = [];
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly dataSource: DataSource) {
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
    const turn = this.chain.then(() => this.exclusive(work));
    this.chain = turn.catch(() => undefined);
    return turn;
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

  private async exclusive<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    this.starting = true;
    while (this.inFlight > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    const token = Symbol('unit');
    this.active = token;
    this.starting = false;
    try {
      return await this.context.run(token, () => this.dataSource.transaction(work));
    } finally {
      this.active = null;
      this.wake();
    }
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const resolve of waiting) resolve();
  }
}

const DEADLOCK_ATTEMPTS = 4;

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
