import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditLogModule } from '../audit/audit-log.module.js';
import { RedisModule } from '../common/cache/redis.module.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { AuthService } from './auth.service.js';
import { UserEntity } from './user.entity.js';

/**
 * Accounts and API keys, and ApiKeyGuard, which every management controller's module imports; with
 * them AuthFailures, the one count of unknown keys per address that ApiKeyGuard and the runtime's
 * LicenseKeyGuard share.
 */
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity]), AuditLogModule, RedisModule],
  controllers: [ApiKeysController],
  providers: [AuthService, ApiKeyGuard, AuthFailures],
  exports: [AuthService, ApiKeyGuard, AuthFailures],
})
export class AuthModule {}
