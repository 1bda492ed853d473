import { Module } from '@nestjs/common';
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

/** Payment connectors: the resource, the endpoint providers send events to, and the grace scheduler. */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([PaymentConnectorEntity, PaymentEventEntity, ProjectEntity]),
    AuthModule,
    ProjectsModule,
    DomainsModule,
    ProjectChangesModule,
  ],
  controllers: [PaymentConnectorsController, PaymentWebhooksController],
  providers: [PaymentConnectorsService, PaymentReceipts, PaymentTestEvents, PaymentGrace],
  exports: [PaymentGrace],
})
export class PaymentConnectorsModule {}
