import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { bool, date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/**
 * Licenses that carry their own payment, customers and what providers sold (docs/payments.md):
 * licenses gain `billing` (`project`, every existing license, or `license`), their own `has_paid`,
 * `customer_id`, who revoked them (`revoked_by`), `plan_id`, entitlement overrides and the kind of
 * their payment reference; customers with the providers' ids for them; subscriptions (one row per
 * purchase) with the payment ids kept from their events; payment events name their subscription.
 * Existing licenses keep every behaviour: `billing: project`, nothing else set.
 */
export class LicenseBilling1764450000000 implements MigrationInterface {
  name = 'LicenseBilling1764450000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTER TABLE, as in ProjectChangeCounter: addColumn would rebuild these SQLite tables.
    await q.query("ALTER TABLE licenses ADD COLUMN billing varchar(16) NOT NULL DEFAULT 'project'");
    await q.query('ALTER TABLE licenses ADD COLUMN has_paid boolean NOT NULL DEFAULT 0');
    await q.query('ALTER TABLE licenses ADD COLUMN customer_id integer NULL');
    await q.query('ALTER TABLE licenses ADD COLUMN revoked_by varchar(16) NULL');
    await q.query('ALTER TABLE licenses ADD COLUMN plan_id integer NULL');
    await q.query('ALTER TABLE licenses ADD COLUMN entitlements text NULL');
    await q.query('ALTER TABLE licenses ADD COLUMN payment_reference_kind varchar(16) NULL');
    await q.query('ALTER TABLE payment_events ADD COLUMN subscription_id integer NULL');
    await q.createIndex(
      'licenses',
      new TableIndex({ name: 'ix_licenses_customer', columnNames: ['customer_id'] }),
    );
    await q.createIndex('licenses', new TableIndex({ name: 'ix_licenses_plan', columnNames: ['plan_id'] }));
    await q.createIndex(
      'payment_events',
      new TableIndex({ name: 'ix_payment_events_subscription', columnNames: ['subscription_id'] }),
    );

    await q.createTable(
      new Table({
        name: 'customers',
        columns: [id(), int('project_id'), str('email', 320), str('name', 255, true), ...timestamps()],
        indices: [
          new TableIndex({ name: 'ix_customers_project_email', columnNames: ['project_id', 'email'] }),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'customer_external_ids',
        columns: [id(), int('customer_id'), int('project_id'), str('provider', 16), str('external_id', 255)],
        indices: [
          new TableIndex({
            name: 'uq_customer_external_ids',
            columnNames: ['project_id', 'provider', 'external_id'],
            isUnique: true,
          }),
          new TableIndex({ name: 'ix_customer_external_ids_customer', columnNames: ['customer_id'] }),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'subscriptions',
        columns: [
          id(),
          int('project_id'),
          int('connector_id'),
          str('provider', 16),
          str('kind', 16),
          str('reference', 255),
          str('status', 16),
          bool('cancel_at_period_end', false),
          int('customer_id', true),
          int('license_id', true),
          date('license_deleted_at'),
          str('target_kind', 16, true),
          int('target_id', true),
          text('product_ids'),
          date('current_period_end'),
          date('last_event_at'),
          str('last_event_type', 128, true),
          ...timestamps(),
        ],
        indices: [
          new TableIndex({
            name: 'uq_subscriptions_reference',
            columnNames: ['connector_id', 'kind', 'reference'],
            isUnique: true,
          }),
          new TableIndex({ name: 'ix_subscriptions_project_status', columnNames: ['project_id', 'status'] }),
          new TableIndex({ name: 'ix_subscriptions_customer', columnNames: ['customer_id'] }),
          new TableIndex({ name: 'ix_subscriptions_license', columnNames: ['license_id'] }),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'subscription_payments',
        columns: [id(), int('subscription_id'), int('connector_id'), str('payment_id', 255)],
        indices: [
          new TableIndex({
            name: 'uq_subscription_payments',
            columnNames: ['connector_id', 'payment_id'],
            isUnique: true,
          }),
          new TableIndex({ name: 'ix_subscription_payments_subscription', columnNames: ['subscription_id'] }),
        ],
      }),
    );
    if (q.connection.options.type !== 'better-sqlite3') {
      // Provider ids compare byte for byte, as in BinaryPaymentIds.
      for (const [table, column] of [
        ['customer_external_ids', 'external_id'],
        ['subscriptions', 'reference'],
        ['subscription_payments', 'payment_id'],
      ]) {
        await q.query(
          `ALTER TABLE ${table} MODIFY ${column} varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
        );
      }
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['subscription_payments', 'subscriptions', 'customer_external_ids', 'customers']) {
      await q.dropTable(table);
    }
    await q.dropIndex('payment_events', 'ix_payment_events_subscription');
    await q.dropIndex('licenses', 'ix_licenses_plan');
    await q.dropIndex('licenses', 'ix_licenses_customer');
    await q.query('ALTER TABLE payment_events DROP COLUMN subscription_id');
    for (const column of [
      'payment_reference_kind',
      'entitlements',
      'plan_id',
      'revoked_by',
      'customer_id',
      'has_paid',
      'billing',
    ]) {
      await q.query(`ALTER TABLE licenses DROP COLUMN ${column}`);
    }
  }
}
