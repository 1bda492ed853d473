import { Module } from '@nestjs/common';
import { AuditLogModule } from '../audit/audit-log.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module.js';
import { ProjectChanges } from './project-changes.service.js';

/** How every change in a project is written (ProjectChanges); every feature that changes one imports it. */
@Module({
  imports: [CacheModule, DatabaseModule, AuditLogModule, WebhookOutboxModule],
  providers: [ProjectChanges],
  exports: [ProjectChanges],
})
export class ProjectChangesModule {}
