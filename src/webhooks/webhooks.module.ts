import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookDispatcher } from './webhook-dispatcher.service.js';
import { WebhookOutboxModule } from './webhook-outbox.module.js';
import { WebhooksController } from './webhooks.controller.js';

/** Delivering the outbox (the dispatcher) and the deliveries' API. */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([WebhookDeliveryEntity, WebhookAttemptEntity]),
    WebhookOutboxModule,
    ProjectChangesModule,
    AuthModule,
    ProjectsModule,
  ],
  controllers: [WebhooksController],
  providers: [WebhookDispatcher],
  exports: [WebhookDispatcher],
})
export class WebhooksModule {}
