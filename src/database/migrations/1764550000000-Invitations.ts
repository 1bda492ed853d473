import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/**
 * Members who join (docs/security.md#members-and-invitations): invitations to an account, one-use
 * password-reset links, and the OpenID Connect identities (issuer, subject) linked to users. Every
 * token is stored as its SHA-256 only.
 */
export class Invitations1764550000000 implements MigrationInterface {
  name = 'Invitations1764550000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'invitations',
        columns: [
          id(),
          int('account_id'),
          str('email', 255),
          str('role', 16),
          // JSON array of project ids, or NULL for every project of the account.
          text('project_ids'),
          { ...str('token_hash', 64), isUnique: true },
          int('invited_by_user_id', true),
          date('expires_at', false),
          date('accepted_at'),
          int('accepted_by_user_id', true),
          date('revoked_at'),
          ...timestamps(),
        ],
        indices: [new TableIndex({ name: 'ix_invitations_account', columnNames: ['account_id'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'password_resets',
        columns: [
          id(),
          int('user_id'),
          { ...str('token_hash', 64), isUnique: true },
          date('expires_at', false),
          date('used_at'),
          date('created_at', false),
        ],
        indices: [new TableIndex({ name: 'ix_password_resets_user', columnNames: ['user_id'] })],
      }),
    );
    await q.createTable(
      new Table({
        name: 'user_identities',
        columns: [id(), int('user_id'), str('issuer', 255), str('subject', 255), date('created_at', false)],
        indices: [
          new TableIndex({
            name: 'ux_user_identities_issuer_subject',
            columnNames: ['issuer', 'subject'],
            isUnique: true,
          }),
          new TableIndex({ name: 'ix_user_identities_user', columnNames: ['user_id'] }),
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('user_identities');
    await q.dropTable('password_resets');
    await q.dropTable('invitations');
  }
}
