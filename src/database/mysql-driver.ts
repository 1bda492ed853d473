import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2';
import { ACQUIRE_TIMEOUT, isConnectionLost } from '../common/db-errors.js';

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

class GuardedPool {
  /** Connections just handed out, until their first statement. */
  private readonly fresh = new WeakSet<PoolConnection>();
  /** When each connection last had an answer from the server (its handshake, at first). */
  private readonly answered = new WeakMap<PoolConnection, number>();
  /** When a connection was last found lost. */
  private lostAt = 0;
  private readonly take: Pool['getConnection'];

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

  private acquire(callback: Parameters<Pool['getConnection']>[0]): void {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      callback(Object.assign(new Error(`No database connection within ${this.deadlines.acquireMs} ms.`), { code: ACQUIRE_TIMEOUT }), undefined as never);
    }, this.deadlines.acquireMs);
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
        clearTimeout(timer);
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
      return query({ sql, timeout: this.deadlines.statementMs }, values, (error, ...result) => {
        if (!error) {
          this.answered.set(connection, Date.now());
        } else if (error.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
          connection.destroy();
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
