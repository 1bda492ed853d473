import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * The columns licenses that carry their own payment and a plan rest on (docs/payments.md): `billing`
 * (`project`, every existing license, or `license`), the license's own `has_paid`, its `customer_id`,
 * who revoked it (`revoked_by`), its `plan_id` and entitlement overrides. Existing licenses keep
 * every behaviour: `billing: project`, nothing else set.
 */
export class LicenseBilling1764450000000 implements MigrationInterface {
  name = 'LicenseBilling1764450000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumns('licenses', [
      new TableColumn({
        name: 'billing',
        type: 'varchar',
        length: '16',
        default: "'project'",
        isNullable: false,
      }),
      new TableColumn({ name: 'has_paid', type: 'boolean', default: false, isNullable: false }),
      new TableColumn({ name: 'customer_id', type: 'integer', isNullable: true }),
      new TableColumn({ name: 'revoked_by', type: 'varchar', length: '16', isNullable: true }),
      new TableColumn({ name: 'plan_id', type: 'integer', isNullable: true }),
      new TableColumn({ name: 'entitlements', type: 'text', isNullable: true }),
    ]);
    await q.createIndex(
      'licenses',
      new TableIndex({ name: 'idx_licenses_customer', columnNames: ['customer_id'] }),
    );
    await q.createIndex('licenses', new TableIndex({ name: 'idx_licenses_plan', columnNames: ['plan_id'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('licenses', 'idx_licenses_plan');
    await q.dropIndex('licenses', 'idx_licenses_customer');
    for (const column of ['entitlements', 'plan_id', 'revoked_by', 'customer_id', 'has_paid', 'billing']) {
      await q.dropColumn('licenses', column);
    }
  }
}
