import { DataSource } from 'typeorm';
import { AuditLog } from '../../src/audit/audit-log.service.js';
import { ChangeCounterGenerations } from '../../src/common/cache/change-counter-generations.js';
import type { ProjectGenerations } from '../../src/common/cache/generations.js';
import { Clock } from '../../src/common/time.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { ProjectChanges } from '../../src/project-changes/project-changes.service.js';
import type { ProjectEntity } from '../../src/projects/project.entity.js';
import { WebhookOutbox } from '../../src/webhooks/webhook-outbox.service.js';

/**
 * For the unit specs of the runtime's counters (payments/usage-*.ts, payments/activations.ts): an
 * in-memory SQLite database with the migrations run, every statement it is sent logged in
 * `statements`, and what the counters are built with.
 */
export async function countingDatabase() {
  const statements: string[] = [];
  const ds = await new DataSource({
    ...dataSourceOptions('sqlite::memory:'),
    logging: ['query'],
    logger: {
      logQuery: (sql: string) => void statements.push(sql),
      logQueryError: () => undefined,
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    },
  }).initialize();
  await ds.runMigrations();
  const unit = new UnitOfWork(ds);
  unit.onModuleInit();
  /** Without Redis: trusted, moved by bump(). */
  const generations: ProjectGenerations = new ChangeCounterGenerations();
  const changes = (known = generations) =>
    new ProjectChanges(unit, new AuditLog(unit), new WebhookOutbox(new Clock()), known);
  const project = { id: 1, webhook_url: null } as ProjectEntity;
  /** A license of project 1 with these limits (only what the counters read). */
  const license = (
    id: number,
    max_domains: number | null = null,
    max_usage_per_day: number | null = null,
  ) => ({
    id,
    project_id: 1,
    max_domains,
    max_subdomains_per_domain: null,
    max_usage_per_day,
  });
  return { ds, unit, statements, generations, changes, project, license };
}
