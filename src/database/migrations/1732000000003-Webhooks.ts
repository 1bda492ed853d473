import { MigrationInterface, QueryRunner, Table, TableIndex, TableUnique } from 'typeorm';
import { date, id, int, str, text, timestamps } from './1732000000000-Initial.js';

/** The webhook outbox and its delivery log (docs/decisions.md#webhooks). */
export class Webhooks1732000000003 implements MigrationInterface {
  name = 'Webhooks1732000000003';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'webhook_deliveries',
        columns: [
          id(),
          int('project_id'),
          str('event_id', 64),
          str('type', 64),
          text('payload', false),
          str('status', 16),
          int('attempts'),
          date('next_attempt_at'),
          date('first_attempt_at'),
          date('last_attempt_at'),
          int('last_status_code', true),
          str('last_error', 1000, true),
          // Which dispatcher holds the row and until when; an expired claim may be taken over.
          str('claimed_by', 64, true),
          date('claimed_until'),
          ...timestamps(),
        ],
        uniques: [new TableUnique({ name: 'uq_webhook_deliveries_event', columnNames: ['event_id'] })],
        indices: [
          new TableIndex({ name: 'ix_webhook_deliveries_due', columnNames: ['status', 'next_attempt_at'] }),
          new TableIndex({ name: 'ix_webhook_deliveries_project', columnNames: ['project_id'] }),
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'webhook_attempts',
        columns: [
          id(),
          int('delivery_id'),
          int('attempt'),
          str('url', 2048),
          int('response_code', true),
          int('duration_ms'),
          str('error', 1000, true),
          str('outcome', 16),
          date('next_attempt_at'),
          { name: 'created_at', type: 'datetime', isNullable: false, default: 'CURRENT_TIMESTAMP' },
        ],
        indices: [new TableIndex({ name: 'ix_webhook_attempts_delivery', columnNames: ['delivery_id'] })],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('webhook_attempts');
    await q.dropTable('webhook_deliveries');
  }
}
