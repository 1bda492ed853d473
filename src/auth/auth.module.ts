import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditLogModule } from '../audit/audit-log.module.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { AuthService } from './auth.service.js';
import { UserEntity } from './user.entity.js';

/** Accounts and API keys, and ApiKeyGuard, which every management controller's module imports. */
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity]), AuditLogModule],
  controllers: [ApiKeysController],
  providers: [AuthService, ApiKeyGuard],
  exports: [AuthService, ApiKeyGuard],
})
export class AuthModule {}
