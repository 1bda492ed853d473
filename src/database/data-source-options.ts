import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { entities, migrations } from './entities.js';
import { BoundedMysql, DEADLINES } from './mysql-driver.js';

export type DatabaseKind = 'sqlite' | 'mysql';

const POOL_SIZE = 20;

export function databaseKind(url: string): DatabaseKind {
  return url.startsWith('sqlite:') ? 'sqlite' : 'mysql';
}

/**
 * How long a SQLite statement waits for another process's write lock (the CLI, `npm run dispatcher`)
 * before it fails as busy (503). better-sqlite3 waits synchronously, so the service's whole event loop
 * stands still meanwhile: it waits 1 s, far longer than those writers hold the lock (milliseconds),
 * short enough that a process holding it for long makes calls fail rather than freeze the service.
 * The CLI, which blocks nobody else, waits 5 s.
 */
const SQLITE_BUSY_MS = { service: 1000, tool: 5000 };

/**
 * TypeORM options for `sqlite:<path>` (better-sqlite3) or `mysql://…` / `mariadb://…`; `service` for
 * the HTTP service and the dispatcher, which answer others while they wait.
 */
export function dataSourceOptions(url: string, { service = false } = {}): DataSourceOptions {
  const common = { entities, migrations, migrationsRun: false, synchronize: false, logging: false } as const;
  if (databaseKind(url) === 'sqlite') {
    const database = url.slice('sqlite:'.length);
    if (database !== ':memory:') mkdirSync(dirname(database), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      database,
      // Prepared statements kept by SQL text (TypeORM's default keeps 100, first in first out): the
      // flushes' multi-row statements vary in length and pushed the runtime loads' statements out, so
      // each was prepared again (docs/benchmarks.md, "Where the runtime check's time goes").
      statementCacheSize: 1000,
      // WAL lets readers proceed while a write commits; busy_timeout covers a second process.
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('journal_mode = WAL');
        db.pragma(`busy_timeout = ${service ? SQLITE_BUSY_MS.service : SQLITE_BUSY_MS.tool}`);
        db.pragma('synchronous = NORMAL');
      },
    };
  }
  return {
    ...common,
    type: 'mysql',
    url: url.replace(/^mariadb:/, 'mysql:'),
    timezone: 'Z',
    charset: 'utf8mb4_unicode_ci',
    connectTimeout: DEADLINES.connectMs,
    driver: new BoundedMysql(),
    extra: {
      connectionLimit: POOL_SIZE,
      // Callers waiting for a connection beyond this many are refused at once (503): a database that
      // keeps up never has that many waiting, and one that does not should not collect a backlog.
      queueLimit: 500,
      // A connection idle for 30 s is closed (mysql2 runs that timer only with maxIdle under the
      // limit), and TCP keep-alive probes one idle for 10 s: a connection the server or the network
      // dropped without a word leaves the pool instead of failing a call.
      maxIdle: POOL_SIZE - 1,
      idleTimeout: 30_000,
      keepAliveInitialDelay: 10_000,
    },
  };
}

/**
 * Opens the data source, running the migrations when `options` ask for it, then gives statements
 * their deadline (MySQL/MariaDB): a schema change may take as long as it takes, a call may not.
 */
export async function openDataSource(options: DataSourceOptions): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  if (options.type === 'mysql' && options.driver instanceof BoundedMysql) options.driver.boundStatements();
  return dataSource;
}
