import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module.js';
import { ProjectCreateGuard } from './project-create.guard.js';
import { ProjectEntity } from './project.entity.js';
import { ProjectsController } from './projects.controller.js';
import { ProjectsService } from './projects.service.js';

@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([ProjectEntity]),
    AuthModule,
    ProjectChangesModule,
    WebhookOutboxModule,
  ],
  controllers: [ProjectsController],
  providers: [ProjectsService, ProjectCreateGuard],
  exports: [ProjectsService],
})
export class ProjectsModule {}
