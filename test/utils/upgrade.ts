import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { migrations } from '../../src/database/entities.js';
import { createTestDatabase } from './test-app.js';

/**
 * A database of its own as it stood before `migration` (every other migration run), for a test of
 * that upgrade: one user and one project in it, and the rows `fill` adds. The caller starts the app
 * on `url`, which runs the migration, and drops the database.
 */
export async function databaseBefore(
  migration: (typeof migrations)[number],
  fill: (before: DataSource, rows: { user: { id: number }; project: { id: number } }) => Promise<unknown>,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const db = await createTestDatabase();
  const before = new DataSource({
    ...dataSourceOptions(db.url),
    migrations: migrations.filter((m) => m !== migration),
  });
  await before.initialize();
  try {
    await before.runMigrations();
    await before.query("INSERT INTO users (email, name) VALUES ('old@example.test', 'old')");
    const [user] = await before.query<Array<{ id: number }>>('SELECT id FROM users');
    await before.query(
      "INSERT INTO projects (user_id, name, slug, meta, signing_public_key, signing_private_key) VALUES (?, 'p', 'p', '{}', 'k', 'k')",
      [user.id],
    );
    const [project] = await before.query<Array<{ id: number }>>('SELECT id FROM projects');
    await fill(before, { user, project });
  } finally {
    await before.destroy();
  }
  return db;
}
