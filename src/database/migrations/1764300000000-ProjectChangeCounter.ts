import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * projects.change_seq: one more on every write to the project, in the write's own transaction, so
 * that instances without Redis learn of each other's writes by reading it (common/cache/generations.ts).
 * Not on ProjectEntity: no answer shows it, and only those two places touch it.
 */
export class ProjectChangeCounter1764300000000 implements MigrationInterface {
  name = 'ProjectChangeCounter1764300000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTER TABLE on both databases: TypeORM's addColumn rebuilds a SQLite table, and rebuilding
    // the table every other one refers to is a risk this one column does not need.
    await q.query('ALTER TABLE projects ADD COLUMN change_seq bigint NOT NULL DEFAULT 0');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE projects DROP COLUMN change_seq');
  }
}
