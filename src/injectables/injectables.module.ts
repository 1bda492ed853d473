import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { AppConfig } from '../config/app-config.js';
import { boundedMultipart } from '../common/http/upload.interceptor.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { InjectableEntity } from './injectable.entity.js';
import { InjectablesController } from './injectables.controller.js';
import { InjectablesService } from './injectables.service.js';

@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    TypeOrmModule.forFeature([InjectableEntity]),
    AuthModule,
    ProjectsModule,
    ProjectChangesModule,
    // Uploads stay in memory (they are encrypted into the row) and stop at MAX_UPLOAD_BYTES → 413.
    MulterModule.registerAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        // File names arrive as UTF-8 from browsers and HTTP clients; multer assumes latin1 otherwise.
        defParamCharset: 'utf8',
        limits: { fileSize: config.env.MAX_UPLOAD_BYTES, fieldSize: config.env.MAX_UPLOAD_BYTES, files: 1 },
        // Each limit above is per part: the body as a whole stops at one payload and the other fields.
        streamHandler: boundedMultipart(config.env.MAX_UPLOAD_BYTES),
      }),
    }),
  ],
  controllers: [InjectablesController],
  providers: [InjectablesService],
  exports: [InjectablesService],
})
export class InjectablesModule {}
