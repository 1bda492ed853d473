import { growingLru } from '../common/cache/growing-lru.js';
import { PROJECT_LOCKED, type RefusalOptions } from '../common/http/errors.js';
import { andThen, type MaybePromise } from '../common/maybe-promise.js';
import { ipMatcher } from '../common/net/address-lists.js';
import { secondsToUtcMidnight } from '../common/time.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import type { Activations } from '../licenses/activations.js';
import {
  findRegistered,
  isSameOrSubdomain,
  localPlace,
  NO_DOMAIN,
  placeName,
  registrableDomain,
} from './calling-domain.js';
import type { RuntimeCall, RuntimeCaller } from './runtime-call.js';
import type { RuntimeEntry } from './runtime-lookup.service.js';
import type { UsageCounter } from './usage-counter.js';

/** A refusal: why (as the analytics count it), the status and message, and what it is filed under. */
export type Refused = RefusalOptions & { verdict: 'refused' };

/** An answer: paid or unpaid, by whose flag, for which host, counted under which registered domain. */
export interface Answered {
  verdict: 'paid' | 'unpaid';
  /** The call as read for this license: what the answer carries (include, the key for a token). */
  call: RuntimeCall;
  /** The grace of the flag that answered, when one is set. */
  graceUntil: Date | null;
  /** The host the answer is for, as an offline token names it; null when the project's flag answered. */
  host: string | null;
  /** The registered domain the call is counted against, when there is one. */
  domainId: number | null;
}

/** What the gate decided about one runtime call (docs/architecture.md#the-runtime-gate). */
export type Verdict = Answered | Refused;

/** A license that passed the license refusals: its project exists. */
export type Admitted = RuntimeEntry & { project: ProjectEntity };

/** What the calling domain's step found: the flag that answers, and what is counted. */
interface Place {
  hasPaid: boolean;
  graceUntil: Date | null;
  host: string | null;
  domainId: number | null;
}

export const DOMAIN_NOT_REGISTERED = 'Domain is not registered under this project.';
export const PINNED_CHECK_PROJECT = 'This license is pinned to a domain: send the calling domain.';
export const PAYLOADS_NEED_DOMAIN =
  'This license may not receive payloads for a project-level check: send the calling domain.';

/** A refusal filed under the license's project, its redirect_url in `data` (docs/decisions.md#runtime-checks). */
function refuse(
  project: ProjectEntity | null,
  reason: Refused['reason'],
  status: number,
  message: string,
  domainId: number | null = null,
): Refused {
  const redirectUrl = project?.default_redirect_url ?? null;
  return {
    verdict: 'refused',
    reason,
    status,
    message,
    redirectUrl,
    projectId: project?.id ?? null,
    domainId,
  };
}

const plural = (n: number | null, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The runtime check of one license, as a value: the rules in their order
 * (docs/decisions.md#runtime-checks), top to bottom (docs/architecture.md#the-runtime-gate). Nothing
 * here throws a refusal, counts or writes an answer; RuntimeAnswers turns the verdict into one. Each
 * step answers at once when what it needs is in memory and a promise only when it must wait
 * (common/maybe-promise.ts), so a warm license is decided without a promise.
 */
export class RuntimeGate {
  /** allowed_ips lists, each parsed once into a matcher. */
  private readonly matchers = growingLru<string, (ip: string) => boolean>(10_000);

  constructor(
    private readonly usage: Pick<UsageCounter, 'takeUsage'>,
    private readonly activations: Pick<Activations, 'activate'>,
  ) {}

  /**
   * The whole check. `read` reads what the call asks, once the license is known: allow_configs says
   * whether the body's `config` may steer it, and a malformed `action` or `include` is a 422 it throws
   * (a request that cannot be read, not a decision about the license).
   */
  check(
    entry: RuntimeEntry,
    read: (allowConfigs: boolean) => RuntimeCall,
    now: number,
  ): MaybePromise<Verdict> {
    return (
      this.license(entry, now) ?? this.checkCall(entry as Admitted, read(entry.license.allow_configs), now)
    );
  }

  /** The license refusals: revoked (or its grace ended), expired, its project deleted, inactive or locked. */
  license({ license, project, redirectUrl }: RuntimeEntry, now: number): Refused | null {
    const lapse = licenseLapse(license, now);
    if (lapse === 'revoked') return refuse(project, 'revoked', 403, 'This license has been revoked.');
    if (lapse === 'expired') return refuse(project, 'expired', 403, 'This license has expired.');
    // A deleted project's analytics are shown to no one: not filed under it.
    if (!project)
      return {
        verdict: 'refused',
        reason: 'project_inactive',
        status: 403,
        message: 'The project of this license no longer exists.',
        redirectUrl,
        projectId: null,
        domainId: null,
      };
    if (!project.is_active) return refuse(project, 'project_inactive', 403, 'Project is inactive.');
    if (project.locked_at) return refuse(project, 'project_locked', 403, PROJECT_LOCKED);
    return null;
  }

  /** allowed_ips, then allowed_countries: the places a license may be used from, on every runtime route. */
  place({ license, project }: Admitted, caller: RuntimeCaller): Refused | null {
    if (license.allowed_ips && !this.ipAllowed(license.allowed_ips, caller.address))
      return refuse(project, 'ip', 403, 'Your IP address is not allowed to use this license.');
    if (license.allowed_countries) {
      const country = caller.country?.trim().toUpperCase();
      if (!country || !license.allowed_countries.split(',').includes(country))
        return refuse(
          project,
          'country',
          403,
          'Requests from your country are not allowed for this license.',
        );
    }
    return null;
  }

  /** The rules after the license refusals, on the call as read for this license (RuntimeAnswers.checkLicense). */
  checkCall(entry: Admitted, call: RuntimeCall, now: number): MaybePromise<Verdict> {
    const { license, project } = entry;
    const placeRefused = this.place(entry, call);
    if (placeRefused) return placeRefused;
    // check_project answers the project's flag; a pinned license may only ask about its domain.
    const projectLevel = call.action === 'check_project';
    if (projectLevel && license.domain_id !== null)
      return refuse(project, 'domain_missing', 403, PINNED_CHECK_PROJECT);
    // check_project changes which flag answers, never who may ask or from where (docs/security.md):
    // a domain sent, even one naming no host, is checked.
    if (projectLevel && call.noDomain === NO_DOMAIN) {
      if ((call.include?.injectables || call.include?.token) && !license.allow_configs)
        return refuse(project, 'domain_missing', 403, PAYLOADS_NEED_DOMAIN);
      return this.daily(entry, call, null, now);
    }
    return andThen(this.domain(entry, call), (place) =>
      place.verdict === 'refused' ? place : this.daily(entry, call, place, now),
    );
  }

  /**
   * The calling domain (docs/decisions.md#runtime-checks): a test license's local host, the pin, or a
   * registered domain (or a subdomain of one); then max_domains and max_subdomains_per_domain, the
   * activation recorded. On success the flag that answers, the host and the domain counted against.
   */
  private domain(entry: Admitted, call: RuntimeCall): MaybePromise<Refused | (Place & { verdict: 'place' })> {
    const { license, project } = entry;
    const calling = call.domain;
    const ownFlag = license.billing === 'license';
    let place: Place;
    let counted: { domain: string; host: string } | null;
    if (license.is_test_license && calling.local) {
      // A local host counts as a place of its own: a test license is bounded by its limits too; one
      // billed on its own answers its own flag there (answer()) and takes no slot.
      place = {
        hasPaid: project.has_paid,
        graceUntil: project.grace_until,
        host: calling.host,
        domainId: null,
      };
      counted = ownFlag ? null : localPlace(calling.host ?? 'localhost'); // 127.0.0.1 and ::1 are localhost
    } else if (license.domain_id !== null) {
      const pinned = entry.pinned;
      if (!pinned)
        return refuse(
          project,
          'domain_unregistered',
          403,
          'The domain this license is pinned to no longer exists.',
        );
      // Something sent that names no host at all is refused as for any license; an IP literal is a
      // place, and not the pinned domain.
      if (!calling.host && call.noDomain !== NO_DOMAIN && !calling.ip)
        return refuse(project, 'domain_missing', 400, call.noDomain as string);
      // One carrying its own payment answers only a call from its domain: it is used from anywhere.
      if (ownFlag && !calling.host && !calling.ip)
        return refuse(project, 'domain_missing', 400, call.noDomain as string);
      if (calling.ip || (calling.host && !isSameOrSubdomain(calling.host, pinned.domain)))
        return refuse(project, 'domain_unregistered', 403, 'This license is pinned to another domain.');
      if (!pinned.is_active)
        return refuse(
          project,
          'domain_unregistered',
          403,
          'The domain this license is pinned to is inactive.',
        );
      // A license billed on its own answers its own flag whatever the pin's (answer()).
      place = {
        hasPaid: pinned.has_paid,
        graceUntil: pinned.grace_until,
        host: calling.host ?? pinned.domain,
        domainId: pinned.id,
      };
      counted = {
        domain: pinned.domain,
        host: calling.host && calling.host !== pinned.domain ? calling.host : '',
      };
    } else if (ownFlag) {
      // Used from anywhere: the first call from a host activates it, counted under its registrable
      // domain (docs/api.md#licenses-that-carry-their-own-payment).
      const name = placeName(calling);
      if (name === null) return refuse(project, 'domain_missing', 400, call.noDomain as string);
      const domain = registrableDomain(name);
      place = { hasPaid: license.has_paid, graceUntil: license.grace_until, host: name, domainId: null };
      counted = { domain, host: name === domain ? '' : name };
    } else {
      if (!calling.host) return refuse(project, 'domain_missing', 400, call.noDomain as string);
      const registered = findRegistered(entry.domains, calling.host);
      if (!registered) return refuse(project, 'domain_unregistered', 403, DOMAIN_NOT_REGISTERED);
      place = {
        hasPaid: registered.has_paid,
        graceUntil: registered.grace_until,
        host: calling.host,
        domainId: registered.id,
      };
      counted = { domain: registered.domain, host: calling.host === registered.domain ? '' : calling.host };
    }
    if (counted === null) return { verdict: 'place' as const, ...place };
    const slot = counted;
    return andThen(this.activations.activate(entry, slot.domain, slot.host), (outcome) => {
      if (outcome === 'max_domains')
        return refuse(
          project,
          'domain_limit',
          403,
          `This license has reached its limit of ${plural(license.max_domains, 'domain')}.`,
          place.domainId,
        );
      if (outcome === 'max_subdomains')
        return refuse(
          project,
          'domain_limit',
          403,
          `This license has reached its limit of ${plural(license.max_subdomains_per_domain, 'subdomain')} for ${slot.domain}.`,
          place.domainId,
        );
      return { verdict: 'place' as const, ...place };
    });
  }

  /**
   * max_usage_per_day (past it: 429 until midnight UTC), then the answer. The answer is decided first
   * (it reads only flags in memory) so that the use taken counts whether it was paid, in the same
   * statement or Map increment.
   */
  private daily(entry: Admitted, call: RuntimeCall, place: Place | null, now: number): MaybePromise<Verdict> {
    const { license, project } = entry;
    const answered = this.answer(entry, call, place, now);
    return andThen(this.usage.takeUsage(license, project, answered.verdict === 'paid'), (usage): Verdict => {
      if (usage === 'refused')
        return {
          verdict: 'refused',
          reason: 'usage_limit',
          status: 429,
          message: `This license has reached its daily limit of ${license.max_usage_per_day} checks; it resets at midnight UTC.`,
          headers: { 'Retry-After': String(secondsToUtcMidnight(now)) },
          projectId: project.id,
          domainId: place?.domainId ?? null,
        };
      return answered;
    });
  }

  /**
   * Paid or unpaid: a `billing: license` license's own flag; else the project's flag and grace with
   * check_project (or when no domain was checked), else the calling domain's (docs/payments.md). A
   * grace that has passed is unpaid.
   */
  private answer(
    { license, project }: Admitted,
    call: RuntimeCall,
    place: Place | null,
    now: number,
  ): Answered {
    // A `billing: license` license answers its own flag, with or without check_project.
    if (license.billing === 'license') {
      const paid = paidNow(license.has_paid, license.grace_until, now);
      return {
        verdict: paid ? 'paid' : 'unpaid',
        call,
        graceUntil: license.grace_until,
        host: place === null || call.action === 'check_project' ? null : place.host,
        domainId: place?.domainId ?? null,
      };
    }
    const answering = place === null || call.action === 'check_project' ? null : place;
    const graceUntil = answering ? answering.graceUntil : project.grace_until;
    const paid = paidNow(answering ? answering.hasPaid : project.has_paid, graceUntil, now);
    return {
      verdict: paid ? 'paid' : 'unpaid',
      call,
      graceUntil,
      host: answering ? answering.host : null,
      domainId: place?.domainId ?? null,
    };
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

/**
 * Whether the license itself has lapsed: revoked — by hand, or a license from an order whose payment
 * grace has ended, before the scheduler writes it (docs/payments.md; a `billing: license` license's
 * grace is that of its own flag: once it ends it answers unpaid, never revoked) — or expired. The
 * gate's first refusals, and what the portal shows.
 */
export function licenseLapse(
  license: Pick<LicenseEntity, 'revoked_at' | 'grace_until' | 'billing' | 'expires_at'>,
  now: number,
): 'revoked' | 'expired' | null {
  if (
    license.revoked_at ||
    (license.grace_until && license.billing !== 'license' && license.grace_until.getTime() <= now)
  )
    return 'revoked';
  // expires_at is read against the wall clock, as it always was: the injected Clock moves the
  // payment graces and the counts, not the expiries set by date.
  if (license.expires_at && license.expires_at.getTime() <= Date.now()) return 'expired';
  return null;
}

/**
 * Whether a flag answers paid now: a grace that has passed is unpaid before the scheduler writes it
 * (docs/payments.md). Has-paid, its payloads and the stream all ask this.
 */
export function paidNow(hasPaid: boolean, graceUntil: Date | null, now: number): boolean {
  return hasPaid && (graceUntil === null || graceUntil.getTime() > now);
}
