import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookDispatcher } from './webhook-dispatcher.service.js';
import { WebhookOutbox } from './webhook-outbox.service.js';
import { WebhookTargets } from './ssrf.js';
import { WebhooksController } from './webhooks.controller.js';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([WebhookDeliveryEntity, WebhookAttemptEntity])],
  controllers: [WebhooksController],
  providers: [WebhookOutbox, WebhookDispatcher, WebhookTargets],
  exports: [WebhookOutbox, WebhookDispatcher, WebhookTargets],
})
export class WebhooksModule {}
