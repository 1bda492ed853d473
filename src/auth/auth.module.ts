import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditLogModule } from '../audit/audit-log.module.js';
import { RedisModule } from '../common/cache/redis.module.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';
import { AccountEntity, MembershipEntity } from './account.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { AuthController } from './auth.controller.js';
import { LoginLimits } from './login-limits.js';
import { SessionEntity } from './session.entity.js';
import { SessionGuard } from './session.guard.js';
import { SessionsService } from './sessions.service.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { AuthService } from './auth.service.js';
import { UserEntity } from './user.entity.js';
import { DatabaseModule } from '../database/database.module.js';
import { InvitationEntity, PasswordResetEntity, UserIdentityEntity } from './invitation.entity.js';
import { JoiningController } from './joining.controller.js';
import { Mailer } from './mailer.js';
import { MembersController } from './members.controller.js';
import { MembersService } from './members.service.js';
import { PasswordResetsService } from './password-resets.service.js';
import { SsoController } from './sso.controller.js';
import { SetupService } from './setup.service.js';
import { SsoService } from './sso.service.js';

/**
 * Accounts, API keys, users' sessions, and ApiKeyGuard, which every management controller's module imports; with
 * them AuthFailures, the one count of unknown keys per address that ApiKeyGuard and the runtime's
 * LicenseKeyGuard share.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([
      UserEntity,
      ApiKeyEntity,
      AccountEntity,
      MembershipEntity,
      SessionEntity,
      InvitationEntity,
      PasswordResetEntity,
      UserIdentityEntity,
    ]),
    AuditLogModule,
    DatabaseModule,
    RedisModule,
  ],
  controllers: [ApiKeysController, AuthController, MembersController, JoiningController, SsoController],
  providers: [
    AuthService,
    ApiKeyGuard,
    AuthFailures,
    SessionsService,
    SessionGuard,
    LoginLimits,
    Mailer,
    MembersService,
    PasswordResetsService,
    SsoService,
    SetupService,
  ],
  exports: [AuthService, ApiKeyGuard, AuthFailures, SessionsService, SessionGuard],
})
export class AuthModule {}
