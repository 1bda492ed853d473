import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { AuthService } from './auth.service.js';
import { LicenseKeyGuard } from '../payments/license-key.guard.js';
import { RuntimeLookupService } from '../payments/runtime-lookup.service.js';
import { UserEntity } from './user.entity.js';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity, ProjectEntity, LicenseEntity, DomainEntity])],
  controllers: [ApiKeysController],
  providers: [AuthService, ApiKeyGuard, RuntimeLookupService, LicenseKeyGuard],
  exports: [AuthService, ApiKeyGuard, RuntimeLookupService, LicenseKeyGuard],
})
export class AuthModule {}
