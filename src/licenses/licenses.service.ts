import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { Brackets, EntityManager, IsNull, MoreThanOrEqual, Not, Repository } from 'typeorm';
import type { ApiPrincipal } from '../auth/principal.js';
import type { LicenseDefaults, UserEntity } from '../auth/user.entity.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import type { FieldErrors } from '../common/http/envelope.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { ApiError, fieldError, notFound, TITLE_TAKEN, ValidationFailed } from '../common/http/errors.js';
import { parseCountry, parseIpEntry, parseList } from '../common/net/address-lists.js';
import { CursorPage, Cursors } from '../database/pagination.js';
import { CustomerEntity } from '../customers/customer.entity.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { DomainsService } from '../domains/domains.service.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { AppConfig } from '../config/app-config.js';
import { assertAccess, ProjectsService } from '../projects/projects.service.js';
import { CreateLicenseDto, UpdateLicenseDto } from './dto/license.dto.js';
import { LicenseListQueryDto } from './dto/license-list-query.dto.js';
import { LicenseActivationEntity, LicenseUsageEntity } from './license-usage.entity.js';
import { LicenseEntity } from './license.entity.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { lockedRow, lockedRowWhere } from '../database/unit-of-work.js';
import { addDays, Clock, utcDay as utcDayOf, utcDaySpan } from '../common/time.js';
import { SubscriptionEntity } from '../payments/subscription.entity.js';
import type { Audit } from '../audit/audit-log.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { effectiveEntitlements } from '../plans/entitlements.js';
import { Meters } from '../plans/meters.js';
import { PlanEntity } from '../plans/plan.entity.js';
import { PlansService } from '../plans/plans.service.js';

/** The columns a caller sets; everything else is the service's. */
type LicenseFields = Pick<
  LicenseEntity,
  | 'title'
  | 'domain_id'
  | 'expires_at'
  | 'max_domains'
  | 'max_subdomains_per_domain'
  | 'max_usage_per_day'
  | 'allowed_ips'
  | 'allowed_countries'
  | 'is_test_license'
  | 'allow_configs'
  | 'billing'
  | 'has_paid'
  | 'customer_id'
  | 'plan_id'
  | 'entitlements'
>;
type OptionalField = Exclude<keyof LicenseFields, 'title'>;
/** Activations listed in the usage report: the most recently seen. */
const USAGE_REPORT_ACTIVATIONS = 100;

const OPTIONAL_FIELDS: OptionalField[] = [
  'domain_id',
  'expires_at',
  'max_domains',
  'max_subdomains_per_domain',
  'max_usage_per_day',
  'allowed_ips',
  'allowed_countries',
  'is_test_license',
  'allow_configs',
  'billing',
  'has_paid',
  'customer_id',
  'plan_id',
  'entitlements',
];
/** Fields that a null leaves alone (they have no null): the booleans and billing. */
const NOT_NULL_FIELDS = new Set<OptionalField>(['is_test_license', 'allow_configs', 'has_paid', 'billing']);
const LIMIT_FIELDS = ['max_domains', 'max_subdomains_per_domain', 'max_usage_per_day'] as const;

let today = { day: '', from: 0, until: 0 };

/**
 * The UTC day of `date` (default now) as YYYY-MM-DD. Today's is kept until the day ends: the runtime
 * check asks for it on every call. A given date is common/time.ts's utcDay().
 */
export function utcDay(date?: Date): string {
  if (date) return utcDayOf(date);
  const now = Date.now();
  if (now < today.from || now >= today.until) today = utcDaySpan(now);
  return today.day;
}

/** Omitted optional fields take the owner's license_defaults, else null/false. */
export function defaultsFor(owner: UserEntity): Omit<LicenseFields, 'title'> {
  const d: LicenseDefaults = owner.license_defaults ?? {};
  const expires = d.expires_at ? new Date(d.expires_at) : null;
  return {
    domain_id: null,
    expires_at: expires && expires.getTime() > Date.now() ? expires : null,
    max_domains: d.max_domains ?? null,
    max_subdomains_per_domain: d.max_subdomains_per_domain ?? null,
    max_usage_per_day: d.max_usage_per_day ?? null,
    allowed_ips: d.allowed_ips ?? null,
    allowed_countries: d.allowed_countries ?? null,
    is_test_license: d.is_test_license ?? false,
    allow_configs: d.allow_configs ?? false,
    billing: 'project',
    has_paid: false,
    customer_id: null,
    plan_id: null,
    entitlements: null,
  };
}

/**
 * The defaults of a license created (or replaced) by `dto`: a license that gets a plan takes the plan's
 * limits where its own are null, so license_defaults fill none of them.
 */
function defaultsForBody(owner: UserEntity, dto: UpdateLicenseDto): Omit<LicenseFields, 'title'> {
  const defaults = defaultsFor(owner);
  if (dto.plan_id !== undefined && dto.plan_id !== null)
    for (const field of LIMIT_FIELDS) defaults[field] = null;
  return defaults;
}

/**
 * The plan a license names stays while the write runs: read again inside the unit, locked on MySQL,
 * so a plan delete racing this write either sees the license on it (and refuses) or has already
 * removed the plan (and this write answers 422). Answers the plan.
 */
async function assertPlanStays(
  manager: EntityManager,
  projectId: number,
  planId: number | null,
): Promise<PlanEntity | null> {
  if (planId === null) return null;
  const plan = await lockedRowWhere(manager, PlanEntity, { id: planId, project_id: projectId });
  if (!plan) throw fieldError('plan_id', PLAN_INVALID);
  return plan;
}

const PLAN_INVALID = 'The selected plan id is invalid.';

/** Sets the answer's `plan` and `effective_entitlements` from the license's plan (or none). */
export function withPlan(license: LicenseEntity, plan: PlanEntity | null | undefined): LicenseEntity {
  license.plan = plan ? { id: plan.id, code: plan.code, name: plan.name } : null;
  license.effective_entitlements = effectiveEntitlements(plan?.entitlements, license.entitlements);
  return license;
}

/** withPlan, reading the plan with `manager` (inside a unit of work). */
export async function withPlanIn(manager: EntityManager, license: LicenseEntity): Promise<LicenseEntity> {
  const plan = license.plan_id === null ? null : await manager.findOneBy(PlanEntity, { id: license.plan_id });
  return withPlan(license, plan);
}

/** The optional fields the body sets: those it names, except the booleans and billing sent as null (left alone). */
function sentOptionalFields(dto: UpdateLicenseDto): OptionalField[] {
  return OPTIONAL_FIELDS.filter(
    (field) => dto[field] !== undefined && !(NOT_NULL_FIELDS.has(field) && dto[field] === null),
  );
}

/** The resolved fields the PATCH body sets. */
function sentFields(resolved: LicenseFields, dto: UpdateLicenseDto): Partial<LicenseFields> {
  const out: Partial<LicenseFields> = {};
  if (dto.title !== undefined) out.title = resolved.title;
  for (const field of sentOptionalFields(dto)) (out as Record<string, unknown>)[field] = resolved[field];
  return out;
}

/**
 * A license pinned to a domain keeps it: the domain is read again inside the unit, locked on MySQL,
 * so a delete racing this write either sees the pin (and refuses) or has already removed the domain
 * (and this write answers 422).
 */
async function assertDomainStays(
  manager: EntityManager,
  projectId: number,
  domainId: number | null,
): Promise<void> {
  if (domainId === null) return;
  if (!(await lockedRowWhere(manager, DomainEntity, { id: domainId, project_id: projectId }))) {
    throw fieldError('domain_id', 'The selected domain id is invalid.');
  }
}

@Injectable()
export class LicensesService {
  private readonly keyCreated: ((hash: string) => void)[] = [];

  constructor(
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    @InjectRepository(LicenseUsageEntity) private readonly usage: Repository<LicenseUsageEntity>,
    @InjectRepository(LicenseActivationEntity)
    private readonly activations: Repository<LicenseActivationEntity>,
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly plans: PlansService,
    private readonly meters: Meters,
  ) {}

  /** A plan by id (a license's, for the runtime lookup), or null. */
  planOf(planId: number): Promise<PlanEntity | null> {
    return this.plans.find(planId);
  }

  /** Sets `plan` and `effective_entitlements` on licenses about to be answered (one read of their plans). */
  async withPlans<T extends LicenseEntity | LicenseEntity[]>(licenses: T): Promise<T> {
    const list: LicenseEntity[] = Array.isArray(licenses) ? licenses : [licenses];
    const plans = await this.plans.byIds(list.flatMap((l) => (l.plan_id === null ? [] : [l.plan_id])));
    for (const license of list)
      withPlan(license, license.plan_id === null ? null : plans.get(license.plan_id));
    return licenses;
  }

  /**
   * Every 404 before any 403 (docs/decisions.md#activations): the license must belong to the project (404)
   * before the key's scope and ownership are checked (403); writes are then refused while the project is
   * locked (docs/decisions.md#projects).
   */
  async findAccessible(
    principal: ApiPrincipal,
    projectId: number,
    licenseId: number,
    options: { write?: boolean } = {},
  ) {
    const found = await this.findInProject(projectId, licenseId);
    assertAccess(principal, found.project, options);
    return found;
  }

  /** The project and its license, 404 when either is missing. No access check: the caller makes it after its own 404s. */
  async findInProject(
    projectId: number,
    licenseId: number,
  ): Promise<{ project: ProjectEntity; license: LicenseEntity }> {
    const project = await this.projects.findOr404(projectId);
    const license = await this.licenses.findOneBy({ id: licenseId, project_id: project.id });
    if (!license) throw notFound('License');
    return { project, license };
  }

  /** The project of the license whose key hashes to `hash` (SHA-256 of the uuid), or null. */
  async projectOfKey(hash: string): Promise<number | null> {
    return (
      (await this.licenses.findOne({ where: { uuid_hash: hash }, select: { id: true, project_id: true } }))
        ?.project_id ?? null
    );
  }

  /** The project of the deleted license whose key hashes to `hash` (license_tombstones), or null. */
  async projectOfDeletedKey(hash: string): Promise<number | null> {
    const rows: Array<{ project_id: number }> = await this.licenses.manager.query(
      'SELECT project_id FROM license_tombstones WHERE uuid_hash = ?',
      [hash],
    );
    return rows.length > 0 ? Number(rows[0].project_id) : null;
  }

  /** The license whose key hashes to `hash`, or null. */
  byKeyHash(hash: string): Promise<LicenseEntity | null> {
    return this.licenses.findOneBy({ uuid_hash: hash });
  }

  /** One page of the project's licenses, narrowed by the search and the status (docs/api.md#searching-licenses). */
  list(project: ProjectEntity, query: LicenseListQueryDto): Promise<CursorPage<LicenseEntity>> {
    const qb = this.licenses
      .createQueryBuilder('l')
      .where('l.project_id = :project', { project: project.id });
    if (query.q !== undefined) {
      // '!' escapes LIKE's wildcards: a backslash would need doubling on MySQL and not on SQLite.
      const text = query.q.toLowerCase().replace(/[!%_]/g, '!$&');
      qb.andWhere(
        new Brackets((w) =>
          w
            .where("l.uuid LIKE :keyPrefix ESCAPE '!'", { keyPrefix: `${text}%` })
            .orWhere("LOWER(l.title) LIKE :titlePart ESCAPE '!'", { titlePart: `%${text}%` }),
        ),
      );
    }
    if (query.customer_id !== undefined)
      qb.andWhere('l.customer_id = :customer', { customer: query.customer_id });
    const now = this.clock.now();
    if (query.status === 'revoked') qb.andWhere('l.revoked_at IS NOT NULL');
    if (query.status === 'expired') qb.andWhere('l.revoked_at IS NULL AND l.expires_at <= :now', { now });
    if (query.status === 'active')
      qb.andWhere('l.revoked_at IS NULL AND (l.expires_at IS NULL OR l.expires_at > :now)', { now });
    return this.cursors.page(qb, `licenses:${project.id}`, query, { defaultPerPage: 20, order: 'DESC' });
  }

  async create(project: ProjectEntity, owner: UserEntity, dto: CreateLicenseDto): Promise<LicenseEntity> {
    if (!owner.can_create_licenses)
      throw new ApiError(HttpStatus.FORBIDDEN, 'Your plan does not allow creating licenses.');
    const fields = await this.resolve(project, { ...defaultsForBody(owner, dto), title: dto.title }, dto);
    const uuid = randomUUID();
    const created = await this.projectChanges.run(project, async (manager) => {
      await assertDomainStays(manager, project.id, fields.domain_id);
      await assertPlanStays(manager, project.id, fields.plan_id);
      const result = await manager.insert(LicenseEntity, {
        ...fields,
        project_id: project.id,
        user_id: project.user_id,
        uuid,
        uuid_hash: sha256Hex(uuid),
        validate_against: 'project_domains',
        revoked_at: null,
      });
      const license = await withPlanIn(
        manager,
        await manager.findOneByOrFail(LicenseEntity, { id: result.identifiers[0].id as number }),
      );
      return {
        result: license,
        events: [['license.created', license]],
        audit: { action: 'license.created', before: null, after: license },
      };
    });
    for (const listener of this.keyCreated) listener(created.uuid_hash);
    return created;
  }

  /** Called with the key hash of every license this process creates (the runtime lookup's negative cache). */
  onKeyCreated(listener: (hash: string) => void): void {
    this.keyCreated.push(listener);
  }

  /** PATCH (partial) or PUT (full replace: omitted optional fields return to the defaults). */
  async update(
    project: ProjectEntity,
    owner: UserEntity,
    license: LicenseEntity,
    dto: UpdateLicenseDto,
    replace: boolean,
  ) {
    if (dto.title === null) throw fieldError('title', 'The title field is required.');
    const base: LicenseFields = replace ? { ...defaultsForBody(owner, dto), title: license.title } : license;
    const resolved = await this.resolve(
      project,
      { ...pickFields(base), title: dto.title ?? license.title },
      dto,
      license.id,
    );
    // PATCH writes only what was sent, so racing PATCHes of different fields both land; PUT replaces.
    const fields = replace ? resolved : sentFields(resolved, dto);
    return await this.projectChanges.run(project, async (manager) => {
      if (fields.domain_id !== undefined) await assertDomainStays(manager, project.id, fields.domain_id);
      if (fields.plan_id !== undefined) await assertPlanStays(manager, project.id, fields.plan_id);
      // (After the pinned domain's and the plan's locks, the order every write that takes them follows.)
      const before = await withPlanIn(manager, await lockedRow(manager, LicenseEntity, license.id));
      // A new expires_at has had no expiry notice yet (license-lifecycle.service.ts).
      const newDate =
        fields.expires_at !== undefined && fields.expires_at?.getTime() !== before.expires_at?.getTime();
      const write: Partial<LicenseFields> & Pick<Partial<LicenseEntity>, 'expiry_notice' | 'grace_until'> =
        newDate ? { ...fields, expiry_notice: null } : { ...fields };
      // A manual change of has_paid ends a payment grace, as for projects and domains (docs/payments.md).
      // Sent, not merely replaced by PUT: a PUT that leaves has_paid out keeps a running grace.
      if (dto.has_paid !== undefined && dto.has_paid !== null) write.grace_until = null;
      await manager.update(LicenseEntity, { id: license.id }, write);
      const after = await withPlanIn(
        manager,
        await manager.findOneByOrFail(LicenseEntity, { id: license.id }),
      );
      const events: Array<[WebhookEvent, unknown]> = [['license.updated', after]];
      const audit: Audit[] = [{ action: 'license.updated', before, after }];
      if (after.has_paid !== before.has_paid)
        events.push([after.has_paid ? 'license.paid' : 'license.unpaid', after]);
      if (after.plan_id !== before.plan_id) {
        // Announced by code, as the vendor's code and the SDKs name plans.
        events.push([
          'license.plan_changed',
          {
            license_id: after.id,
            project_id: project.id,
            from: before.plan?.code ?? null,
            to: after.plan?.code ?? null,
          },
        ]);
        audit.push({ action: 'license.plan_changed', before, after });
      }
      return { result: after, events, audit };
    });
  }

  /**
   * Revokes or reactivates. Whether this call changed anything is decided by the database, not by the
   * copy read before: the update only matches a license in the other state, so of racing calls exactly
   * one changes it and emits the event, and a repeated revoke keeps the first revoked_at.
   */
  async setRevoked(project: ProjectEntity, license: LicenseEntity, revoked: boolean): Promise<LicenseEntity> {
    return this.projectChanges.run(project, async (manager) => {
      const before = await withPlanIn(manager, await lockedRow(manager, LicenseEntity, license.id));
      const result = await manager.update(
        LicenseEntity,
        { id: license.id, revoked_at: revoked ? IsNull() : Not(IsNull()) },
        revoked ? { revoked_at: new Date(), revoked_by: 'vendor' } : { revoked_at: null, revoked_by: null },
      );
      // The vendor revoking a license payment revoked makes the revocation the vendor's: no paid event
      // reactivates it (docs/payments.md). It stays revoked since then: no event.
      if (revoked && (result.affected ?? 0) === 0 && before.revoked_by !== 'vendor')
        await manager.update(LicenseEntity, { id: license.id }, { revoked_by: 'vendor' });
      const after = await withPlanIn(
        manager,
        await manager.findOneByOrFail(LicenseEntity, { id: license.id }),
      );
      const changed = (result.affected ?? 0) > 0;
      const action = revoked ? 'license.revoked' : 'license.reactivated';
      return { result: after, events: changed ? [[action, after]] : [], audit: { action, before, after } };
    });
  }

  async remove(project: ProjectEntity, license: LicenseEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      // Of racing deletes one goes on and the others find the row gone (404): one event.
      const before = await withPlanIn(manager, await lockedRow(manager, LicenseEntity, license.id));
      await manager.delete(LicenseEntity, { id: license.id });
      await manager.query('DELETE FROM meter_usage WHERE license_id = ?', [license.id]);
      await manager.query('DELETE FROM meter_idempotency_keys WHERE license_id = ?', [license.id]);
      await manager.delete(LicenseUsageEntity, { license_id: license.id });
      await manager.delete(LicenseActivationEntity, { license_id: license.id });
      await manager.query('DELETE FROM license_deactivations WHERE license_id = ?', [license.id]);
      await manager.query('DELETE FROM license_limit_notices WHERE license_id = ?', [license.id]);
      // Its purchase stays, marked: the provider's later events issue no license for it again.
      await manager.update(
        SubscriptionEntity,
        { license_id: license.id, license_deleted_at: IsNull() },
        { license_deleted_at: wholeSecond(this.clock.now()) },
      );
      // The key stays attributable to its project: a deleted license still in use shows in its analytics.
      await manager.query('INSERT INTO license_tombstones (uuid_hash, project_id) VALUES (?, ?)', [
        license.uuid_hash,
        project.id,
      ]);
      return {
        result: undefined,
        events: [['license.deleted', before]],
        audit: { action: 'license.deleted', before, after: null },
      };
    });
  }

  /** Today's count, the last 30 days (oldest first) and the most recently seen activations. */
  async usageReport(license: LicenseEntity) {
    const now = new Date();
    const days = Array.from({ length: 30 }, (_, i) => utcDayOf(addDays(now, i - 29)));
    const rows = await this.usage.findBy({ license_id: license.id, day: MoreThanOrEqual(days[0]) });
    const counts = new Map(rows.map((r) => [r.day, r.count]));
    // The most recently seen, not all: a license may hold LICENSE_MAX_ACTIVATIONS (and one from before
    // the cap, more), and the report is read on every console visit.
    const recent = await this.activations.find({
      where: { license_id: license.id },
      order: { last_seen_at: 'DESC', id: 'DESC' },
      take: USAGE_REPORT_ACTIVATIONS,
    });
    const total = await this.activations.countBy({ license_id: license.id });
    const activations = [...recent].sort((a, b) => a.id - b.id);
    const domains = new Map<string, { domain: string; activated_at: Date; subdomains: string[] }>();
    for (const a of activations) {
      const entry = domains.get(a.domain) ?? {
        domain: a.domain,
        activated_at: a.first_seen_at,
        subdomains: [],
      };
      if (a.host) entry.subdomains.push(a.host);
      domains.set(a.domain, entry);
    }
    const today = days[days.length - 1];
    return {
      license_id: license.id,
      today: { date: today, count: counts.get(today) ?? 0 },
      max_usage_per_day: license.max_usage_per_day,
      last_30_days: days.map((date) => ({ date, count: counts.get(date) ?? 0 })),
      max_domains: license.max_domains,
      max_subdomains_per_domain: license.max_subdomains_per_domain,
      domains: [...domains.values()].map((d) => ({ ...d, activated_at: toIsoTimestamp(d.activated_at) })),
      activations: recent,
      activations_total: total,
      max_activations: this.config.env.LICENSE_MAX_ACTIVATIONS,
      activations_capped: total >= this.config.env.LICENSE_MAX_ACTIVATIONS,
      meters: await this.meters.report(
        license.id,
        (await this.withPlans(license)).effective_entitlements ?? {},
      ),
    };
  }

  /**
   * Applies the sent fields over `base` and checks what the DTO cannot: the title is free in the
   * project, domain_id names a domain of this project, expires_at is in the future, and the IP and
   * country lists parse. Every problem is reported at once, keyed by field.
   */
  private async resolve(
    project: ProjectEntity,
    base: LicenseFields,
    dto: UpdateLicenseDto,
    self?: number,
  ): Promise<LicenseFields> {
    const out: LicenseFields = { ...base };
    for (const field of sentOptionalFields(dto)) (out as Record<string, unknown>)[field] = dto[field];
    out.expires_at = wholeSecond(out.expires_at);
    const errors: FieldErrors = {};
    const title = out.title;
    const sameTitle = await this.licenses.findOneBy({ project_id: project.id, title });
    if (sameTitle && sameTitle.id !== self) errors.title = [TITLE_TAKEN];
    if (
      dto.domain_id !== undefined &&
      out.domain_id !== null &&
      !(await this.domains.exists(project.id, out.domain_id))
    ) {
      errors.domain_id = ['The selected domain id is invalid.'];
    }
    if (
      dto.customer_id !== undefined &&
      out.customer_id !== null &&
      !(await this.licenses.manager.existsBy(CustomerEntity, { id: out.customer_id, project_id: project.id }))
    ) {
      errors.customer_id = ['The selected customer id is invalid.'];
    }
    if (dto.expires_at !== undefined && out.expires_at && out.expires_at.getTime() <= Date.now()) {
      errors.expires_at = ['The expires at field must be a date after now.'];
    }
    if (dto.plan_id !== undefined && out.plan_id !== null) {
      const plan = await this.plans.find(out.plan_id);
      if (!plan || plan.project_id !== project.id) errors.plan_id = [PLAN_INVALID];
    }
    if (dto.allowed_ips !== undefined) {
      const parsed = parseList(out.allowed_ips, parseIpEntry);
      if (parsed.bad)
        errors.allowed_ips = [
          `The allowed ips field contains an invalid IP address or CIDR range: "${parsed.bad}".`,
        ];
      else out.allowed_ips = parsed.value;
    }
    if (dto.allowed_countries !== undefined) {
      const parsed = parseList(out.allowed_countries, parseCountry);
      if (parsed.bad)
        errors.allowed_countries = [
          `The allowed countries field contains an invalid ISO 3166-1 alpha-2 code: "${parsed.bad}".`,
        ];
      else out.allowed_countries = parsed.value;
    }
    if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);
    return out;
  }
}

/**
 * expires_at in whole seconds, as it is returned: MySQL's DATETIME would round a fraction and SQLite
 * keep it, and a date saved back as it was read would then differ from the stored one and be
 * announced again (license.expiring, license-lifecycle.service.ts).
 */
function wholeSecond(date: Date | null): Date | null {
  return date === null ? null : new Date(Math.floor(date.getTime() / 1000) * 1000);
}

function pickFields(license: LicenseFields): LicenseFields {
  const out = { title: license.title } as LicenseFields;
  for (const field of OPTIONAL_FIELDS) (out as Record<string, unknown>)[field] = license[field];
  return out;
}
