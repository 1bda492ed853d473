import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { AnalyticsModule } from './analytics/analytics.module.js';
import { AuditModule } from './audit/audit.module.js';
import { AuthModule } from './auth/auth.module.js';
import { CoreModule } from './common/core.module.js';
import { Clock } from './common/time.js';
import { logsRequests, pinoHttpParams, RuntimeActivityLog } from './common/logging/logging.js';
import { RequestLogModule } from './common/logging/pino-nest.js';
import { AppConfig } from './config/app-config.js';
import { RedisService } from './common/cache/redis.js';
import { RedisModule } from './common/cache/redis.module.js';
import { HttpDrain } from './common/http/http-server.js';
import { ThrottleGuard } from './common/throttling/throttle.guard.js';
import { throttlerOptions } from './common/throttling/throttling.js';
import { CustomersModule } from './customers/customers.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DomainsModule } from './domains/domains.module.js';
import { HealthModule } from './health/health.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { InjectablesModule } from './injectables/injectables.module.js';
import { LicensesModule } from './licenses/licenses.module.js';
import { GateModule } from './gate/gate.module.js';
import { PaymentConnectorsModule } from './payments/payment-connectors.module.js';
import { PortalModule } from './portal/portal.module.js';
import { PlansModule } from './plans/plans.module.js';
import { ProjectsModule } from './projects/projects.module.js';
import { RootController } from './root.controller.js';
import { ServerController } from './server/server.controller.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/**
 * The application: the ambient modules (configuration, logging, the database, the cache, rate limits),
 * then the features, each of which imports what it uses.
 */
@Module({})
export class AppModule {
  /** `clock`: tests pass one they can move (test/utils/clock.ts). */
  static forRoot(config: AppConfig, clock = new Clock()): DynamicModule {
    const env = config.env;
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(config, clock),
        // Request lines are written at info. Above that level nothing reads the per-request child
        // logger (errors carry req_id themselves), so the middleware is not mounted at all.
        RequestLogModule.forRoot(pinoHttpParams(env), logsRequests(env)),
        DatabaseModule,
        ThrottlerModule.forRootAsync({
          imports: [RedisModule],
          inject: [AppConfig, RedisService, Clock],
          useFactory: throttlerOptions,
        }),
        // Express tries routes in registration order, and Nest registers them module by module as it
        // meets them: the runtime routes (the injectable stream, and has-paid spelled otherwise than
        // the fast path serves it) come first.
        GateModule,
        AuthModule,
        ProjectsModule,
        DomainsModule,
        LicensesModule,
        PlansModule,
        InjectablesModule,
        WebhooksModule,
        PaymentConnectorsModule,
        CustomersModule,
        PortalModule,
        AuditModule,
        AnalyticsModule,
        HealthModule,
        MetricsModule,
      ],
      controllers: [RootController, ServerController],
      providers: [{ provide: APP_GUARD, useClass: ThrottleGuard }, RuntimeActivityLog, HttpDrain],
    };
  }
}
