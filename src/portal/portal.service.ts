import {
  HttpStatus,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { In, LessThanOrEqual, Repository } from 'typeorm';
import { type AuditContext, inAuditContext } from '../audit/audit-context.js';
import { deriveKey, hmac, safeEqual, sha256Hex } from '../common/crypto/crypto.js';
import { ApiError, fieldError, notFound } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { JOBS } from '../common/jobs.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { Clock, utcDaySpan, wholeSecond } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { CustomerEntity } from '../customers/customer.entity.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { AnswerSigning } from '../gate/answer-signing.js';
import { offlineToken } from '../gate/offline-token.js';
import { licenseLapse, paidNow } from '../gate/runtime-gate.js';
import { LicensesService } from '../licenses/licenses.service.js';
import { Meters } from '../plans/meters.js';
import { ActivationsService } from '../licenses/activations.service.js';
import { LicenseActivationEntity } from '../licenses/license-usage.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { PortalLinkEntity, PortalSessionEntity } from './portal.entity.js';

/** A link opens the portal within this long of its making; the session it opens lasts PORTAL_SESSION_MS. */
export const PORTAL_LINK_MS = 15 * 60_000;
export const PORTAL_SESSION_MS = 3_600_000;
/** The most licenses one portal shows, and activations per license (the most recently seen). */
const MAX_LICENSES = 100;
const MAX_ACTIVATIONS = 100;
/** 32 random bytes, base64url: the only shape of token the portal makes. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export const LINK_UNKNOWN =
  'This portal link is not valid. Open the portal again from the app you bought from: it makes a new link.';
export const LINK_EXPIRED =
  'This portal link has expired (links work for 15 minutes). Open the portal again from the app you bought from.';
export const LINK_USED =
  'This portal link has already been used (each link opens the portal once). Open the portal again from the app you bought from.';
export const PORTAL_SESSION_ENDED =
  "This portal session has ended (sessions last an hour): open the portal again from the vendor's app.";
export const NOT_IN_PORTAL =
  "Not in a customer portal session: these routes take the portal's cookie only (not API keys or console sessions); open a portal link.";
export const NOT_A_PORTAL_CREDENTIAL =
  'This route is for a buyer in the customer portal: API keys and console sessions open nothing here (open a portal link; see POST /api/v1/project/{project}/portal-sessions).';
export const TOKEN_NOT_PAID = 'This license is not paid: an offline token is issued only for a paid license.';
export const PORTAL_CSRF_REFUSED =
  'This request was made without a valid X-CSRF-Token header: send the csrf_token of GET /api/v1/portal/session.';
export const CUSTOMER_OR_LICENSE =
  'Send exactly one of customer_id and license_id: the portal shows a customer (all their licenses of the project) or one license.';
export const NOT_A_CUSTOMER_OF_PROJECT = 'The selected customer_id is not a customer of this project.';
export const NOT_A_LICENSE_OF_PROJECT = 'The selected license_id is not a license of this project.';
export const RETURN_URL_HTTPS =
  'The return_url must be an https URL with a host (any scheme with a host outside production).';
export const RETURN_URL_INVALID = 'The return_url must be an absolute URL with a host.';
export const PROJECT_LOCKED_PORTAL =
  "The vendor's project is locked: nothing can be changed here until the vendor unlocks it.";
export const TOKEN_OFF =
  'Offline tokens are turned off for this product (its offline_grace_hours is 0): ask the vendor.';

/** A link refused: its status (404 unknown, 410 expired or used) and what to tell the buyer. */
export class PortalLinkRefused extends ApiError {}

/** What the portal was opened on, from the session cookie. */
export interface PortalPrincipal {
  session: PortalSessionEntity;
  project: ProjectEntity;
  customer: CustomerEntity | null;
}

export type PaymentState = 'paid' | 'grace' | 'unpaid';
export type LicenseStatus = 'active' | 'revoked' | 'expired';

/** A license as its buyer sees it in the portal (docs/portal.md). */
export interface PortalLicense {
  id: number;
  key: string;
  title: string;
  status: LicenseStatus;
  revoked_at: string | null;
  expires_at: string | null;
  is_test_license: boolean;
  payment: { state: PaymentState; grace_until: string | null };
  plan: unknown;
  entitlements: Record<string, unknown>;
  meters: Record<string, unknown> | null;
  max_domains: number | null;
  max_subdomains_per_domain: number | null;
  activations: LicenseActivationEntity[];
  activations_total: number;
  self_deactivations: { per_day: number; left_today: number; resets_at: string };
  offline_token: { available: boolean; reason: string | null };
  created_at: string | null;
}

export interface PortalSessionAnswer {
  customer: { id: number; email: string; name: string | null } | null;
  project: { id: number; name: string };
  licenses: PortalLicense[];
  csrf_token: string;
  return_url: string | null;
  expires_at: string | null;
}

/**
 * The customer portal (docs/portal.md): the vendor's server asks for a one-use link bound to a customer
 * or a license; the buyer's browser opens it (a POST, so that mail scanners that open links consume
 * nothing) and gets a portal session for an hour. Link and session are found by the SHA-256 of their
 * tokens; the CSRF token is an HMAC of the session's hash, stored nowhere. A session reaches the
 * licenses it was bound to, re-read on every request: nothing else of the project, nothing of another.
 */
@Injectable()
export class PortalService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Portal');
  private readonly csrfKey: Buffer;
  private readonly pruning = new PeriodicTask({
    ...JOBS.portalPruning,
    logger: this.logger,
    run: async () => {
      await this.prune();
    },
  });

  constructor(
    @InjectRepository(PortalLinkEntity) private readonly links: Repository<PortalLinkEntity>,
    @InjectRepository(PortalSessionEntity) private readonly sessions: Repository<PortalSessionEntity>,
    @InjectRepository(CustomerEntity) private readonly customers: Repository<CustomerEntity>,
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    @InjectRepository(ProjectEntity) private readonly projects: Repository<ProjectEntity>,
    @InjectRepository(DomainEntity) private readonly domains: Repository<DomainEntity>,
    @InjectRepository(LicenseActivationEntity)
    private readonly activationRows: Repository<LicenseActivationEntity>,
    private readonly activations: ActivationsService,
    private readonly licenseAnswers: LicensesService,
    private readonly meters: Meters,
    private readonly projectChanges: ProjectChanges,
    private readonly signing: AnswerSigning,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {
    this.csrfKey = deriveKey(config.appKey, 'portal-csrf');
  }

  onApplicationBootstrap(): void {
    this.pruning.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pruning.stop();
  }

  /** `__Host-lg_portal` (Secure, Path=/, no Domain) when the service is served over https, else `lg_portal`. */
  get cookieName(): string {
    return this.secure ? '__Host-lg_portal' : 'lg_portal';
  }

  get secure(): boolean {
    return this.config.publicUrl.startsWith('https:');
  }

  csrfToken(session: PortalSessionEntity): string {
    return hmac(this.csrfKey, session.token_hash).toString('base64url');
  }

  csrfMatches(session: PortalSessionEntity, sent: string | undefined): boolean {
    if (!sent || sent.length > 128) return false;
    return safeEqual(Buffer.from(this.csrfToken(session)), Buffer.from(sent));
  }

  /** Checks a return_url: https in production, any scheme with a host elsewhere; 422 on `return_url`. */
  checkReturnUrl(value: string): string {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw fieldError('return_url', RETURN_URL_INVALID);
    }
    if (!url.host) throw fieldError('return_url', RETURN_URL_INVALID);
    if (this.config.isProduction && url.protocol !== 'https:')
      throw fieldError('return_url', RETURN_URL_HTTPS);
    return value;
  }

  /**
   * A one-use link for a customer of the project (all their licenses) or one license of it, valid
   * PORTAL_LINK_MS; audited as portal_session.created. The token is answered once, stored hashed.
   */
  async createLink(
    project: ProjectEntity,
    body: { customer_id?: number; license_id?: number; return_url?: string },
  ): Promise<{ url: string; expires_at: string | null }> {
    const hasCustomer = body.customer_id !== undefined && body.customer_id !== null;
    const hasLicense = body.license_id !== undefined && body.license_id !== null;
    if (hasCustomer === hasLicense)
      throw fieldError(hasCustomer ? 'license_id' : 'customer_id', CUSTOMER_OR_LICENSE);
    const returnUrl = body.return_url === undefined ? null : this.checkReturnUrl(body.return_url);
    if (hasCustomer && !(await this.customers.existsBy({ id: body.customer_id, project_id: project.id })))
      throw fieldError('customer_id', NOT_A_CUSTOMER_OF_PROJECT);
    if (hasLicense && !(await this.licenses.existsBy({ id: body.license_id, project_id: project.id })))
      throw fieldError('license_id', NOT_A_LICENSE_OF_PROJECT);
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.nowMs();
    const expiresAt = wholeSecond(new Date(now + PORTAL_LINK_MS));
    const link = await this.projectChanges.run(project, async (manager) => {
      const inserted = await manager.insert(PortalLinkEntity, {
        token_hash: sha256Hex(token),
        project_id: project.id,
        customer_id: hasCustomer ? body.customer_id! : null,
        license_id: hasLicense ? body.license_id! : null,
        return_url: returnUrl,
        expires_at: expiresAt,
        used_at: null,
        created_at: wholeSecond(new Date(now)),
      });
      const id = inserted.identifiers[0].id as number;
      const after = {
        id,
        customer_id: hasCustomer ? body.customer_id! : null,
        license_id: hasLicense ? body.license_id! : null,
        return_url: returnUrl,
        expires_at: toIsoTimestamp(expiresAt),
      };
      return { result: after, audit: { action: 'portal_session.created', before: null, after } };
    });
    return { url: `${this.config.publicUrl}/portal/${token}`, expires_at: link.expires_at };
  }

  /** The link of a token, unused and unexpired, with its project; else the refusal to show (nothing consumed). */
  async inspectLink(token: string): Promise<{ link: PortalLinkEntity; project: ProjectEntity }> {
    const link = TOKEN_SHAPE.test(token)
      ? await this.links.findOneBy({ token_hash: sha256Hex(token) })
      : null;
    const project = link ? await this.projects.findOneBy({ id: link.project_id }) : null;
    if (!link || !project) throw new PortalLinkRefused(HttpStatus.NOT_FOUND, LINK_UNKNOWN);
    if (link.used_at) throw new PortalLinkRefused(HttpStatus.GONE, LINK_USED);
    if (link.expires_at.getTime() <= this.clock.nowMs())
      throw new PortalLinkRefused(HttpStatus.GONE, LINK_EXPIRED);
    return { link, project };
  }

  /**
   * Opens a link: one conditional update marks it used, so of two racing opens one wins and the other
   * is told the link was used; the session it opens is inserted in the same unit, audited as
   * portal_session.opened with the portal actor. Answers the session's cookie token.
   */
  async openLink(
    token: string,
    request: Omit<AuditContext, 'actor'>,
  ): Promise<{ token: string; session: PortalSessionEntity }> {
    const { link, project } = await this.inspectLink(token);
    const customerId =
      link.customer_id ??
      (link.license_id
        ? ((await this.licenses.findOneBy({ id: link.license_id, project_id: project.id }))?.customer_id ??
          null)
        : null);
    const context: AuditContext = { ...request, actor: portalActor(customerId) };
    const sessionToken = randomBytes(32).toString('base64url');
    const now = this.clock.nowMs();
    const session = await inAuditContext(context, () =>
      this.projectChanges.run(
        project,
        async (manager) => {
          const taken = await manager
            .createQueryBuilder()
            .update(PortalLinkEntity)
            .set({ used_at: wholeSecond(new Date(now)) })
            .where('id = :id AND used_at IS NULL AND expires_at > :now', {
              id: link.id,
              now: new Date(now),
            })
            .execute();
          if (!taken.affected) throw new PortalLinkRefused(HttpStatus.GONE, LINK_USED);
          const row = {
            token_hash: sha256Hex(sessionToken),
            project_id: link.project_id,
            customer_id: link.customer_id,
            license_id: link.license_id,
            return_url: link.return_url,
            expires_at: wholeSecond(new Date(now + PORTAL_SESSION_MS)),
            created_at: wholeSecond(new Date(now)),
          };
          const inserted = await manager.insert(PortalSessionEntity, row);
          const saved = manager.create(PortalSessionEntity, {
            ...row,
            id: inserted.identifiers[0].id as number,
          });
          return {
            result: saved,
            audit: {
              action: 'portal_session.opened',
              resource_id: link.id,
              before: null,
              after: null,
              also: { used_at: [null, toIsoTimestamp(new Date(now))] },
            },
          };
        },
        { invalidates: false },
      ),
    );
    return { token: sessionToken, session };
  }

  /**
   * The portal behind a cookie; null when the token is malformed, unknown, past its hour (such a row
   * is deleted), or what it was bound to is gone (the customer, the license, the project).
   */
  async authenticate(token: string): Promise<PortalPrincipal | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const session = await this.sessions.findOneBy({ token_hash: sha256Hex(token) });
    if (!session) return null;
    if (session.expires_at.getTime() <= this.clock.nowMs()) {
      await this.sessions.delete({ id: session.id });
      return null;
    }
    const project = await this.projects.findOneBy({ id: session.project_id });
    if (!project) return null;
    let customer: CustomerEntity | null = null;
    if (session.customer_id !== null) {
      customer = await this.customers.findOneBy({ id: session.customer_id, project_id: project.id });
      if (!customer) return null;
    } else if (session.license_id !== null) {
      const license = await this.licenses.findOneBy({ id: session.license_id, project_id: project.id });
      if (!license) return null;
      customer = license.customer_id
        ? await this.customers.findOneBy({ id: license.customer_id, project_id: project.id })
        : null;
    }
    return { session, project, customer };
  }

  /** The audit actor of a portal write. */
  actorOf(principal: PortalPrincipal) {
    return portalActor(principal.customer?.id ?? null);
  }

  /** The licenses the session reaches: its one license, or its customer's of its project (newest first). */
  async licensesOf(principal: PortalPrincipal): Promise<LicenseEntity[]> {
    const { session } = principal;
    if (session.license_id !== null)
      return this.licenses.find({ where: { id: session.license_id, project_id: session.project_id } });
    return this.licenses.find({
      where: { customer_id: session.customer_id!, project_id: session.project_id },
      order: { id: 'DESC' },
      take: MAX_LICENSES,
    });
  }

  /** One license the session reaches; 404 for any other (another customer's, another project's, none). */
  async licenseOf(principal: PortalPrincipal, licenseId: number): Promise<LicenseEntity> {
    const { session } = principal;
    const license =
      session.license_id !== null
        ? session.license_id === licenseId
          ? await this.licenses.findOneBy({ id: licenseId, project_id: session.project_id })
          : null
        : await this.licenses.findOneBy({
            id: licenseId,
            customer_id: session.customer_id!,
            project_id: session.project_id,
          });
    if (!license) throw notFound('License');
    return license;
  }

  async sessionAnswer(principal: PortalPrincipal): Promise<PortalSessionAnswer> {
    const { session, project, customer } = principal;
    return {
      customer: customer ? { id: customer.id, email: customer.email, name: customer.name } : null,
      project: { id: project.id, name: project.name },
      licenses: await this.describeAll(project, await this.licensesOf(principal)),
      csrf_token: this.csrfToken(session),
      return_url: session.return_url,
      expires_at: toIsoTimestamp(session.expires_at),
    };
  }

  async describeAll(project: ProjectEntity, licenses: LicenseEntity[]): Promise<PortalLicense[]> {
    const pinned = licenses.map((l) => l.domain_id).filter((id): id is number => id !== null);
    const domains = pinned.length
      ? new Map((await this.domains.findBy({ id: In(pinned) })).map((d) => [d.id, d]))
      : new Map<number, DomainEntity>();
    const out: PortalLicense[] = [];
    for (const license of licenses)
      out.push(await this.describe(project, license, domains.get(license.domain_id ?? -1) ?? null));
    return out;
  }

  /** A license as the portal shows it: its state, payment, activations and what the buyer may do. */
  async describe(
    project: ProjectEntity,
    license: LicenseEntity,
    domain: DomainEntity | null,
  ): Promise<PortalLicense> {
    await this.licenseAnswers.withPlans(license);
    const now = this.clock.nowMs();
    const status = statusOf(license, now);
    const payment = paymentOf(project, license, domain, now);
    const [activations, total, left] = await Promise.all([
      this.activationRows.find({
        where: { license_id: license.id },
        order: { last_seen_at: 'DESC', id: 'DESC' },
        take: MAX_ACTIVATIONS,
      }),
      this.activationRows.countBy({ license_id: license.id }),
      this.activations.selfDeactivationsLeft(license.id),
    ]);
    const refusal = tokenRefusal(project, status, payment.state);
    return {
      id: license.id,
      key: license.uuid,
      title: license.title,
      status,
      revoked_at: toIsoTimestamp(license.revoked_at),
      expires_at: toIsoTimestamp(license.expires_at),
      is_test_license: license.is_test_license,
      payment: { state: payment.state, grace_until: toIsoTimestamp(payment.graceUntil) },
      plan: license.plan ?? null,
      entitlements: license.effective_entitlements ?? {},
      meters: await this.meters.report(license.id, license.effective_entitlements ?? {}),
      max_domains: license.max_domains,
      max_subdomains_per_domain: license.max_subdomains_per_domain,
      activations: activations.sort((a, b) => a.id - b.id),
      activations_total: total,
      self_deactivations: {
        per_day: this.config.env.SELF_DEACTIVATIONS_PER_DAY,
        left_today: left,
        resets_at: toIsoTimestamp(new Date(utcDaySpan(Date.now()).until)) as string,
      },
      offline_token: { available: refusal === null, reason: refusal },
      created_at: toIsoTimestamp(license.created_at),
    };
  }

  async describeOne(principal: PortalPrincipal, license: LicenseEntity): Promise<PortalLicense> {
    const domain = license.domain_id ? await this.domains.findOneBy({ id: license.domain_id }) : null;
    return this.describe(principal.project, license, domain);
  }

  /**
   * "Free this site": one activation of a license the session reaches, against the day's
   * SELF_DEACTIVATIONS_PER_DAY; answers how many are left. 404 for an activation of another license.
   */
  async freeActivation(
    principal: PortalPrincipal,
    licenseId: number,
    activationId: number,
    request: Omit<AuditContext, 'actor'>,
  ): Promise<{ deactivated: number; left_today: number; per_day: number }> {
    const license = await this.licenseOf(principal, licenseId);
    if (!(await this.activationRows.existsBy({ id: activationId, license_id: license.id })))
      throw notFound('Activation');
    const max = this.config.env.SELF_DEACTIVATIONS_PER_DAY;
    if (principal.project.locked_at) throw new ApiError(HttpStatus.FORBIDDEN, PROJECT_LOCKED_PORTAL);
    if (max === 0)
      throw new ApiError(
        HttpStatus.FORBIDDEN,
        'Freeing sites here is turned off on this service; ask the vendor to free the site.',
      );
    const answer = await inAuditContext({ ...request, actor: this.actorOf(principal) }, () =>
      this.activations.freeInPortal(principal.project, license, activationId),
    );
    if (answer === null) throw notFound('Activation');
    if (answer === 'allowance_used') {
      const retry = Math.max(1, Math.ceil((utcDaySpan(Date.now()).until - Date.now()) / 1000));
      throw new ApiError(
        HttpStatus.TOO_MANY_REQUESTS,
        allowanceUsed(max),
        null,
        { left_today: 0, per_day: max },
        { 'Retry-After': String(retry) },
      );
    }
    return {
      deactivated: answer.deactivated,
      left_today: await this.activations.selfDeactivationsLeft(license.id),
      per_day: max,
    };
  }

  /** An offline token (as a paid has-paid answer's include=token) for a paid license the session reaches. */
  async offlineToken(
    principal: PortalPrincipal,
    licenseId: number,
  ): Promise<{ token: string; expires_at: string | null; license_id: number; project_id: number }> {
    const license = await this.licenseOf(principal, licenseId);
    const { project } = principal;
    const now = this.clock.nowMs();
    const domain = license.domain_id ? await this.domains.findOneBy({ id: license.domain_id }) : null;
    const payment = paymentOf(project, license, domain, now);
    const refusal = tokenRefusal(project, statusOf(license, now), payment.state);
    if (refusal) throw new ApiError(HttpStatus.FORBIDDEN, refusal);
    const iat = Math.floor(now / 1000);
    // The earliest of the project's offline grace, the payment's grace and the license's expiry.
    let exp = iat + project.offline_grace_hours * 3600;
    for (const end of [payment.graceUntil, license.expires_at])
      if (end) exp = Math.min(exp, Math.floor(end.getTime() / 1000));
    const token = offlineToken(await this.signing.keyOf(project), {
      project_id: project.id,
      license_id: license.id,
      key_sha256: license.uuid_hash,
      domain: null,
      has_paid: true,
      is_test_license: license.is_test_license,
      iat,
      exp,
    });
    return {
      token,
      expires_at: toIsoTimestamp(new Date(exp * 1000)),
      license_id: license.id,
      project_id: project.id,
    };
  }

  /** Deletes links and sessions past their expiry; returns how many. */
  async prune(): Promise<number> {
    const now = new Date(this.clock.nowMs());
    const links = await this.links.delete({ expires_at: LessThanOrEqual(now) });
    const sessions = await this.sessions.delete({ expires_at: LessThanOrEqual(now) });
    return (links.affected ?? 0) + (sessions.affected ?? 0);
  }
}

export const allowanceUsed = (max: number) =>
  `This license has used its ${max} site${max === 1 ? '' : 's'} freed for today; more can be freed after midnight UTC.`;

const portalActor = (customerId: number | null) => ({
  type: 'portal' as const,
  api_key_id: null,
  api_key_prefix: null,
  user_id: null,
  customer_id: customerId,
});

/**
 * Revoked (by the vendor or payment, or a payment grace of a project-billed license that ended),
 * expired (by the wall clock, as the runtime check reads it), or active.
 */
function statusOf(license: LicenseEntity, now: number): LicenseStatus {
  return licenseLapse(license, now) ?? 'active';
}

/**
 * Whether the license answers paid, as a runtime check without a calling domain would: a license
 * that carries its own payment by its own flag, a pinned one by its domain's, others by the project's;
 * in a grace (paid until a date) when the flag's grace, or a project-billed license's own, runs.
 */
function paymentOf(
  project: ProjectEntity,
  license: LicenseEntity,
  domain: DomainEntity | null,
  now: number,
): { state: PaymentState; graceUntil: Date | null } {
  const flag =
    license.billing === 'license'
      ? { hasPaid: license.has_paid, graceUntil: license.grace_until }
      : domain
        ? { hasPaid: domain.has_paid, graceUntil: domain.grace_until }
        : { hasPaid: project.has_paid, graceUntil: project.grace_until };
  if (!paidNow(flag.hasPaid, flag.graceUntil, now)) return { state: 'unpaid', graceUntil: null };
  let graceUntil = flag.graceUntil;
  if (license.billing !== 'license' && license.grace_until && license.grace_until.getTime() > now)
    graceUntil =
      graceUntil && graceUntil.getTime() < license.grace_until.getTime() ? graceUntil : license.grace_until;
  return graceUntil ? { state: 'grace', graceUntil } : { state: 'paid', graceUntil: null };
}

/** Why no offline token can be had for the license now, or null when one can. */
function tokenRefusal(project: ProjectEntity, status: LicenseStatus, payment: PaymentState): string | null {
  if (status === 'revoked')
    return 'This license has been revoked: an offline token is issued only for an active, paid license.';
  if (status === 'expired')
    return 'This license has expired: an offline token is issued only for an active, paid license.';
  if (!project.is_active || project.locked_at)
    return "The vendor's project is not active: no offline token can be issued now.";
  if (payment === 'unpaid') return TOKEN_NOT_PAID;
  if (project.offline_grace_hours <= 0) return TOKEN_OFF;
  return null;
}
