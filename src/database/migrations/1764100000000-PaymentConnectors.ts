import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex, TableUnique } from 'typeorm';
import { bool, date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/**
 * Payment connectors and the events they accepted, grace on projects, domains and licenses, licenses
 * issued from orders, and the `payment` actor of the audit log (docs/payments.md).
 */
export class PaymentConnectors1764100000000 implements MigrationInterface {
  name = 'PaymentConnectors1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'payment_connectors',
        columns: [
          id(),
          int('project_id'),
          str('provider', 16),
          str('name', 255, true),
          text('signing_secret', false),
          str('token_hash', 64),
          text('token_sealed', false),
          { ...int('grace_days'), default: 3 },
          bool('issue_licenses', false),
          text('license_template'),
          bool('is_active', true),
          date('last_event_at'),
          ...timestamps(),
        ],
        uniques: [new TableUnique({ name: 'uq_payment_connectors_token_hash', columnNames: ['token_hash'] })],
        indices: [new TableIndex({ name: 'ix_payment_connectors_project', columnNames: ['project_id'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'payment_events',
        columns: [
          id(),
          int('connector_id'),
          int('project_id'),
          str('provider_event_id', 255),
          str('type', 128),
          str('outcome', 16),
          str('target_kind', 16, true),
          int('target_id', true),
          str('detail', 1000),
          date('received_at', false),
        ],
        uniques: [
          new TableUnique({
            name: 'uq_payment_events_connector_event',
            columnNames: ['connector_id', 'provider_event_id'],
          }),
        ],
        indices: [
          new TableIndex({ name: 'ix_payment_events_project', columnNames: ['project_id'] }),
          new TableIndex({ name: 'ix_payment_events_target', columnNames: ['target_kind', 'target_id'] }),
        ],
      }),
    );
    for (const table of ['projects', 'project_domains', 'licenses']) {
      await q.addColumn(table, new TableColumn(date('grace_until')));
      await q.createIndex(
        table,
        new TableIndex({ name: `ix_${table}_grace_until`, columnNames: ['grace_until'] }),
      );
    }
    await q.addColumn('licenses', new TableColumn(str('payment_provider', 16, true)));
    await q.addColumn('licenses', new TableColumn(str('payment_reference_id', 255, true)));
    // An index rather than a constraint: SQLite adds it without rebuilding the table. NULLs never
    // collide, so only licenses issued from orders are bound by it.
    await q.createIndex(
      'licenses',
      new TableIndex({
        name: 'uq_licenses_payment_reference',
        columnNames: ['project_id', 'payment_provider', 'payment_reference_id'],
        isUnique: true,
      }),
    );
    await q.addColumn('audit_events', new TableColumn(str('actor_provider', 16, true)));
    await q.addColumn('audit_events', new TableColumn(int('actor_connector_id', true)));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('audit_events', 'actor_connector_id');
    await q.dropColumn('audit_events', 'actor_provider');
    await q.dropIndex('licenses', 'uq_licenses_payment_reference');
    await q.dropColumn('licenses', 'payment_reference_id');
    await q.dropColumn('licenses', 'payment_provider');
    for (const table of ['licenses', 'project_domains', 'projects']) {
      await q.dropIndex(table, `ix_${table}_grace_until`);
      await q.dropColumn(table, 'grace_until');
    }
    await q.dropTable('payment_events');
    await q.dropTable('payment_connectors');
  }
}
