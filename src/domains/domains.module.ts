import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LicenseEntity } from '../licenses/license.entity.js';
import { DomainEntity } from './domain.entity.js';
import { DomainsController } from './domains.controller.js';
import { DomainsService } from './domains.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([DomainEntity, LicenseEntity])],
  controllers: [DomainsController],
  providers: [DomainsService],
  exports: [DomainsService],
})
export class DomainsModule {}
