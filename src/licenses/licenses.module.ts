import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { DomainsModule } from '../domains/domains.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { PlansModule } from '../plans/plans.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { ActivationsController } from './activations.controller.js';
import { Activations } from './activations.js';
import { ActivationsService } from './activations.service.js';
import { LicenseLifecycle } from './license-lifecycle.service.js';
import { LicenseActivationEntity, LicenseUsageEntity } from './license-usage.entity.js';
import { LicenseEntity } from './license.entity.js';
import { LicensesController } from './licenses.controller.js';
import { LicensesService } from './licenses.service.js';

/** Licenses, their activations, and the scheduler of their expiry notices. */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([LicenseEntity, LicenseUsageEntity, LicenseActivationEntity]),
    AuthModule,
    ProjectsModule,
    DomainsModule,
    ProjectChangesModule,
    PlansModule,
  ],
  controllers: [LicensesController, ActivationsController],
  providers: [LicensesService, ActivationsService, Activations, LicenseLifecycle],
  exports: [LicensesService, ActivationsService, Activations],
})
export class LicensesModule {}
