import { Module } from '@nestjs/common';
import { AnalyticsModule } from '../analytics/analytics.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { CacheModule } from '../common/cache/cache.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { DomainsModule } from '../domains/domains.module.js';
import { InjectablesModule } from '../injectables/injectables.module.js';
import { LicensesModule } from '../licenses/licenses.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { PlansModule } from '../plans/plans.module.js';
import { ProjectChangesModule } from '../project-changes/project-changes.module.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import { AnswerSigner } from './answer-signer.js';
import { AnswerSigning } from './answer-signing.js';
import { InjectableStreamController } from './injectable-stream.controller.js';
import { LicenseDeactivationController } from './license-deactivation.controller.js';
import { LicenseKeyGuard } from './license-key.guard.js';
import { LicenseUsageController } from './license-usage.controller.js';
import { HasPaidController } from './has-paid.controller.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { RuntimeCalls } from './runtime-call.js';
import { RuntimeLookupService } from './runtime-lookup.service.js';
import { UsageCounter } from './usage-counter.js';
import { UsageFlush } from './usage-flush.js';

/**
 * The runtime gate: the calls a license key makes ("has it been paid", the injectable stream,
 * self-service deactivation) and what they rest on (the license lookups, usage counters, signing);
 * activations are recorded by LicensesModule.
 */
@Module({
  imports: [
    CacheModule,
    DatabaseModule,
    AnalyticsModule,
    AuthModule,
    ProjectsModule,
    DomainsModule,
    LicensesModule,
    InjectablesModule,
    ProjectChangesModule,
    PlansModule,
  ],
  controllers: [
    HasPaidController,
    InjectableStreamController,
    LicenseDeactivationController,
    LicenseUsageController,
  ],
  providers: [
    RuntimeAnswers,
    UsageCounter,
    UsageFlush,
    RuntimeLookupService,
    LicenseKeyGuard,
    AnswerSigning,
    AnswerSigner,
    RuntimeAnswerCounting,
    RuntimeCalls,
  ],
  exports: [LicenseKeyGuard, AnswerSigning, RuntimeAnswerCounting, RuntimeCalls],
})
export class GateModule {}
