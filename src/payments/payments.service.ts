import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { Request } from 'express';
import { runtimeRefusal } from './license-key.guard.js';
import type { RuntimeEntry } from './runtime-lookup.service.js';
import { ApiError, fieldError } from '../common/http/errors.js';
import { ipMatcher } from '../common/net/address-lists.js';
import { AppConfig } from '../config/app-config.js';
import type { DomainEntity } from '../domains/domain.entity.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import {
  CallingDomain,
  callingDomain,
  findRegistered,
  isSameOrSubdomain,
  localPlace,
  NO_DOMAIN,
  noDomainMessage,
} from './calling-domain.js';
import { CountersService } from './counters.service.js';
import { countAnswer, runtimeChecks } from '../metrics/metrics.js';
import { InjectablesService } from '../injectables/injectables.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { licenseKey, SentLicenseKey } from '../common/http/license-key.js';
import { AnswerSigning } from './answer-signing.js';
import { offlineToken } from './offline-token.js';

/** What `include` asked for: `injectables`, `token`, or both, comma-separated. */
export interface Include {
  injectables: boolean;
  token: boolean;
}

export interface CheckOptions {
  action?: string;
  include?: Include;
  domain?: unknown;
}

export interface HasPaidResult {
  has_paid: boolean;
  injectables?: unknown[];
  token?: string;
  redirect_url?: string | null;
  is_test_license?: boolean;
}

/** A paid answer to a license: what its offline token says, when one is asked for. */
interface TokenGrant {
  license: LicenseEntity;
  keySha256: string;
  domain: string | null;
}

export { NO_DOMAIN } from './calling-domain.js';
export const ACTION_INVALID = 'The selected action is invalid: the only action is check_project.';
export const DOMAIN_NOT_REGISTERED = 'Domain is not registered under this project.';
export const PAYLOADS_NEED_DOMAIN =
  'This license may not receive payloads for a project-level check: send the calling domain.';

/** Seconds until the next midnight UTC, when daily allowances start again. */
export function secondsToUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

export const INVALID_INCLUDE =
  'The selected include is invalid: include takes injectables, token, or both comma-separated.';

/** `include`: a comma-separated list of `injectables` and `token`; anything else is a 422. */
function parseInclude(value: unknown): Include | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw fieldError('include', INVALID_INCLUDE);
  if (value === 'injectables') return ONLY_INJECTABLES;
  const include: Include = { injectables: false, token: false };
  for (const item of value.split(',')) {
    if (item !== 'injectables' && item !== 'token') throw fieldError('include', INVALID_INCLUDE);
    include[item] = true;
  }
  return include;
}
const ONLY_INJECTABLES: Include = Object.freeze({ injectables: true, token: false });

/** `action` and `include` of the runtime checks; anything else is a 422 naming the parameter. */
export function parseCheckOptions(source: Record<string, unknown>): CheckOptions {
  const action = source.action;
  if (action !== undefined && action !== 'check_project') throw fieldError('action', ACTION_INVALID);
  return { action, include: parseInclude(source.include), domain: source.domain };
}

/** The runtime payment checks, in the order of docs/decisions.md#runtime-checks. */
@Injectable()
export class PaymentsService {
  private readonly countryHeader: string;
  /** allowed_ips lists, each parsed once into a matcher. */
  private readonly matchers = new LRUCache<string, (ip: string) => boolean>({ max: 10_000 });

  constructor(
    private readonly counters: CountersService,
    private readonly injectables: InjectablesService,
    private readonly signing: AnswerSigning,
    config: AppConfig,
  ) {
    this.countryHeader = config.env.COUNTRY_HEADER.toLowerCase();
  }

  /** The runtime check of a license that passed LicenseKeyGuard. */
  async checkLicense(
    entry: RuntimeEntry & { project: ProjectEntity },
    req: Request,
    options: CheckOptions,
  ): Promise<HasPaidResult> {
    const { license, project } = entry;
    /** The host the answer is for, as an offline token names it (null for check_project). */
    let evaluated: string | null = null;
    this.assertPlaceAllowed(entry, req);

    // check_project changes which flag answers, never who may ask or from where (docs/security.md).
    const projectLevel = options.action === 'check_project';
    const calling = callingDomain(req, options.domain);
    let hasPaid = project.has_paid;
    let domainPassed = false;
    if (!projectLevel || calling.host !== null || noDomainMessage(req, options.domain) !== NO_DOMAIN) {
      const domainPaid = await this.checkDomain(entry, req, options, calling);
      domainPassed = true;
      if (projectLevel) {
        evaluated = null;
      } else {
        hasPaid = domainPaid.hasPaid;
        evaluated = domainPaid.evaluated;
      }
    }
    if (
      projectLevel &&
      (options.include?.injectables || options.include?.token) &&
      !domainPassed &&
      !license.allow_configs
    ) {
      throw runtimeRefusal(403, PAYLOADS_NEED_DOMAIN, project);
    }

    if ((await this.counters.takeUsage(license, project)) === 'refused') {
      runtimeChecks.inc({ outcome: 'refused_429' });
      const retry = secondsToUtcMidnight();
      throw new ApiError(
        429,
        `This license has reached its daily limit of ${license.max_usage_per_day} checks; it resets at midnight UTC.`,
        null,
        null,
        {
          'Retry-After': String(retry),
        },
      );
    }
    countAnswer(hasPaid);
    const grant = options.include?.token
      ? { license, keySha256: (licenseKey(req) as SentLicenseKey).hash, domain: evaluated }
      : undefined;
    return {
      ...(await this.answer(project, hasPaid, options, grant)),
      is_test_license: license.is_test_license,
    };
  }

  /**
   * The calling domain's checks (docs/decisions.md#runtime-checks): registered or a subdomain of one, the pin,
   * test-license hosts, max_domains and max_subdomains_per_domain, the activation recorded. Refuses as
   * the check does; otherwise the domain's has_paid and the host the answer is for.
   */
  private async checkDomain(
    entry: RuntimeEntry & { project: ProjectEntity },
    req: Request,
    options: CheckOptions,
    calling: CallingDomain,
  ): Promise<{ hasPaid: boolean; evaluated: string | null }> {
    const { license, project } = entry;
    let hasPaid: boolean;
    let evaluated = calling.host;
    let counted: { domain: string; host: string };
    if (license.is_test_license && calling.local) {
      // A local host counts as a place of its own: a test license is bounded by its limits too.
      hasPaid = project.has_paid;
      counted = localPlace(calling.host ?? 'localhost'); // 127.0.0.1 and ::1 are localhost
    } else if (license.domain_id !== null) {
      const pinned = entry.pinned;
      if (!pinned)
        throw runtimeRefusal(403, 'The domain this license is pinned to no longer exists.', project);
      if (calling.host && !isSameOrSubdomain(calling.host, pinned.domain)) {
        throw runtimeRefusal(403, 'This license is pinned to another domain.', project);
      }
      if (!pinned.is_active)
        throw runtimeRefusal(403, 'The domain this license is pinned to is inactive.', project);
      hasPaid = pinned.has_paid;
      evaluated = calling.host ?? pinned.domain;
      counted = {
        domain: pinned.domain,
        host: calling.host && calling.host !== pinned.domain ? calling.host : '',
      };
    } else {
      if (!calling.host) throw runtimeRefusal(400, noDomainMessage(req, options.domain), project);
      const registered = findRegistered(entry.domains, calling.host);
      if (!registered) throw runtimeRefusal(403, DOMAIN_NOT_REGISTERED, project);
      hasPaid = registered.has_paid;
      counted = { domain: registered.domain, host: calling.host === registered.domain ? '' : calling.host };
    }
    const outcome = await this.counters.activate(entry, counted.domain, counted.host);
    if (outcome === 'max_domains') {
      throw runtimeRefusal(
        403,
        `This license has reached its limit of ${license.max_domains} domain${license.max_domains === 1 ? '' : 's'}.`,
        project,
      );
    }
    if (outcome === 'max_subdomains') {
      throw runtimeRefusal(
        403,
        `This license has reached its limit of ${license.max_subdomains_per_domain} subdomain${license.max_subdomains_per_domain === 1 ? '' : 's'} for ${counted.domain}.`,
        project,
      );
    }
    return { hasPaid, evaluated };
  }

  /** allowed_ips, then allowed_countries: 403 saying which refused the caller. */
  assertPlaceAllowed({ license, project }: RuntimeEntry & { project: ProjectEntity }, req: Request): void {
    if (license.allowed_ips && !this.ipAllowed(license.allowed_ips, req.ip ?? '')) {
      throw runtimeRefusal(403, 'Your IP address is not allowed to use this license.', project);
    }
    if (license.allowed_countries) {
      const sent = req.headers[this.countryHeader];
      const country = (Array.isArray(sent) ? sent[0] : sent)?.trim().toUpperCase();
      if (!country || !license.allowed_countries.split(',').includes(country)) {
        throw runtimeRefusal(403, 'Requests from your country are not allowed for this license.', project);
      }
    }
  }

  /** The check of a project read with an API key: the same domain rules, no license limits. */
  async checkProject(
    project: ProjectEntity,
    domains: Map<string, DomainEntity>,
    req: Request,
    options: CheckOptions,
  ): Promise<HasPaidResult> {
    if (options.action === 'check_project') return this.answer(project, project.has_paid, options);
    const calling = callingDomain(req, options.domain);
    if (!calling.host) throw new ApiError(400, noDomainMessage(req, options.domain));
    const registered = findRegistered(domains, calling.host);
    if (!registered) throw runtimeRefusal(403, DOMAIN_NOT_REGISTERED, project);
    return this.answer(project, registered.has_paid, options);
  }

  /** {has_paid, redirect_url?, injectables?, token?}. */
  private async answer(
    project: ProjectEntity,
    hasPaid: boolean,
    options: CheckOptions,
    grant?: TokenGrant,
  ): Promise<HasPaidResult> {
    if (!hasPaid) return { has_paid: false, redirect_url: project.default_redirect_url };
    if (options.include === undefined) return { has_paid: true };
    const result: HasPaidResult = { has_paid: true };
    if (options.include.injectables) result.injectables = await this.injectables.paidOnly(project.id);
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
