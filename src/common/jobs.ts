import type { AppConfig } from '../config/app-config.js';
import type { PeriodicTaskOptions } from './periodic-task.js';

/** What a job's entry fixes: its name (its log lines say "could not <name>"), how often it runs, and its first delay. */
export type Job = Pick<PeriodicTaskOptions, 'name' | 'everyMs' | 'firstAfterMs'>;

type Env = AppConfig['env'];

const HOUR_MS = 60 * 60 * 1000;

/**
 * Every periodic job of the service, in one list. Each runs on a PeriodicTask (periodic-task.ts: one
 * run at a time, the first failure logged then the recovery, stopped on shutdown) that its owner
 * builds from its entry here with the work to run: `new PeriodicTask({ ...JOBS.usageFlush, logger,
 * run })`. A cadence from configuration is an entry that reads the environment. docs/architecture.md
 * has the same list with what each job is for.
 */
export const JOBS = {
  /** common/logging/logging.ts RuntimeActivityLog: the runtime check's counts, at info. */
  runtimeSummary: { name: 'write the runtime summary', everyMs: 60_000 },
  /** gate/usage-flush.ts UsageFlush: the runtime's usage counts, kept in memory meanwhile. */
  usageFlush: { name: 'write the usage counts', everyMs: 1000 },
  /** licenses/activations.ts Activations: the recorded activations' last_seen_at. */
  lastSeenWrites: { name: 'write last_seen_at', everyMs: 1000 },
  /**
   * analytics/analytics-counts.service.ts AnalyticsCounts: the answer counts, kept in memory meanwhile;
   * at least every 10 s (docs/analytics.md#cost): one upsert per 200 rows, whatever the traffic.
   */
  analyticsFlush: { name: 'write the analytics counts (kept in memory meanwhile)', everyMs: 5000 },
  /** analytics/analytics-counts.service.ts AnalyticsCounts: a minute after start, then hourly. */
  analyticsPruning: { name: 'prune the analytics', everyMs: HOUR_MS, firstAfterMs: 60_000 },
  /** audit/audit.service.ts AuditService: past AUDIT_RETENTION_DAYS, a minute after start, then hourly. */
  auditPruning: { name: 'prune the audit log', everyMs: HOUR_MS, firstAfterMs: 60_000 },
  /** portal/portal.service.ts PortalService: links and portal sessions past their expiry, a minute after start, then every 15 minutes. */
  portalPruning: {
    name: 'prune expired portal links and sessions',
    everyMs: 15 * 60_000,
    firstAfterMs: 60_000,
  },
  /** plans/meters.ts Meters: metered usage's idempotency keys past 35 days, a minute after start, then hourly. */
  meterKeyPruning: { name: 'prune the meter idempotency keys', everyMs: HOUR_MS, firstAfterMs: 60_000 },
  /**
   * database/wal-checkpoints.ts WalCheckpoints (SQLite files): a checkpoint on its thread, for what was
   * written outside units of work (which ask for their own).
   */
  walCheckpoints: { name: 'checkpoint the SQLite WAL', everyMs: 1000 },
  /** common/throttling/throttler-storage.ts SharedThrottlerStorage (with Redis): what this instance admitted. */
  throttlerSync: { name: 'send rate-limit counts to Redis', everyMs: 200 },
  /** common/cache/change-counter-generations.ts (without Redis): never started, run by calls at most this often. */
  changeCounters: { name: "read the projects' change counters", everyMs: 1000 },
  /** webhooks/webhook-dispatcher.service.ts WebhookDispatcher (WEBHOOK_DISPATCHER): the outbox's due rows. */
  webhookDispatch: (env: Env): Job => ({ name: 'dispatch webhooks', everyMs: env.WEBHOOK_POLL_MS }),
  /** licenses/license-lifecycle.service.ts LicenseLifecycle (WEBHOOK_DISPATCHER): license.expiring/expired. */
  expiryNotices: (env: Env): Job => ({
    name: 'send expiry notices',
    everyMs: env.LICENSE_EXPIRY_POLL_MS,
    firstAfterMs: 0,
  }),
  /** payments/payment-grace.service.ts PaymentGrace (WEBHOOK_DISPATCHER): graces that ended. */
  paymentGraces: (env: Env): Job => ({
    name: 'close ended payment graces',
    everyMs: env.PAYMENT_GRACE_POLL_MS,
    firstAfterMs: 0,
  }),
} satisfies Record<string, Job | ((env: Env) => Job)>;
