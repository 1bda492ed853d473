import { MigrationInterface, QueryRunner, Table, TableIndex, TableUnique } from 'typeorm';
import { id, int, str } from './1732000000000-Initial.js';

/** Per-day usage counters and domain activations of licenses (docs/decisions.md#runtime-checks). */
export class RuntimeCounters1732000000001 implements MigrationInterface {
  name = 'RuntimeCounters1732000000001';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'license_usage',
        columns: [
          { ...int('license_id'), isPrimary: true },
          { ...str('day', 10), isPrimary: true },
          int('count'),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'license_activations',
        columns: [
          id(),
          int('license_id'),
          // The registered domain the call was counted against, and the exact host ('' for the domain itself).
          str('domain', 253),
          str('host', 253),
          { name: 'created_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
        ],
        uniques: [
          new TableUnique({ name: 'uq_license_activations', columnNames: ['license_id', 'domain', 'host'] }),
        ],
        indices: [new TableIndex({ name: 'ix_license_activations_license', columnNames: ['license_id'] })],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('license_activations');
    await q.dropTable('license_usage');
  }
}
