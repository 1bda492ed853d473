import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { AnalyticsCounts } from './analytics-counts.service.js';
import { AnalyticsController } from './analytics.controller.js';
import { AnalyticsService } from './analytics.service.js';

/** What the gate answered (docs/analytics.md): the counts the runtime takes, their flush and retention, and the API that reads them. */
@Module({
  imports: [CacheModule, DatabaseModule, AuthModule, ProjectsModule],
  controllers: [AnalyticsController],
  providers: [AnalyticsCounts, AnalyticsService],
  exports: [AnalyticsCounts],
})
export class AnalyticsModule {}
