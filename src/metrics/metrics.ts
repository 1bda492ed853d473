import { collectDefaultMetrics, Counter, Registry } from 'prom-client';

/** One registry per process (SPEC 11: GET /metrics, Prometheus text format). */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'licensegate_' });

export const runtimeChecks = new Counter({
  name: 'licensegate_runtime_checks_total',
  help: 'Runtime payment checks answered, by outcome (paid, unpaid) or refusal status',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** The two answers of every successful check, bound once (labels are hashed on each unbound inc). */
export const paidChecks = runtimeChecks.labels('paid');
export const unpaidChecks = runtimeChecks.labels('unpaid');

export const webhookAttempts = new Counter({
  name: 'licensegate_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (succeeded, retrying, failed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
