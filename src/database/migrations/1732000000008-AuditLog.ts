import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';
import { bool, date, id, int, str, text } from './1732000000000-Initial.js';

/**
 * The audit log (one row per management write, in the write's transaction), read-only and rolled API
 * keys, and each project's webhook subscription (docs/decisions.md#audit-log).
 */
export class AuditLog1732000000008 implements MigrationInterface {
  name = 'AuditLog1732000000008';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'audit_events',
        columns: [
          id(),
          // The account whose log the row is in: the project's owner, or the API key's.
          int('owner_id'),
          int('project_id', true),
          str('action', 64),
          str('resource_type', 32),
          int('resource_id', true),
          str('actor_type', 16),
          int('actor_api_key_id', true),
          str('actor_api_key_prefix', 16, true),
          int('actor_user_id', true),
          text('changes', false),
          str('request_id', 128, true),
          str('ip', 64, true),
          str('user_agent', 512, true),
          date('created_at', false),
        ],
        indices: [
          new TableIndex({ name: 'ix_audit_events_owner', columnNames: ['owner_id', 'id'] }),
          new TableIndex({ name: 'ix_audit_events_project', columnNames: ['project_id', 'id'] }),
          new TableIndex({ name: 'ix_audit_events_created_at', columnNames: ['created_at'] }),
        ],
      }),
    );
    await q.addColumn('api_keys', new TableColumn(bool('read_only', false)));
    await q.addColumn('api_keys', new TableColumn(date('rolled_at')));
    // VARCHAR rather than TEXT: MySQL gives TEXT columns no plain default.
    await q.addColumn('projects', new TableColumn({ ...str('webhook_events', 2000), default: `'["*"]'` }));
    await q.addColumn('projects', new TableColumn(bool('webhook_enabled', true)));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('projects', 'webhook_enabled');
    await q.dropColumn('projects', 'webhook_events');
    await q.dropColumn('api_keys', 'rolled_at');
    await q.dropColumn('api_keys', 'read_only');
    await q.dropTable('audit_events');
  }
}
