import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Each outbox row's receiver host, for the dispatcher's per-host cap. */
export class WebhookTargetHost1732000000004 implements MigrationInterface {
  name = 'WebhookTargetHost1732000000004';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'webhook_deliveries',
      new TableColumn({
        name: 'target_host',
        type: 'varchar',
        length: '255',
        isNullable: false,
        default: "''",
      }),
    );
    const projects = (await q.query(
      'SELECT id, webhook_url FROM projects WHERE webhook_url IS NOT NULL',
    )) as Array<{
      id: number;
      webhook_url: string;
    }>;
    for (const project of projects) {
      await q.query('UPDATE webhook_deliveries SET target_host = ? WHERE project_id = ?', [
        hostOf(project.webhook_url),
        project.id,
      ]);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('webhook_deliveries', 'target_host');
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
