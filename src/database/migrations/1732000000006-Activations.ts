import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';
import { int, str } from './1732000000000-Initial.js';

/**
 * Activations a vendor and a license holder can manage (docs/decisions.md#activations):
 * - license_activations: `created_at` becomes `first_seen_at`, and `last_seen_at` is kept (batched);
 * - license_deactivations: self-service deactivations per license and UTC day (the daily allowance);
 * - license_limit_notices: the (license, day, domain, host) refusals already announced with
 *   license.domain_limit_reached, so each is announced once;
 * - licenses.expiry_notice: the last expiry notice sent for the current expires_at (null, 'expiring',
 *   'expired'), claimed by the lifecycle scheduler with a conditional update.
 */
export class Activations1732000000006 implements MigrationInterface {
  name = 'Activations1732000000006';

  async up(q: QueryRunner): Promise<void> {
    await q.renameColumn('license_activations', 'created_at', 'first_seen_at');
    await q.addColumn(
      'license_activations',
      new TableColumn({
        name: 'last_seen_at',
        type: 'datetime',
        isNullable: false,
        default: 'CURRENT_TIMESTAMP',
      }),
    );
    await q.query('UPDATE license_activations SET last_seen_at = first_seen_at');

    await q.createTable(
      new Table({
        name: 'license_deactivations',
        columns: [
          { ...int('license_id'), isPrimary: true },
          { ...str('day', 10), isPrimary: true },
          int('count'),
        ],
        indices: [new TableIndex({ name: 'ix_license_deactivations_day', columnNames: ['day'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'license_limit_notices',
        columns: [
          { ...int('license_id'), isPrimary: true },
          { ...str('day', 10), isPrimary: true },
          { ...str('domain', 253), isPrimary: true },
          { ...str('host', 253), isPrimary: true },
        ],
        indices: [new TableIndex({ name: 'ix_license_limit_notices_day', columnNames: ['day'] })],
      }),
    );

    await q.addColumn('licenses', new TableColumn({ ...str('expiry_notice', 16, true) }));
    await q.createIndex(
      'licenses',
      new TableIndex({ name: 'ix_licenses_expiry_notice', columnNames: ['expiry_notice', 'expires_at'] }),
    );
    // Licenses that expired before this version announce nothing: no flood of license.expired on upgrade.
    await q.query(
      "UPDATE licenses SET expiry_notice = 'expired' WHERE expires_at IS NOT NULL AND expires_at <= CURRENT_TIMESTAMP",
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('licenses', 'ix_licenses_expiry_notice');
    await q.dropColumn('licenses', 'expiry_notice');
    await q.dropTable('license_limit_notices');
    await q.dropTable('license_deactivations');
    await q.dropColumn('license_activations', 'last_seen_at');
    await q.renameColumn('license_activations', 'first_seen_at', 'created_at');
  }
}
