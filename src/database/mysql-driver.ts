import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2';
import { ACQUIRE_TIMEOUT, isConnectionLost, STATEMENT_TIMEOUT } from './db-errors.js';

/**
 * How long the service waits on MySQL/MariaDB before it gives up on a call and answers 503
 * (docs/operations.md, "When the database is away"). A server that is paused accepts connections and statements and never
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

/** A wait with a deadline: `expire` runs once it has passed, unless the wait ended first. */
class Deadline {
  constructor(
    readonly at: number,
    private expire: (() => void) | null,
  ) {}

  get open(): boolean {
    return this.expire !== null;
  }

  /** The wait ended: false when its deadline had passed already (the caller has had its error). */
  end(): boolean {
    const open = this.expire !== null;
    this.expire = null;
    return open;
  }

  fire(): void {
    const expire = this.expire;
    this.expire = null;
    expire?.();
  }
}

/**
 * Waits of one length, in the order they began, hence in the order of their deadlines: a check looks
 * at the oldest ones only, and a wait that ends costs no lookup (a Set of waits cost a fifth of a
 * pooled statement's throughput here, a timer per statement as much).
 */
class DeadlineQueue {
  private waits: Deadline[] = [];

  constructor(private readonly ms: number) {}

  add(expire: () => void): Deadline {
    const deadline = new Deadline(Date.now() + this.ms, expire);
    this.waits.push(deadline);
    return deadline;
  }

  /** Fires the waits whose deadline has passed, forgets those that ended; false once none is left. */
  check(now: number): boolean {
    let done = 0;
    while (done < this.waits.length && (!this.waits[done].open || this.waits[done].at <= now))
      this.waits[done++].fire();
    if (done > 0) this.waits = this.waits.slice(done);
    return this.waits.length > 0;
  }
}

/** How often deadlines are checked, by one timer for the pool: a deadline fires up to this much late. */
const CHECK_MS = 100;

class GuardedPool {
  /** Connections just handed out, until their first statement. */
  private readonly fresh = new WeakSet<PoolConnection>();
  /** When each connection last had an answer from the server (its handshake, at first). */
  private readonly answered = new WeakMap<PoolConnection, number>();
  /** When a connection was last found lost. */
  private lostAt = 0;
  private readonly take: Pool['getConnection'];
  private readonly acquiring: DeadlineQueue;
  private readonly running: DeadlineQueue;
  private checker: NodeJS.Timeout | null = null;

  constructor(
    readonly pool: Pool,
    private readonly deadlines: typeof DEADLINES,
    private readonly statementsBounded: () => boolean,
  ) {
    this.acquiring = new DeadlineQueue(deadlines.acquireMs);
    this.running = new DeadlineQueue(deadlines.statementMs);
    this.take = pool.getConnection.bind(pool);
    pool.getConnection = (callback) => this.acquire(callback);
    pool.on('connection', (connection) => {
      this.answered.set(connection, Date.now());
      // Timestamps are read back as UTC (timezone 'Z'), so the server writes its own (DEFAULT
      // CURRENT_TIMESTAMP: created_at, updated_at, first_seen_at) in UTC too, whatever its time zone.
      // Queued ahead of any statement on the connection; a failure shows in the statement after it.
      connection.query("SET time_zone = '+00:00'", () => undefined);
      this.guard(connection);
    });
  }

  private watch(queue: DeadlineQueue, expire: () => void): Deadline {
    this.checker ??= setInterval(() => this.check(), CHECK_MS).unref();
    return queue.add(expire);
  }

  private check(): void {
    const now = Date.now();
    const acquiring = this.acquiring.check(now);
    const running = this.running.check(now);
    if (!acquiring && !running && this.checker) {
      clearInterval(this.checker);
      this.checker = null;
    }
  }

  private acquire(callback: Parameters<Pool['getConnection']>[0]): void {
    const deadline = this.watch(this.acquiring, () => {
      callback(
        Object.assign(new Error(`No database connection within ${this.deadlines.acquireMs} ms.`), {
          code: ACQUIRE_TIMEOUT,
        }),
        undefined as never,
      );
    });
    const attempt = () =>
      this.take((error, connection) => {
        if (!deadline.open) {
          // The caller has given up: a connection that arrives after all goes back to the pool.
          if (!error) connection.release();
          return;
        }
        if (!error && (this.answered.get(connection) ?? 0) < this.lostAt) {
          // Idle since another connection was found lost: likely lost too.
          connection.destroy();
          return attempt();
        }
        deadline.end();
        if (!error) this.fresh.add(connection);
        callback(error, connection);
      });
    attempt();
  }

  private guard(connection: PoolConnection): void {
    const raw = connection as unknown as { query: Query };
    const query: Query = raw.query.bind(connection);
    raw.query = (sql, values, callback) => {
      if (typeof values === 'function') return raw.query(sql, undefined, values as Callback);
      const first = this.fresh.delete(connection);
      if (!this.statementsBounded() || typeof sql !== 'string' || !callback)
        return query(sql, values, callback);
      const deadline = this.watch(this.running, () => {
        // mysql2 would keep the unanswered statement at the head of this connection's queue.
        connection.destroy();
        callback(
          Object.assign(new Error(`No answer from the database within ${this.deadlines.statementMs} ms.`), {
            code: STATEMENT_TIMEOUT,
          }),
        );
      });
      return query(sql, values, (error, ...result) => {
        if (!deadline.end()) return; // an answer after the deadline: the caller has had its error
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
