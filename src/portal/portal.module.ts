import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { CustomerEntity } from '../customers/customer.entity.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { GateModule } from '../gate/gate.module.js';
import { LicenseActivationEntity } from '../licenses/license-usage.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { LicensesModule } from '../licenses/licenses.module.js';
import { PlansModule } from '../plans/plans.module.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { PortalSessionsController } from './portal-sessions.controller.js';
import { PortalController } from './portal.controller.js';
import { PortalLinkEntity, PortalSessionEntity } from './portal.entity.js';
import { PortalGuard } from './portal.guard.js';
import { PortalService } from './portal.service.js';

/** The customer portal: the vendor's links into it, its sessions, and what a buyer sees and does there. */
@Module({
  imports: [
    CacheModule,
    TypeOrmModule.forFeature([
      PortalLinkEntity,
      PortalSessionEntity,
      CustomerEntity,
      LicenseEntity,
      ProjectEntity,
      DomainEntity,
      LicenseActivationEntity,
    ]),
    AuthModule,
    ProjectsModule,
    LicensesModule,
    PlansModule,
    GateModule,
    ProjectChangesModule,
  ],
  controllers: [PortalSessionsController, PortalController],
  providers: [PortalService, PortalGuard],
  exports: [PortalService],
})
export class PortalModule {}
