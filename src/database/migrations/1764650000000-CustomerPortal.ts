import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { date, id, int, str, text } from './1732000000000-Initial.js';

/**
 * The customer portal (docs/portal.md): one-use links a vendor's server asks for, the portal sessions
 * they open, and the customer an audit row's `portal` actor names.
 */
export class CustomerPortal1764650000000 implements MigrationInterface {
  name = 'CustomerPortal1764650000000';

  async up(q: QueryRunner): Promise<void> {
    const bound = [int('project_id'), int('customer_id', true), int('license_id', true), text('return_url')];
    await q.createTable(
      new Table({
        name: 'portal_links',
        columns: [
          id(),
          // SHA-256 of the link's token: the token itself is never stored.
          { ...str('token_hash', 64), isUnique: true },
          ...bound,
          date('expires_at', false),
          // Set once, by the conditional update that opens the link.
          date('used_at'),
          date('created_at', false),
        ],
        indices: [new TableIndex({ name: 'ix_portal_links_expires', columnNames: ['expires_at'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'portal_sessions',
        columns: [
          id(),
          { ...str('token_hash', 64), isUnique: true },
          ...bound,
          date('expires_at', false),
          date('created_at', false),
        ],
        indices: [new TableIndex({ name: 'ix_portal_sessions_expires', columnNames: ['expires_at'] })],
      }),
    );
    // Plain ALTER TABLE, as in ProjectChangeCounter: addColumn would rebuild the SQLite table.
    await q.query('ALTER TABLE audit_events ADD COLUMN actor_customer_id integer NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE audit_events DROP COLUMN actor_customer_id');
    await q.dropTable('portal_sessions');
    await q.dropTable('portal_links');
  }
}
