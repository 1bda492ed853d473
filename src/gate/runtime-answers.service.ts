import { Injectable } from '@nestjs/common';
import type { RuntimeEntry } from './runtime-lookup.service.js';
import { ApiError, RuntimeRefusal } from '../common/http/errors.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import type { SentLicenseKey } from '../common/http/license-key.js';
import type { DomainEntity } from '../domains/domain.entity.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { findRegistered } from './calling-domain.js';
import { Activations } from '../licenses/activations.js';
import { UsageCounter } from './usage-counter.js';
import { countAnswer } from '../metrics/metrics.js';
import { InjectablesService } from '../injectables/injectables.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { AnswerSigning } from './answer-signing.js';
import { offlineToken } from './offline-token.js';
import { Clock } from '../common/time.js';
import type { Entitlements } from '../plans/entitlements.js';
import { addPlan, type RuntimePlan } from '../plans/runtime-plan.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { andThen, type MaybePromise } from '../common/maybe-promise.js';
import type { Include, RuntimeCall, RuntimeCaller } from './runtime-call.js';
import { type Admitted, DOMAIN_NOT_REGISTERED, paidNow, RuntimeGate, type Verdict } from './runtime-gate.js';

export interface HasPaidResult {
  has_paid: boolean;
  injectables?: unknown[];
  token?: string;
  redirect_url?: string | null;
  is_test_license?: boolean;
  grace_until?: string;
  plan?: string | null;
  entitlements?: Entitlements;
}

/** A paid answer to a license: what its offline token says, when one is asked for. */
interface TokenGrant {
  license: LicenseEntity;
  keySha256: string;
  domain: string | null;
  /** The grace of the flag that answered paid, when one runs: the token ends with it. */
  graceUntil: Date | null;
  plan?: RuntimePlan | null;
}

export { NO_DOMAIN } from './calling-domain.js';
export { DOMAIN_NOT_REGISTERED, PAYLOADS_NEED_DOMAIN, PINNED_CHECK_PROJECT } from './runtime-gate.js';

/**
 * The runtime answers: RuntimeGate decides (runtime-gate.ts), and this turns its verdict into the
 * answer, the one place that does (docs/architecture.md#the-runtime-gate).
 */
@Injectable()
export class RuntimeAnswers {
  /** The runtime check's rules, in order. */
  readonly gate: RuntimeGate;

  constructor(
    usage: UsageCounter,
    activations: Activations,
    private readonly injectables: InjectablesService,
    private readonly signing: AnswerSigning,
    private readonly answers: RuntimeAnswerCounting,
    private readonly clock: Clock,
  ) {
    this.gate = new RuntimeGate(usage, activations);
  }

  /**
   * POST has-paid for the license LicenseKeyGuard found: the gate's verdict, answered. `read` reads
   * what the call asks once the license is known (RuntimeCalls.hasPaid). At once when everything is in
   * memory, a promise when a step must wait (common/maybe-promise.ts).
   */
  hasPaid(entry: RuntimeEntry, read: (allowConfigs: boolean) => RuntimeCall): MaybePromise<HasPaidResult> {
    return andThen(this.gate.check(entry, read, this.clock.nowMs()), (verdict) =>
      this.settle(entry as Admitted, verdict),
    );
  }

  /** The check of a license that passed the license refusals, on its call as read. */
  checkLicense(entry: Admitted, call: RuntimeCall): MaybePromise<HasPaidResult> {
    return andThen(this.gate.checkCall(entry, call, this.clock.nowMs()), (verdict) =>
      this.settle(entry, verdict),
    );
  }

  /**
   * A verdict as an answer: a refusal is thrown as a RuntimeRefusal, which the exception filter and the
   * runtime route answer and count (answer-counting.ts); paid or unpaid is counted here and answered
   * with what `include` asked for.
   */
  private settle(entry: Admitted, verdict: Verdict): MaybePromise<HasPaidResult> {
    if (verdict.verdict === 'refused') throw new RuntimeRefusal(verdict);
    const { license, project } = entry;
    const { call } = verdict;
    const hasPaid = verdict.verdict === 'paid';
    countAnswer(hasPaid);
    this.answers.answered(call, project.id, hasPaid, verdict.domainId);
    const grant = call.include?.token
      ? {
          license,
          keySha256: (call.key as SentLicenseKey).hash,
          domain: verdict.host,
          graceUntil: verdict.graceUntil,
          plan: entry.plan,
        }
      : undefined;
    return andThen(this.answer(project, hasPaid, verdict.graceUntil, call.include, grant), (result) => {
      result.is_test_license = license.is_test_license;
      return addPlan(result, entry.plan, hasPaid);
    });
  }

  /** The license refusals on a route that checks no more (the stream, a deactivation): throws the refusal. */
  admit(entry: RuntimeEntry): Admitted {
    const refused = this.gate.license(entry, this.clock.nowMs());
    if (refused) throw new RuntimeRefusal(refused);
    return entry as Admitted;
  }

  /** allowed_ips, then allowed_countries: throws the refusal saying which refused the caller. */
  assertPlaceAllowed(entry: Admitted, caller: RuntimeCaller): void {
    const refused = this.gate.place(entry, caller);
    if (refused) throw new RuntimeRefusal(refused);
  }

  /** The check of a project read with an API key: the same domain rules, no license limits. */
  async checkProject(
    project: ProjectEntity,
    domains: Map<string, DomainEntity>,
    call: RuntimeCall,
  ): Promise<HasPaidResult> {
    if (call.action === 'check_project')
      return this.answer(
        project,
        this.paidNow(project.has_paid, project.grace_until),
        project.grace_until,
        call.include,
      );
    const host = call.domain.host;
    if (!host) throw new ApiError(400, call.noDomain as string);
    const registered = findRegistered(domains, host);
    // An API-key check is not a runtime answer: refused alike, not counted (docs/analytics.md).
    if (!registered)
      throw new ApiError(403, DOMAIN_NOT_REGISTERED, null, { redirect_url: project.default_redirect_url });
    return this.answer(
      project,
      this.paidNow(registered.has_paid, registered.grace_until),
      registered.grace_until,
      call.include,
    );
  }

  /**
   * Whether the license's answer is paid now, as the stream and its counting ask: a `billing: license`
   * license's own flag, else the project's.
   */
  paidFor({ license, project }: Admitted): boolean {
    return license.billing === 'license'
      ? this.paidNow(license.has_paid, license.grace_until)
      : this.paidNow(project.has_paid, project.grace_until);
  }

  /** Whether a flag answers paid now (runtime-gate.ts `paidNow`), by the service's clock. */
  paidNow(hasPaid: boolean, graceUntil: Date | null): boolean {
    return paidNow(hasPaid, graceUntil, this.clock.nowMs());
  }

  /** {has_paid, grace_until?, redirect_url?, injectables?, token?}: at once unless payloads or a token are asked for. */
  private answer(
    project: ProjectEntity,
    hasPaid: boolean,
    graceUntil: Date | null,
    include: Include | undefined,
    grant?: TokenGrant,
  ): MaybePromise<HasPaidResult> {
    if (!hasPaid) return { has_paid: false, redirect_url: project.default_redirect_url };
    const result: HasPaidResult =
      graceUntil === null
        ? { has_paid: true }
        : { has_paid: true, grace_until: toIsoTimestamp(graceUntil) as string };
    if (include === undefined) return result;
    return this.withPayloads(result, project, include, grant);
  }

  private async withPayloads(
    result: HasPaidResult,
    project: ProjectEntity,
    include: Include,
    grant?: TokenGrant,
  ): Promise<HasPaidResult> {
    if (include.injectables) result.injectables = await this.injectables.paidOnly(project.id);
    if (grant && project.offline_grace_hours > 0) result.token = await this.token(project, grant);
    return result;
  }

  /**
   * An offline token for a paid answer, valid for the project's offline_grace_hours, and never past
   * the grace of the flag that answered, the license's own grace or its expires_at: a token must not
   * outlive the answer it stands for.
   */
  private async token(project: ProjectEntity, grant: TokenGrant): Promise<string> {
    const iat = Math.floor(this.clock.nowMs() / 1000);
    let exp = iat + project.offline_grace_hours * 3600;
    for (const end of [grant.graceUntil, grant.license.grace_until, grant.license.expires_at])
      if (end !== null) exp = Math.min(exp, Math.floor(end.getTime() / 1000));
    return offlineToken(await this.signing.keyOf(project), {
      project_id: project.id,
      license_id: grant.license.id,
      key_sha256: grant.keySha256,
      domain: grant.domain,
      has_paid: true,
      is_test_license: grant.license.is_test_license,
      ...(grant.plan ? { plan: grant.plan.code, entitlements: grant.plan.entitlements } : {}),
      iat,
      exp,
    });
  }
}
