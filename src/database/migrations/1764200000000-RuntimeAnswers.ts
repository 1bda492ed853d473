import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { int, str } from './1732000000000-Initial.js';

/**
 * The runtime answers' analytics (docs/analytics.md): counts by project, UTC hour, outcome, refusal
 * reason, registered domain and country, added to by every instance's flushes; and the key hashes of
 * deleted licenses, so that a deleted key still in use is counted under its project.
 *
 * Every column of the key is NOT NULL ('' or 0 standing for none) so that one row per key is what the
 * upserts find: a unique key with a NULL in it never conflicts.
 */
export class RuntimeAnswers1764200000000 implements MigrationInterface {
  name = 'RuntimeAnswers1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'runtime_answers',
        columns: [
          { ...int('project_id'), isPrimary: true },
          // 'YYYY-MM-DD HH', UTC: its first 10 characters are the day, and it orders as time does.
          { ...str('hour', 13), isPrimary: true },
          { ...str('outcome', 8), isPrimary: true },
          { ...str('reason', 24), isPrimary: true },
          { ...int('domain_id'), isPrimary: true },
          { ...str('country', 2), isPrimary: true },
          { name: 'count', type: 'bigint', isNullable: false },
        ],
        indices: [new TableIndex({ name: 'ix_runtime_answers_hour', columnNames: ['hour'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'license_tombstones',
        columns: [
          { ...str('uuid_hash', 64), isPrimary: true },
          int('project_id'),
          { name: 'deleted_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('license_tombstones');
    await q.dropTable('runtime_answers');
  }
}
