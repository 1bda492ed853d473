import { MigrationInterface, QueryRunner } from 'typeorm';

/** An accepted event's body, personal data redacted (docs/payments.md#the-event-log); null on older rows. */
export class PaymentEventPayload1764700000000 implements MigrationInterface {
  name = 'PaymentEventPayload1764700000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTER TABLE, as in ProjectChangeCounter: addColumn would rebuild the SQLite table.
    await q.query('ALTER TABLE payment_events ADD COLUMN payload text NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE payment_events DROP COLUMN payload');
  }
}
