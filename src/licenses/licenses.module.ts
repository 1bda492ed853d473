import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { DomainsModule } from '../domains/domains.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module.js';
import { LicenseActivationEntity, LicenseUsageEntity } from './license-usage.entity.js';
import { LicenseEntity } from './license.entity.js';
import { LicensesController } from './licenses.controller.js';
import { LicensesService } from './licenses.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([LicenseEntity, LicenseUsageEntity, LicenseActivationEntity]), AuthModule, ProjectsModule, DomainsModule, WebhookOutboxModule],
  controllers: [LicensesController],
  providers: [LicensesService],
  exports: [LicensesService],
})
export class LicensesModule {}
