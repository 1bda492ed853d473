import { DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ThrottlerModule } from '@nestjs/throttler';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import { AuthModule } from './auth/auth.module.js';
import { CoreModule } from './common/core.module.js';
import { logsRequests, pinoHttpParams, RuntimeActivityLog } from './common/logging/logging.js';
import { AppConfig } from './config/app-config.js';
import { RedisService } from './common/cache/redis.js';
import { ThrottleGuard } from './common/throttling/throttle.guard.js';
import { throttlerOptions } from './common/throttling/throttling.js';
import { APP_GUARD } from '@nestjs/core';
import { dataSourceOptions, openDataSource } from './database/data-source-options.js';
import { DomainsModule } from './domains/domains.module.js';
import { HealthController } from './health/health.controller.js';
import { MetricsController } from './metrics/metrics.controller.js';
import { InjectablesModule } from './injectables/injectables.module.js';
import { LicensesModule } from './licenses/licenses.module.js';
import { PaymentsModule } from './payments/payments.module.js';
import { ProjectsModule } from './projects/projects.module.js';
import { RootController } from './root.controller.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    const env = config.env;
    return {
      module: AppModule,
      imports: [
        // Express tries routes in registration order and Nest registers them module by module in
        // import order: the runtime routes (has-paid, the injectable stream) come first.
        PaymentsModule,
        InjectablesModule,
        CoreModule.forRoot(config),
        LoggerModule.forRoot({
          pinoHttp: pinoHttpParams(env),
          // Request lines are written at info. Above that level nothing reads the per-request child
          // logger (errors carry req_id themselves), so the middleware is not mounted at all.
          ...(logsRequests(env) ? {} : { forRoutes: [] }),
        }),
        TypeOrmModule.forRootAsync({
          useFactory: () => ({ ...dataSourceOptions(env.DATABASE_URL, { service: true }), migrationsRun: true }),
          dataSourceFactory: (options) => openDataSource(options!),
        }),
        ThrottlerModule.forRootAsync({ inject: [AppConfig, RedisService], useFactory: throttlerOptions }),
        TerminusModule,
        WebhooksModule,
        AuthModule,
        ProjectsModule,
        DomainsModule,
        LicensesModule,
      ],
      controllers: [RootController, HealthController, MetricsController],
      providers: [{ provide: APP_GUARD, useClass: ThrottleGuard }, RuntimeActivityLog],
    };
  }
}
