import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { DomainEntity } from './domain.entity.js';
import { DomainsController } from './domains.controller.js';
import { DomainsService } from './domains.service.js';

@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([DomainEntity]),
    AuthModule,
    ProjectsModule,
    ProjectChangesModule,
  ],
  controllers: [DomainsController],
  providers: [DomainsService],
  exports: [DomainsService],
})
export class DomainsModule {}
