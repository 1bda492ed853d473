import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { str } from './1732000000000-Initial.js';

/**
 * One row per flush of in-memory usage counts, written in the flush's own transaction: a flush whose
 * COMMIT got no answer is sent again with the same id, and the id tells whether the first one landed.
 */
export class UsageFlushes1732000000005 implements MigrationInterface {
  name = 'UsageFlushes1732000000005';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'usage_flushes',
        columns: [
          { ...str('id', 36), isPrimary: true },
          { name: 'created_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
        ],
        indices: [new TableIndex({ name: 'ix_usage_flushes_created_at', columnNames: ['created_at'] })],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('usage_flushes');
  }
}
