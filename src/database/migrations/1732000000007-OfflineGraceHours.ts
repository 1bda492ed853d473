import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** How long an offline token of the project stays valid (docs/decisions.md#signed-answers-and-offline-tokens); 0 issues none. */
export class OfflineGraceHours1732000000007 implements MigrationInterface {
  name = 'OfflineGraceHours1732000000007';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'projects',
      new TableColumn({ name: 'offline_grace_hours', type: 'integer', isNullable: false, default: 72 }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('projects', 'offline_grace_hours');
  }
}
