import { Module } from '@nestjs/common';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { DomainsModule } from '../domains/domains.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentConnectorsController } from './payment-connectors.controller.js';
import { PaymentConnectorsService } from './payment-connectors.service.js';
import { PaymentEventEntity } from './payment-event.entity.js';
import { PaymentGrace } from './payment-grace.service.js';
import { PaymentReceipts } from './payment-receipt.service.js';
import { PaymentTestEvents } from './payment-test-events.service.js';
import { PaymentWebhooksController } from './payment-webhooks.controller.js';
import { SubscriptionEntity } from './subscription.entity.js';
import { SubscriptionsController } from './subscriptions.controller.js';
import { SubscriptionsService } from './subscriptions.service.js';

/**
 * Payment connectors: the resource, the endpoint providers send events to, the grace scheduler, and
 * the purchases (subscriptions) their events record.
 */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([
      PaymentConnectorEntity,
      PaymentEventEntity,
      ProjectEntity,
      SubscriptionEntity,
      DomainEntity,
      LicenseEntity,
    ]),
    AuthModule,
    ProjectsModule,
    DomainsModule,
    ProjectChangesModule,
  ],
  controllers: [PaymentConnectorsController, PaymentWebhooksController, SubscriptionsController],
  providers: [
    PaymentConnectorsService,
    PaymentReceipts,
    PaymentTestEvents,
    PaymentGrace,
    SubscriptionsService,
  ],
  exports: [PaymentGrace],
})
export class PaymentConnectorsModule {}
