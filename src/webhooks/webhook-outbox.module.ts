import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookTargets } from './ssrf.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookOutbox } from './webhook-outbox.service.js';

/**
 * The outbox rows a change's events become (written by ProjectChanges in the change's transaction),
 * and where webhooks may go. Delivering the events is WebhooksModule's.
 */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookDeliveryEntity])],
  providers: [WebhookOutbox, WebhookTargets],
  exports: [WebhookOutbox, WebhookTargets],
})
export class WebhookOutboxModule {}
