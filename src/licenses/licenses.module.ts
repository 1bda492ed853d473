import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseActivationEntity, LicenseUsageEntity } from './license-usage.entity.js';
import { LicenseEntity } from './license.entity.js';
import { LicensesController } from './licenses.controller.js';
import { LicensesService } from './licenses.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([LicenseEntity, DomainEntity, LicenseUsageEntity, LicenseActivationEntity])],
  controllers: [LicensesController],
  providers: [LicensesService],
  exports: [LicensesService],
})
export class LicensesModule {}
