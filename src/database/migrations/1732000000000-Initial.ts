import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex, TableUnique } from 'typeorm';

// Column helpers shared by every migration: types that mean the same on SQLite and MySQL/MariaDB.
export const id = (): TableColumnOptions => ({
  name: 'id',
  type: 'integer',
  isPrimary: true,
  isGenerated: true,
  generationStrategy: 'increment',
});
export const int = (name: string, nullable = false): TableColumnOptions => ({
  name,
  type: 'integer',
  isNullable: nullable,
});
export const str = (name: string, length = 255, nullable = false): TableColumnOptions => ({
  name,
  type: 'varchar',
  length: String(length),
  isNullable: nullable,
});
export const text = (name: string, nullable = true): TableColumnOptions => ({
  name,
  type: 'text',
  isNullable: nullable,
});
export const bool = (name: string, def: boolean): TableColumnOptions => ({
  name,
  type: 'boolean',
  isNullable: false,
  default: def ? 1 : 0,
});
export const date = (name: string, nullable = true): TableColumnOptions => ({
  name,
  type: 'datetime',
  isNullable: nullable,
});
export const timestamps = (): TableColumnOptions[] => [
  { name: 'created_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
  { name: 'updated_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
];

export class Initial1732000000000 implements MigrationInterface {
  name = 'Initial1732000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'users',
        columns: [
          id(),
          str('email'),
          str('name', 255, true),
          int('max_projects', true),
          bool('can_create_licenses', true),
          bool('webhooks_enabled', true),
          text('license_defaults'),
          ...timestamps(),
        ],
        uniques: [new TableUnique({ name: 'uq_users_email', columnNames: ['email'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'api_keys',
        columns: [
          id(),
          int('user_id'),
          int('project_id', true),
          str('name'),
          str('prefix', 16),
          str('key_hash', 64),
          date('expires_at'),
          date('revoked_at'),
          date('last_used_at'),
          ...timestamps(),
        ],
        uniques: [new TableUnique({ name: 'uq_api_keys_key_hash', columnNames: ['key_hash'] })],
        indices: [new TableIndex({ name: 'ix_api_keys_user', columnNames: ['user_id'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'projects',
        columns: [
          id(),
          int('user_id'),
          int('license_key_id', true),
          str('name'),
          str('slug'),
          str('description', 1000, true),
          str('default_redirect_url', 2048, true),
          str('webhook_url', 2048, true),
          text('webhook_secret'),
          str('logo_url', 2048, true),
          text('meta', false),
          bool('is_active', true),
          bool('has_paid', false),
          date('locked_at'),
          str('lock_reason', 1000, true),
          text('signing_public_key', false),
          text('signing_private_key', false),
          ...timestamps(),
          date('deleted_at'),
        ],
        uniques: [new TableUnique({ name: 'uq_projects_slug', columnNames: ['slug'] })],
        indices: [new TableIndex({ name: 'ix_projects_user', columnNames: ['user_id'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'project_domains',
        columns: [
          id(),
          int('project_id'),
          str('domain', 253),
          bool('has_paid', false),
          bool('is_active', true),
          bool('is_primary', false),
          ...timestamps(),
        ],
        uniques: [
          new TableUnique({
            name: 'uq_project_domains_project_domain',
            columnNames: ['project_id', 'domain'],
          }),
        ],
        indices: [new TableIndex({ name: 'ix_project_domains_domain', columnNames: ['domain'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'licenses',
        columns: [
          id(),
          int('project_id'),
          int('user_id'),
          str('uuid', 36),
          str('uuid_hash', 64),
          str('title'),
          int('domain_id', true),
          date('expires_at'),
          int('max_domains', true),
          int('max_subdomains_per_domain', true),
          int('max_usage_per_day', true),
          text('allowed_ips'),
          text('allowed_countries'),
          bool('is_test_license', false),
          bool('allow_configs', false),
          { ...str('validate_against', 32), default: "'project_domains'" },
          date('revoked_at'),
          ...timestamps(),
        ],
        uniques: [
          new TableUnique({ name: 'uq_licenses_uuid', columnNames: ['uuid'] }),
          new TableUnique({ name: 'uq_licenses_uuid_hash', columnNames: ['uuid_hash'] }),
          new TableUnique({ name: 'uq_licenses_project_title', columnNames: ['project_id', 'title'] }),
        ],
        indices: [
          new TableIndex({ name: 'ix_licenses_project', columnNames: ['project_id'] }),
          new TableIndex({ name: 'ix_licenses_domain', columnNames: ['domain_id'] }),
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['licenses', 'project_domains', 'projects', 'api_keys', 'users']) {
      await q.dropTable(table);
    }
  }
}
