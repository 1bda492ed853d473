import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** An accepted event's body, personal data redacted (docs/payments.md#the-event-log); null on older rows. */
export class PaymentEventPayload1764700000000 implements MigrationInterface {
  name = 'PaymentEventPayload1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn('payment_events', new TableColumn({ name: 'payload', type: 'text', isNullable: true }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('payment_events', 'payload');
  }
}
