import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** One registry per process, scraped at GET /metrics (Prometheus text format). */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'licensegate_' });

// Paid and unpaid answers are the runtime path's every call: plain numbers, added to the counter when
// it is scraped (prom-client hashes the label set on every inc, bound or not).
const answered = { paid: 0, unpaid: 0 };

export const runtimeChecks = new Counter({
  name: 'licensegate_runtime_checks_total',
  help: 'Runtime payment checks answered, by outcome (paid, unpaid) or refusal status',
  labelNames: ['outcome'] as const,
  registers: [registry],
  collect() {
    for (const outcome of ['paid', 'unpaid'] as const) {
      if (answered[outcome] > 0) this.inc({ outcome }, answered[outcome]);
      answered[outcome] = 0;
    }
  },
});

/** Counts one answered runtime check (the refusals count through runtimeChecks directly). */
export const countAnswer = (paid: boolean): void => {
  if (paid) answered.paid++;
  else answered.unpaid++;
};

export const webhookAttempts = new Counter({
  name: 'licensegate_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (succeeded, retrying, failed, interrupted)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const paymentEvents = new Counter({
  name: 'licensegate_payment_events_total',
  help: 'Deliveries to payment connectors, by provider and outcome (applied, ignored, duplicate, invalid_signature, not_found, malformed, error)',
  labelNames: ['provider', 'outcome'] as const,
  registers: [registry],
});

export const logLinesDropped = new Counter({
  name: 'licensegate_log_lines_dropped_total',
  help: 'Log lines dropped because stdout could not keep up (at most 4 MiB of lines wait for it)',
  registers: [registry],
});

export const invalidationDelay = new Histogram({
  name: 'licensegate_cache_invalidation_delay_seconds',
  help: 'With REDIS_URL: from a write committing on any instance to this instance applying it to its caches (clocks of one host)',
  buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});
