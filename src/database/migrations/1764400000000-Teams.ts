import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/**
 * Teams (docs/security.md#sessions): accounts, the people who belong to them with a role, their
 * passwords and their sign-in sessions. Every user existing before this migration becomes the owner of
 * an account of their own that holds their projects, so their API keys keep acting as that owner.
 */
export class Teams1764400000000 implements MigrationInterface {
  name = 'Teams1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'accounts',
        columns: [
          id(),
          // The user whose id the account's projects, keys and audit rows carry (their `user_id`).
          { ...int('holder_user_id'), isUnique: true },
          ...timestamps(),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'memberships',
        columns: [
          id(),
          int('account_id'),
          int('user_id'),
          str('role', 16),
          // JSON array of project ids, or NULL for every project of the account.
          text('project_ids'),
          // Raised on every change of role or projects: cached reads are keyed by it.
          { ...int('version'), default: 1 },
          ...timestamps(),
        ],
        indices: [
          new TableIndex({
            name: 'ux_memberships_account_user',
            columnNames: ['account_id', 'user_id'],
            isUnique: true,
          }),
          new TableIndex({ name: 'ix_memberships_user', columnNames: ['user_id'] }),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'sessions',
        columns: [
          id(),
          int('user_id'),
          int('account_id'),
          // SHA-256 of the cookie's token: the token itself is never stored.
          { ...str('token_hash', 64), isUnique: true },
          date('last_seen_at', false),
          date('expires_at', false),
          str('ip', 64, true),
          str('user_agent', 512, true),
          date('created_at', false),
        ],
        indices: [
          new TableIndex({ name: 'ix_sessions_user', columnNames: ['user_id'] }),
          new TableIndex({ name: 'ix_sessions_expires_at', columnNames: ['expires_at'] }),
        ],
      }),
    );
    // Plain ALTER TABLE, as in ProjectChangeCounter: addColumn would rebuild these SQLite tables.
    await q.query('ALTER TABLE users ADD COLUMN password_hash varchar(255) NULL');
    // The member who created a key through a session: it acts with at most that member's role.
    await q.query('ALTER TABLE api_keys ADD COLUMN created_by_user_id integer NULL');

    const now = new Date().toISOString().slice(0, 19).replace('T', ' ');
    const users = (await q.query('SELECT id FROM users ORDER BY id')) as Array<{ id: number | string }>;
    for (const { id: userId } of users) {
      await q.query('INSERT INTO accounts (holder_user_id, created_at, updated_at) VALUES (?, ?, ?)', [
        userId,
        now,
        now,
      ]);
      const [account] = (await q.query('SELECT id FROM accounts WHERE holder_user_id = ?', [
        userId,
      ])) as Array<{
        id: number | string;
      }>;
      await q.query(
        "INSERT INTO memberships (account_id, user_id, role, project_ids, version, created_at, updated_at) VALUES (?, ?, 'owner', NULL, 1, ?, ?)",
        [account.id, userId, now, now],
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE api_keys DROP COLUMN created_by_user_id');
    await q.query('ALTER TABLE users DROP COLUMN password_hash');
    await q.dropTable('sessions');
    await q.dropTable('memberships');
    await q.dropTable('accounts');
  }
}
