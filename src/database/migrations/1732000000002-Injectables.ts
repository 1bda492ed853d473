import { MigrationInterface, QueryRunner, Table, TableIndex, TableUnique } from 'typeorm';
import { bool, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/** Encrypted, signed payloads (docs/decisions.md#injectables). Payloads live in the row: up to MAX_UPLOAD_BYTES as base64. */
export class Injectables1732000000002 implements MigrationInterface {
  name = 'Injectables1732000000002';

  async up(q: QueryRunner): Promise<void> {
    // MySQL's TEXT holds 64 KiB; a 5 MiB file is 7 MiB of base64.
    const payload = q.connection.options.type === 'better-sqlite3' ? 'text' : 'longtext';
    await q.createTable(
      new Table({
        name: 'injectables',
        columns: [
          id(),
          int('project_id'),
          str('slug'),
          str('title', 255, true),
          str('type', 16),
          str('mode', 16),
          str('target_path', 1024, true),
          str('validate_endpoint', 2048, true),
          { name: 'content', type: payload, isNullable: false },
          { name: 'file_path', type: 'text', isNullable: true },
          str('content_hash', 64),
          str('signature', 128),
          bool('is_active', true),
          bool('only_if_paid', false),
          text('meta', false),
          ...timestamps(),
        ],
        uniques: [
          new TableUnique({ name: 'uq_injectables_project_slug', columnNames: ['project_id', 'slug'] }),
        ],
        indices: [
          new TableIndex({ name: 'ix_injectables_project_active', columnNames: ['project_id', 'is_active'] }),
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('injectables');
  }
}
