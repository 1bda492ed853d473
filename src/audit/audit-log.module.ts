import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventEntity } from './audit-event.entity.js';
import { AuditLog } from './audit-log.service.js';
import { DatabaseModule } from '../database/database.module.js';

/**
 * How every management write appends its audit row (in its own transaction). Imported by the
 * writers (the webhook outbox, API keys); reading the log is AuditModule's.
 */
@Module({
  imports: [DatabaseModule, TypeOrmModule.forFeature([AuditEventEntity])],
  providers: [AuditLog],
  exports: [AuditLog],
})
export class AuditLogModule {}
