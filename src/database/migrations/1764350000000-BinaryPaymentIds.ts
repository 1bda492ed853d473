import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Provider event ids and payment references compare byte for byte on MySQL/MariaDB too, as they do
 * on SQLite: under the default case-insensitive collation `evt_ABC` and `evt_abc` were one event (the
 * second answered `duplicate`) and one reference. A binary collation only tells more values apart,
 * so the unique indexes over these columns hold for every existing row. SQLite compares bytes
 * already: nothing to do there.
 */
export class BinaryPaymentIds1764350000000 implements MigrationInterface {
  name = 'BinaryPaymentIds1764350000000';

  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'better-sqlite3') return;
    await q.query(
      'ALTER TABLE payment_events MODIFY provider_event_id varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL',
    );
    await q.query(
      'ALTER TABLE licenses MODIFY payment_reference_id varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL',
    );
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'better-sqlite3') return;
    await q.query(
      'ALTER TABLE payment_events MODIFY provider_event_id varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL',
    );
    await q.query(
      'ALTER TABLE licenses MODIFY payment_reference_id varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL',
    );
  }
}
