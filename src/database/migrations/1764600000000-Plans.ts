import { MigrationInterface, QueryRunner, Table, TableIndex, TableUnique } from 'typeorm';
import { bool, date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/**
 * Plans, entitlements and metered usage (docs/plans.md): a project's plans (licenses already have
 * `plan_id` and `entitlements`); meter_usage, what each license used of each meter in a UTC month
 * (raised only by one conditional UPDATE, and whether license.quota_reached was sent for it);
 * meter_idempotency_keys, the first answer to each idempotency key of a license, kept 35 days.
 */
export class Plans1764600000000 implements MigrationInterface {
  name = 'Plans1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'plans',
        columns: [
          id(),
          int('project_id'),
          str('code', 64),
          str('name', 255),
          text('entitlements', false),
          int('max_domains', true),
          int('max_subdomains_per_domain', true),
          int('max_usage_per_day', true),
          ...timestamps(),
        ],
        uniques: [new TableUnique({ name: 'uq_plans_project_code', columnNames: ['project_id', 'code'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'meter_usage',
        columns: [
          { ...int('license_id'), isPrimary: true },
          { ...str('meter', 64), isPrimary: true },
          { ...str('month', 7), isPrimary: true },
          int('used'),
          bool('quota_reached', false),
        ],
        indices: [new TableIndex({ name: 'ix_meter_usage_month', columnNames: ['month'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'meter_idempotency_keys',
        columns: [
          { ...int('license_id'), isPrimary: true },
          { ...str('idempotency_key', 100), isPrimary: true },
          str('meter', 64),
          int('amount'),
          text('answer'),
          date('created_at', false),
        ],
        indices: [new TableIndex({ name: 'ix_meter_idempotency_keys_created', columnNames: ['created_at'] })],
      }),
    );
    if (q.connection.options.type !== 'better-sqlite3') {
      // A key compares byte for byte, as on SQLite: "Abc" and "abc" are two keys.
      await q.query(
        'ALTER TABLE meter_idempotency_keys MODIFY idempotency_key varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL',
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['meter_idempotency_keys', 'meter_usage', 'plans']) await q.dropTable(table);
  }
}
