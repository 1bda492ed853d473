import { Injectable } from '@nestjs/common';
import { AnalyticsCounts } from '../analytics/analytics-counts.service.js';
import { RuntimeRefusal } from '../common/http/errors.js';
import { OVERSIZED_KEY } from '../common/http/license-key.js';
import { ISO_COUNTRIES } from '../common/net/address-lists.js';
import type { RuntimeCaller } from './runtime-call.js';
import { RuntimeLookupService } from './runtime-lookup.service.js';
import { runtimeChecks } from '../metrics/metrics.js';

/**
 * The country an answer is counted under: an ISO 3166-1 alpha-2 code as COUNTRY_HEADER sends it
 * (CF-IPCountry: `US`), or Cloudflare's `XX` (unknown) and `T1` (Tor); anything else is '' (unknown),
 * so made-up values cannot grow the analytics.
 */
function countryCode(value: string | undefined): string {
  if (value === undefined || value.length < 2 || value.length > 4) return '';
  const code = value.trim().toUpperCase();
  return ISO_COUNTRIES.has(code) || code === 'XX' || code === 'T1' ? code : '';
}

/**
 * Where the runtime answers are counted for the analytics (docs/analytics.md): `answered` by the
 * handlers that answer (RuntimeAnswers for has-paid on both request paths, the stream and deactivation
 * controllers), `refused` where any error becomes an answer (the exception filter and the runtime
 * route), which counts each RuntimeRefusal by its reason, and by its status in the metrics.
 */
@Injectable()
export class RuntimeAnswerCounting {
  constructor(
    private readonly counts: AnalyticsCounts,
    private readonly lookup: RuntimeLookupService,
  ) {}

  /** A runtime call answered: paid or unpaid, under the registered domain it was counted against. */
  answered(call: RuntimeCaller, projectId: number, paid: boolean, domainId: number | null): void {
    if (!this.counts.enabled) return;
    this.counts.count(projectId, paid ? 'paid' : 'unpaid', '', domainId ?? 0, countryCode(call.country));
  }

  /**
   * Counts `error` when it is a runtime refusal of a known project. The rate limit runs before the
   * license is looked up: its refusal is filed under the project of the license this process knows
   * the key for, from memory, or of the deleted license the key was (docs/analytics.md#unknown-keys).
   * Refusals of no known project are not counted: no owner could see them.
   */
  refused(error: unknown, call: RuntimeCaller): void {
    if (!(error instanceof RuntimeRefusal)) return;
    // A rate-limited call never reached the check: the metric counts the check's refusals.
    if (error.reason !== 'rate_limited') runtimeChecks.inc({ outcome: `refused_${error.getStatus()}` });
    if (!this.counts.enabled) return;
    let projectId = error.projectId;
    if (projectId === null && error.reason === 'rate_limited') {
      const hash = call.key?.hash;
      if (hash === undefined || hash === OVERSIZED_KEY) return;
      projectId = this.lookup.projectOf(hash);
    }
    if (projectId === null) return;
    this.counts.count(projectId, 'refused', error.reason, error.domainId ?? 0, countryCode(call.country));
  }
}
