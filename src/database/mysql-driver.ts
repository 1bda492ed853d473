import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2';
import { ACQUIRE_TIMEOUT, isConnectionLost, STATEMENT_TIMEOUT } from '../common/db-errors.js';

/**
 * How long the service waits on MySQL/MariaDB before it gives up on a call and answers 503 (README,
 * "When the database is away"). A server that is paused accepts connections and statements and never
 * answers; without these a call waits for as long as the pause lasts. The sum of the acquire and the
 * statement deadlines stays under 5 s, so a call that needs the database answers within that.
 */
export const DEADLINES = {
  /** TCP connect and handshake of a new connection (mysql2's `connectTimeout`). */
  connectMs: 2000,
  /** Waiting for a pooled connection, the handshake of a new one included. */
  acquireMs: 2000,
  /** One statement, from sending it to its last row. */
  statementMs: 2500,
};

type Callback = (error: (Error & { code?: string }) | null, ...result: unknown[]) => void;
type Query = (sql: unknown, values: unknown, callback?: Callback) => unknown;

/**
 * mysql2 as TypeORM's `driver` option, with the deadlines mysql2's pool lacks:
 * - taking a connection from the pool fails after `acquireMs` (mysql2 would queue the caller until a
 *   connection frees up, which a stalled server never lets happen);
 * - a statement fails after `statementMs`, and its connection is destroyed rather than returned to
 *   the pool: mysql2 keeps the unanswered statement at the head of the connection's queue, so the next
 *   statement sent on it would wait behind it, with no deadline running. Destroying the connection
 *   also has the server roll back a transaction left open on it;
 * - once a connection is found lost, the pool hands out no connection that has not answered since:
 *   after a server restart the client is not always told (a load balancer, a NAT in between), and the
 *   other idle connections are as dead as the one that failed;
 * - a plain read that was the first statement on a connection just taken from the pool, and found it
 *   lost, runs again once on a fresh connection: nothing else ran on it, and a read changes nothing.
 *
 * Statements get their deadline only after `boundStatements()`: migrations run first, and a schema
 * change may take as long as it takes.
 */
export class BoundedMysql {
  private statementsBounded = false;

  constructor(private readonly deadlines = DEADLINES) {}

  boundStatements(): void {
    this.statementsBounded = true;
  }

  createPool(options: PoolOptions): Pool {
    return new GuardedPool(mysql.createPool(options), this.deadlines, () => this.statementsBounded).pool;
  }
}

/** A wait with a deadline: `expire` runs once it has passed, unless the wait ended before. */
interface Deadline {
  at: number;
  expire: () => void;
}

/**
 * How often deadlines are checked: one timer for all waits rather than one per statement, which
 * cost a fifth of a pooled statement's throughput here. A deadline fires up to this much late.
 */
const SWEEP_MS = 100;

class GuardedPool {
  /** Connections just handed out, until their first statement. */
  private readonly fresh = new WeakSet<PoolConnection>();
  /** When each connection last had an answer from the server (its handshake, at first). */
  private readonly answered = new WeakMap<PoolConnection, number>();
  /** When a connection was last found lost. */
  private lostAt = 0;
  private readonly take: Pool['getConnection'];
  private readonly waits = new Set<Deadline>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    readonly pool: Pool,
    private readonly deadlines: typeof DEADLINES,
    private readonly statementsBounded: () => boolean,
  ) {
    this.take = pool.getConnection.bind(pool);
    pool.getConnection = (callback) => this.acquire(callback);
    pool.on('connection', (connection) => {
      this.answered.set(connection, Date.now());
      this.guard(connection);
    });
  }

  private watch(ms: number, expire: () => void): Deadline {
    const deadline = { at: Date.now() + ms, expire };
    this.waits.add(deadline);
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
    return deadline;
  }

  private sweep(): void {
    const now = Date.now();
    for (const deadline of this.waits) {
      if (deadline.at > now) continue;
      this.waits.delete(deadline);
      deadline.expire();
    }
    if (this.waits.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  private acquire(callback: Parameters<Pool['getConnection']>[0]): void {
    let settled = false;
    const deadline = this.watch(this.deadlines.acquireMs, () => {
      settled = true;
      callback(Object.assign(new Error(`No database connection within ${this.deadlines.acquireMs} ms.`), { code: ACQUIRE_TIMEOUT }), undefined as never);
    });
    const attempt = () =>
      this.take((error, connection) => {
        if (settled) {
          // The caller has given up: a connection that arrives after all goes back to the pool.
          if (!error) connection.release();
          return;
        }
        if (!error && (this.answered.get(connection) ?? 0) < this.lostAt) {
          // Idle since another connection was found lost: likely lost too.
          connection.destroy();
          return attempt();
        }
        settled = true;
        this.waits.delete(deadline);
        if (!error) this.fresh.add(connection);
        callback(error, connection);
      });
    attempt();
  }

  private guard(connection: PoolConnection): void {
    const raw = connection as unknown as { query: Query };
    const query = raw.query.bind(connection) as Query;
    raw.query = (sql, values, callback) => {
      if (typeof values === 'function') return raw.query(sql, undefined, values as Callback);
      const first = this.fresh.delete(connection);
      if (!this.statementsBounded() || typeof sql !== 'string' || !callback) return query(sql, values, callback);
      let settled = false;
      const deadline = this.watch(this.deadlines.statementMs, () => {
        settled = true;
        // mysql2 would keep the unanswered statement at the head of this connection's queue.
        connection.destroy();
        callback(Object.assign(new Error(`No answer from the database within ${this.deadlines.statementMs} ms.`), { code: STATEMENT_TIMEOUT }));
      });
      return query(sql, values, (error, ...result) => {
        if (settled) return; // an answer after the deadline: the caller has it already
        settled = true;
        this.waits.delete(deadline);
        if (!error) {
          this.answered.set(connection, Date.now());
        } else if (isConnectionLost(error)) {
          this.lostAt = Date.now();
          if (first && /^\s*SELECT\b/i.test(sql)) return this.readAgain(sql, values, callback);
        }
        callback(error, ...result);
      });
    };
  }

  private readAgain(sql: string, values: unknown, callback: Callback): void {
    this.pool.getConnection((error, connection) => {
      if (error) return callback(error);
      // Once only: a second loss is the answer.
      this.fresh.delete(connection);
      (connection as unknown as { query: Query }).query(sql, values, (failure, ...result) => {
        connection.release();
        callback(failure, ...result);
      });
    });
  }
}
