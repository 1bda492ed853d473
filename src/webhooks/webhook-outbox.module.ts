import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditLogModule } from '../audit/audit-log.module.js';
import { WebhookTargets } from './ssrf.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookOutbox } from './webhook-outbox.service.js';

/**
 * How every write records its webhook events and its audit row (in its own transaction), and where
 * webhooks may go. Every feature that changes a project imports it; delivering the events is
 * WebhooksModule's.
 */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookDeliveryEntity]), AuditLogModule],
  providers: [WebhookOutbox, WebhookTargets],
  exports: [WebhookOutbox, WebhookTargets],
})
export class WebhookOutboxModule {}
