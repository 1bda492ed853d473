import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { AuditEventEntity } from './audit-event.entity.js';
import { AuditController } from './audit.controller.js';
import { AuditService } from './audit.service.js';

/** Reading the audit log (GET /audit-log, GET /project/{id}/audit-log) and its retention; writing is AuditLogModule's. */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([AuditEventEntity]),
    AuthModule,
    ProjectsModule,
  ],
  controllers: [AuditController],
  providers: [AuditService],
  exports: [AuditService],
})
export class AuditModule {}
