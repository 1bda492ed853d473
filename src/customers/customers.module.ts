import { Module } from '@nestjs/common';
import { PlansModule } from '../plans/plans.module.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { SubscriptionEntity } from '../payments/subscription.entity.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { CustomerEntity, CustomerExternalIdEntity } from './customer.entity.js';
import { CustomersController } from './customers.controller.js';
import { CustomersService } from './customers.service.js';

/**
 * Customers, the vendor's side: it reads licenses and subscriptions through their tables, not their
 * modules, so that the payment connectors may import this module to find or create customers.
 */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([CustomerEntity, CustomerExternalIdEntity, LicenseEntity, SubscriptionEntity]),
    AuthModule,
    ProjectsModule,
    ProjectChangesModule,
    PlansModule,
  ],
  controllers: [CustomersController],
  providers: [CustomersService],
  exports: [CustomersService],
})
export class CustomersModule {}
