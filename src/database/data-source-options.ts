import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import { entities, migrations } from './entities.js';

export type DatabaseKind = 'sqlite' | 'mysql';

export function databaseKind(url: string): DatabaseKind {
  return url.startsWith('sqlite:') ? 'sqlite' : 'mysql';
}

/** TypeORM options for `sqlite:<path>` (better-sqlite3) or `mysql://…` / `mariadb://…`. */
export function dataSourceOptions(url: string): DataSourceOptions {
  const common = { entities, migrations, migrationsRun: false, synchronize: false, logging: false } as const;
  if (databaseKind(url) === 'sqlite') {
    const database = url.slice('sqlite:'.length);
    if (database !== ':memory:') mkdirSync(dirname(database), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      database,
      // WAL lets readers proceed while a write commits; busy_timeout covers a second process.
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('journal_mode = WAL');
        db.pragma('busy_timeout = 5000');
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
    extra: { connectionLimit: 20 },
  };
}
