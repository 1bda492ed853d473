import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ProjectEntity } from '../projects/project.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { AuthService } from './auth.service.js';
import { UserEntity } from './user.entity.js';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity, ProjectEntity])],
  controllers: [ApiKeysController],
  providers: [AuthService, ApiKeyGuard],
  exports: [AuthService, ApiKeyGuard],
})
export class AuthModule {}
