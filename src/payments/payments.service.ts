import { Injectable } from '@nestjs/common';
import { growingLru } from '../common/cache/growing-lru.js';
import { runtimeRefusal } from './license-key.guard.js';
import type { RuntimeEntry } from './runtime-lookup.service.js';
import { ApiError, RuntimeRefusal } from '../common/http/errors.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import { ipMatcher } from '../common/net/address-lists.js';
import type { SentLicenseKey } from '../common/http/license-key.js';
import type { DomainEntity } from '../domains/domain.entity.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { findRegistered, isSameOrSubdomain, localPlace, NO_DOMAIN } from './calling-domain.js';
import { Activations } from './activations.js';
import { UsageCounter } from './usage-counter.js';
import { countAnswer, runtimeChecks } from '../metrics/metrics.js';
import { InjectablesService } from '../injectables/injectables.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { AnswerSigning } from './answer-signing.js';
import { offlineToken } from './offline-token.js';
import { Clock, secondsToUtcMidnight } from '../common/time.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { type MaybePromise, then } from '../common/maybe-promise.js';
import type { Include, RuntimeCall, RuntimeCaller } from './runtime-call.js';

export interface HasPaidResult {
  has_paid: boolean;
  injectables?: unknown[];
  token?: string;
  redirect_url?: string | null;
  is_test_license?: boolean;
  grace_until?: string;
}

/** What the calling domain's checks found: its has_paid and grace, the host answered for, the domain counted against. */
interface Place {
  hasPaid: boolean;
  graceUntil: Date | null;
  evaluated: string | null;
  domainId: number | undefined;
}

/** A paid answer to a license: what its offline token says, when one is asked for. */
interface TokenGrant {
  license: LicenseEntity;
  keySha256: string;
  domain: string | null;
}

export { NO_DOMAIN } from './calling-domain.js';
export const DOMAIN_NOT_REGISTERED = 'Domain is not registered under this project.';
export const PINNED_CHECK_PROJECT = 'This license is pinned to a domain: send the calling domain.';
export const PAYLOADS_NEED_DOMAIN =
  'This license may not receive payloads for a project-level check: send the calling domain.';

/** The runtime payment checks, in the order of docs/decisions.md#runtime-checks. */
@Injectable()
export class PaymentsService {
  /** allowed_ips lists, each parsed once into a matcher. */
  private readonly matchers = growingLru<string, (ip: string) => boolean>(10_000);

  constructor(
    private readonly usage: UsageCounter,
    private readonly activations: Activations,
    private readonly injectables: InjectablesService,
    private readonly signing: AnswerSigning,
    private readonly answers: RuntimeAnswerCounting,
    private readonly clock: Clock,
  ) {}

  /**
   * The runtime check of a license that passed LicenseKeyGuard: an answer at once when everything it
   * needs is in memory, a promise when a step must wait (common/maybe-promise.ts).
   */
  checkLicense(
    entry: RuntimeEntry & { project: ProjectEntity },
    call: RuntimeCall,
  ): MaybePromise<HasPaidResult> {
    this.assertPlaceAllowed(entry, call);
    // check_project answers the project's flag; a pinned license may only ask about its domain.
    if (call.action === 'check_project' && entry.license.domain_id !== null)
      throw runtimeRefusal('domain_missing', 403, PINNED_CHECK_PROJECT, entry.project);
    // check_project changes which flag answers, never who may ask or from where (docs/security.md):
    // a domain sent, even one naming no host, is checked.
    if (call.action !== 'check_project' || call.noDomain !== NO_DOMAIN) {
      return then(this.checkDomain(entry, call), (place) => this.answerLicense(entry, call, place));
    }
    return this.answerLicense(entry, call, null);
  }

  /** After the place checks (`place`: null when no domain was checked): the daily usage, then the answer. */
  private answerLicense(
    entry: RuntimeEntry & { project: ProjectEntity },
    call: RuntimeCall,
    place: Place | null,
  ): MaybePromise<HasPaidResult> {
    const { license, project } = entry;
    const projectLevel = call.action === 'check_project';
    if (
      projectLevel &&
      (call.include?.injectables || call.include?.token) &&
      place === null &&
      !license.allow_configs
    ) {
      throw runtimeRefusal('domain_missing', 403, PAYLOADS_NEED_DOMAIN, project);
    }
    // The project's flag and grace with check_project, else the domain's (docs/payments.md).
    const answering = place === null || projectLevel ? null : place;
    /** The registered domain the call is counted against (analytics), when there is one. */
    const domainId = place?.domainId;
    return then(this.usage.takeUsage(license, project), (usage) => {
      if (usage === 'refused') {
        runtimeChecks.inc({ outcome: 'refused_429' });
        const retry = secondsToUtcMidnight(this.clock.nowMs());
        throw new RuntimeRefusal(
          'usage_limit',
          429,
          `This license has reached its daily limit of ${license.max_usage_per_day} checks; it resets at midnight UTC.`,
          null,
          { 'Retry-After': String(retry) },
          project.id,
          domainId,
        );
      }
      const graceUntil = answering ? answering.graceUntil : project.grace_until;
      const hasPaid = this.paidNow(answering ? answering.hasPaid : project.has_paid, graceUntil);
      countAnswer(hasPaid);
      this.answers.answered(call, project.id, hasPaid, domainId ?? null);
      /** The host the answer is for, as an offline token names it (null for check_project). */
      const grant = call.include?.token
        ? {
            license,
            keySha256: (call.key as SentLicenseKey).hash,
            domain: answering ? answering.evaluated : null,
          }
        : undefined;
      return then(this.answer(project, hasPaid, graceUntil, call.include, grant), (result) => {
        result.is_test_license = license.is_test_license;
        return result;
      });
    });
  }

  /**
   * The calling domain's checks (docs/decisions.md#runtime-checks): registered or a subdomain of one, the pin,
   * test-license hosts, max_domains and max_subdomains_per_domain, the activation recorded. Refuses as
   * the check does; otherwise the domain's has_paid and grace, the host the answer is for, and the
   * registered domain the call is counted against.
   */
  private checkDomain(
    entry: RuntimeEntry & { project: ProjectEntity },
    call: RuntimeCall,
  ): MaybePromise<Place> {
    const { license, project } = entry;
    const calling = call.domain;
    let hasPaid: boolean;
    let graceUntil: Date | null;
    let evaluated = calling.host;
    let domainId: number | undefined;
    let counted: { domain: string; host: string };
    if (license.is_test_license && calling.local) {
      // A local host counts as a place of its own: a test license is bounded by its limits too.
      hasPaid = project.has_paid;
      graceUntil = project.grace_until;
      counted = localPlace(calling.host ?? 'localhost'); // 127.0.0.1 and ::1 are localhost
    } else if (license.domain_id !== null) {
      const pinned = entry.pinned;
      if (!pinned)
        throw runtimeRefusal(
          'domain_unregistered',
          403,
          'The domain this license is pinned to no longer exists.',
          project,
        );
      // Something sent that names no host at all is refused as for any license; an IP literal is a
      // place, and not the pinned domain.
      if (!calling.host && call.noDomain !== NO_DOMAIN && !calling.ip)
        throw runtimeRefusal('domain_missing', 400, call.noDomain as string, project);
      if (calling.ip || (calling.host && !isSameOrSubdomain(calling.host, pinned.domain))) {
        throw runtimeRefusal(
          'domain_unregistered',
          403,
          'This license is pinned to another domain.',
          project,
        );
      }
      if (!pinned.is_active)
        throw runtimeRefusal(
          'domain_unregistered',
          403,
          'The domain this license is pinned to is inactive.',
          project,
        );
      hasPaid = pinned.has_paid;
      graceUntil = pinned.grace_until;
      domainId = pinned.id;
      evaluated = calling.host ?? pinned.domain;
      counted = {
        domain: pinned.domain,
        host: calling.host && calling.host !== pinned.domain ? calling.host : '',
      };
    } else {
      if (!calling.host) throw runtimeRefusal('domain_missing', 400, call.noDomain as string, project);
      const registered = findRegistered(entry.domains, calling.host);
      if (!registered) throw runtimeRefusal('domain_unregistered', 403, DOMAIN_NOT_REGISTERED, project);
      hasPaid = registered.has_paid;
      graceUntil = registered.grace_until;
      domainId = registered.id;
      counted = { domain: registered.domain, host: calling.host === registered.domain ? '' : calling.host };
    }
    return then(this.activations.activate(entry, counted.domain, counted.host), (outcome) => {
      if (outcome === 'max_domains') {
        throw runtimeRefusal(
          'domain_limit',
          403,
          `This license has reached its limit of ${license.max_domains} domain${license.max_domains === 1 ? '' : 's'}.`,
          project,
          { domainId },
        );
      }
      if (outcome === 'max_subdomains') {
        throw runtimeRefusal(
          'domain_limit',
          403,
          `This license has reached its limit of ${license.max_subdomains_per_domain} subdomain${license.max_subdomains_per_domain === 1 ? '' : 's'} for ${counted.domain}.`,
          project,
          { domainId },
        );
      }
      return { hasPaid, graceUntil, evaluated, domainId };
    });
  }

  /** allowed_ips, then allowed_countries: 403 saying which refused the caller. */
  assertPlaceAllowed(
    { license, project }: RuntimeEntry & { project: ProjectEntity },
    call: RuntimeCaller,
  ): void {
    if (license.allowed_ips && !this.ipAllowed(license.allowed_ips, call.address)) {
      throw runtimeRefusal('ip', 403, 'Your IP address is not allowed to use this license.', project);
    }
    if (license.allowed_countries) {
      const country = call.country?.trim().toUpperCase();
      if (!country || !license.allowed_countries.split(',').includes(country)) {
        throw runtimeRefusal(
          'country',
          403,
          'Requests from your country are not allowed for this license.',
          project,
        );
      }
    }
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
   * Whether a flag answers paid now: a grace that has passed is unpaid before the scheduler writes
   * it (docs/payments.md). Has-paid, its payloads and the stream all ask this.
   */
  paidNow(hasPaid: boolean, graceUntil: Date | null): boolean {
    return hasPaid && (graceUntil === null || graceUntil.getTime() > this.clock.nowMs());
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

  /** An offline token for a paid answer, valid for the project's offline_grace_hours. */
  private async token(project: ProjectEntity, grant: TokenGrant): Promise<string> {
    const iat = Math.floor(Date.now() / 1000);
    return offlineToken(await this.signing.keyOf(project), {
      project_id: project.id,
      license_id: grant.license.id,
      key_sha256: grant.keySha256,
      domain: grant.domain,
      has_paid: true,
      is_test_license: grant.license.is_test_license,
      iat,
      exp: iat + project.offline_grace_hours * 3600,
    });
  }

  private ipAllowed(list: string, ip: string): boolean {
    let matcher = this.matchers.get(list);
    if (!matcher) {
      matcher = ipMatcher(list);
      this.matchers.set(list, matcher);
    }
    return matcher(ip);
  }
}
