import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { Meters } from './meters.js';
import { PlanEntity } from './plan.entity.js';
import { PlansController } from './plans.controller.js';
import { PlansService } from './plans.service.js';

/** A project's plans and their entitlements (docs/plans.md). */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([PlanEntity]),
    AuthModule,
    ProjectsModule,
    ProjectChangesModule,
  ],
  controllers: [PlansController],
  providers: [PlansService, Meters],
  exports: [PlansService, Meters],
})
export class PlansModule {}
