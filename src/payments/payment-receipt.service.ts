import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { EntityManager, Repository } from 'typeorm';
import type { Audit } from '../audit/audit-log.service.js';
import { AuditContext, inAuditContext } from '../audit/audit-context.js';
import { UserEntity } from '../auth/user.entity.js';
import { openSecret, sha256Hex } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { normalizeDomain } from '../common/net/domain-name.js';
import { addDays, Clock, wholeSecond } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation, violatesUnique } from '../database/db-errors.js';
import { lockedRow, lockedRowWhere } from '../database/unit-of-work.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { defaultsFor } from '../licenses/licenses.service.js';
import { paymentEvents } from '../metrics/metrics.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentEventEntity, PaymentOutcome, TargetKind } from './payment-event.entity.js';
import { PaymentProvider, ProviderEvent, shown } from './providers/provider.js';
import { providerNamed } from './providers/registry.js';

/** The answer to an accepted delivery. */
export interface Receipt {
  outcome: PaymentOutcome;
  event_id: string;
}

/** Where a delivery comes from, for the audit rows of what it changes. */
export interface DeliveryOrigin {
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
}

export const CONNECTOR_NOT_FOUND = 'Payment connector not found.';
export const SIGNATURE_INVALID = 'The payment provider signature is missing or invalid';
export const BODY_NOT_JSON = 'The event body must be a JSON object.';
export const NO_EVENT_ID = 'The event carries no event id (or one longer than 255 characters).';

/** A target whose has_paid an event moves. */
type Target = { kind: 'project'; row: ProjectEntity } | { kind: 'domain'; row: DomainEntity };

/** What an event did, gathered inside its unit of work. */
interface Effects {
  outcome: 'applied' | 'ignored';
  details: string[];
  target: { kind: TargetKind; id: number } | null;
  events: Array<[WebhookEvent, unknown]>;
  audit: Audit[];
}

/** Attempts of a unit that lost a race on a license's unique title or order reference. */
const ATTEMPTS = 3;

const projectOrDomain = (target: Target) =>
  target.kind === 'project' ? 'The project' : `The domain ${target.row.domain}`;

/**
 * Receives a provider's event (docs/payments.md): finds the connector by its token, checks the
 * signature over the raw bytes, then reads the event and applies it, the event row and every effect in
 * one unit of work, once per event id.
 */
@Injectable()
export class PaymentReceipts {
  constructor(
    @InjectRepository(PaymentConnectorEntity)
    private readonly connectors: Repository<PaymentConnectorEntity>,
    @InjectRepository(PaymentEventEntity) private readonly events: Repository<PaymentEventEntity>,
    private readonly projects: ProjectsService,
    private readonly projectChanges: ProjectChanges,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async receive(
    provider: string,
    token: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    origin: DeliveryOrigin,
  ): Promise<Receipt> {
    const label = providerNamed(provider) ? provider : 'unknown';
    try {
      const receipt = await this.handle(provider, token, headers, body, origin);
      paymentEvents.inc({ provider: label, outcome: receipt.outcome });
      return receipt;
    } catch (error) {
      const status = error instanceof ApiError ? error.getStatus() : 0;
      const outcome =
        status === 401
          ? 'invalid_signature'
          : status === 404
            ? 'not_found'
            : status === 400
              ? 'malformed'
              : 'error';
      paymentEvents.inc({ provider: label, outcome });
      throw error;
    }
  }

  private async handle(
    provider: string,
    token: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    origin: DeliveryOrigin,
  ): Promise<Receipt> {
    const { connector, adapter } = await this.find(provider, token);
    const secret = openSecret(this.config.appKey, connector.signing_secret);
    const verified = adapter.verify(secret, headers, body, this.clock.nowMs());
    if (!verified.ok)
      throw new ApiError(HttpStatus.UNAUTHORIZED, `${SIGNATURE_INVALID}: ${verified.reason}.`);
    let payload: unknown;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ApiError(HttpStatus.BAD_REQUEST, BODY_NOT_JSON);
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
      throw new ApiError(HttpStatus.BAD_REQUEST, BODY_NOT_JSON);
    const event = adapter.read(payload as Record<string, unknown>, body, verified.headerEventId);
    if (!event || event.id.length > 255) throw new ApiError(HttpStatus.BAD_REQUEST, NO_EVENT_ID);
    // A redelivery of a stored event, answered without a unit of work; racing deliveries are told apart by the unique index.
    if (await this.events.existsBy({ connector_id: connector.id, provider_event_id: event.id }))
      return { outcome: 'duplicate', event_id: event.id };
    const project = await this.projects.find(connector.project_id);
    if (!project) throw new ApiError(HttpStatus.NOT_FOUND, CONNECTOR_NOT_FOUND);
    const context: AuditContext = {
      actor: {
        type: 'payment',
        api_key_id: null,
        api_key_prefix: null,
        user_id: null,
        provider: connector.provider,
        connector_id: connector.id,
      },
      ...origin,
    };
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await inAuditContext(context, () => this.apply(project, connector, event));
        return { outcome, event_id: event.id };
      } catch (error) {
        if (
          violatesUnique(
            error,
            'uq_payment_events_connector_event',
            'payment_events.connector_id, payment_events.provider_event_id',
          )
        )
          return { outcome: 'duplicate', event_id: event.id };
        // Another event of the same order issued its license (or took the title) meanwhile: the next attempt sees it.
        if (isUniqueViolation(error) && attempt < ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /** The active connector of `provider` whose token this is; one 404 for every other case (no oracle). */
  private async find(
    provider: string,
    token: string,
  ): Promise<{ connector: PaymentConnectorEntity; adapter: PaymentProvider }> {
    const adapter = providerNamed(provider);
    if (!adapter || token.length < 32 || token.length > 128)
      throw new ApiError(HttpStatus.NOT_FOUND, CONNECTOR_NOT_FOUND);
    const connector = await this.connectors
      .createQueryBuilder('c')
      .addSelect('c.signing_secret')
      .where('c.token_hash = :hash', { hash: sha256Hex(token) })
      .getOne();
    if (!connector || connector.provider !== provider || !connector.is_active)
      throw new ApiError(HttpStatus.NOT_FOUND, CONNECTOR_NOT_FOUND);
    return { connector, adapter };
  }

  /** The event row first (it serialises deliveries of one event), then its effects, in one unit. */
  private apply(
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
  ): Promise<'applied' | 'ignored'> {
    const now = wholeSecond(this.clock.now());
    return this.projectChanges.run(project, async (manager) => {
      const inserted = await manager.insert(PaymentEventEntity, {
        connector_id: connector.id,
        project_id: project.id,
        provider_event_id: event.id,
        type: event.type.slice(0, 128),
        outcome: 'ignored',
        target_kind: null,
        target_id: null,
        detail: '',
        received_at: now,
      });
      await manager.update(
        PaymentConnectorEntity,
        { id: connector.id },
        { last_event_at: now, updated_at: () => 'updated_at' },
      );
      const effects = await this.effects(manager, project, connector, event, now);
      await manager.update(
        PaymentEventEntity,
        { id: inserted.identifiers[0].id as number },
        {
          outcome: effects.outcome,
          target_kind: effects.target?.kind ?? null,
          target_id: effects.target?.id ?? null,
          detail: effects.details.join(' ').slice(0, 1000),
        },
      );
      return { result: effects.outcome, events: effects.events, audit: effects.audit };
    });
  }

  private async effects(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    now: Date,
  ): Promise<Effects> {
    const effects: Effects = { outcome: 'ignored', details: [], target: null, events: [], audit: [] };
    let target: Target;
    if (event.domain === undefined || event.domain === null) {
      target = { kind: 'project', row: project };
    } else {
      const name = normalizeDomain(event.domain);
      const domain = name
        ? await manager.findOneBy(DomainEntity, { project_id: project.id, domain: name })
        : null;
      if (!domain) {
        effects.details.push(
          typeof event.domain === 'string'
            ? `The domain ${shown(event.domain)} named by licensegate_domain is not registered under this project: nothing changed.`
            : `licensegate_domain is ${shown(event.domain)}, not a domain name: nothing changed.`,
        );
        return effects;
      }
      target = { kind: 'domain', row: domain };
    }
    effects.target = { kind: target.kind, id: target.row.id };
    if (event.verdict.kind === 'ignored') {
      effects.details.push(event.verdict.detail);
      return effects;
    }
    effects.outcome = 'applied';
    if (event.verdict.kind === 'paid') await this.paid(manager, target, effects);
    else await this.unpaid(manager, target, connector.grace_days, now, effects);
    if (event.reference) await this.license(manager, project, connector, event, now, effects);
    return effects;
  }

  /** has_paid true and no grace: a paid event ends a grace that runs. */
  private async paid(manager: EntityManager, target: Target, effects: Effects): Promise<void> {
    const before = await this.locked(manager, target);
    if (before.has_paid && before.grace_until === null) {
      effects.details.push(`${projectOrDomain(target)} was already paid.`);
      return;
    }
    const after = await this.write(manager, target, { has_paid: true, grace_until: null });
    const flips = !before.has_paid;
    effects.details.push(
      flips
        ? `${projectOrDomain(target)} is paid.`
        : `${projectOrDomain(target)} stays paid: its grace ended.`,
    );
    this.announce(target, before, after, flips ? 'paid' : null, effects);
  }

  /** grace_until = now + grace_days, or has_paid false at once when grace_days is 0. */
  private async unpaid(
    manager: EntityManager,
    target: Target,
    graceDays: number,
    now: Date,
    effects: Effects,
  ): Promise<void> {
    const before = await this.locked(manager, target);
    if (!before.has_paid) {
      effects.details.push(`${projectOrDomain(target)} was already unpaid.`);
      return;
    }
    if (graceDays === 0) {
      const after = await this.write(manager, target, { has_paid: false, grace_until: null });
      effects.details.push(`${projectOrDomain(target)} is unpaid (no grace).`);
      this.announce(target, before, after, 'unpaid', effects);
      return;
    }
    if (before.grace_until !== null) {
      effects.details.push(
        `${projectOrDomain(target)} stays paid until ${toIsoTimestamp(before.grace_until)}, the grace already running.`,
      );
      return;
    }
    const until = addDays(now, graceDays);
    const after = await this.write(manager, target, { grace_until: until });
    effects.details.push(
      `${projectOrDomain(target)} stays paid until ${toIsoTimestamp(until)} (grace of ${graceDays} day${graceDays === 1 ? '' : 's'}).`,
    );
    this.announce(target, before, after, null, effects);
  }

  private async locked(manager: EntityManager, target: Target): Promise<ProjectEntity | DomainEntity> {
    return target.kind === 'project'
      ? lockedRow(manager, ProjectEntity, target.row.id)
      : lockedRow(manager, DomainEntity, target.row.id);
  }

  private async write(
    manager: EntityManager,
    target: Target,
    changes: { has_paid?: boolean; grace_until: Date | null },
  ): Promise<ProjectEntity | DomainEntity> {
    if (target.kind === 'project') {
      await manager.update(ProjectEntity, { id: target.row.id }, changes);
      return manager.findOneByOrFail(ProjectEntity, { id: target.row.id });
    }
    await manager.update(DomainEntity, { id: target.row.id }, changes);
    return manager.findOneByOrFail(DomainEntity, { id: target.row.id });
  }

  /** The events and audit row of a change to the target, as a management write of it has them. */
  private announce(
    target: Target,
    before: object,
    after: object,
    flip: 'paid' | 'unpaid' | null,
    effects: Effects,
  ): void {
    effects.events.push([`${target.kind}.updated`, after]);
    if (flip) effects.events.push([`${target.kind}.${flip}`, after]);
    effects.audit.push({ action: flip ? `${target.kind}.${flip}` : `${target.kind}.updated`, before, after });
  }

  /**
   * Licenses from orders: the first paid event of a reference issues one license (the unique index on
   * the reference makes a racing second one fail, and its retry finds the first); a paid event
   * reactivates it and ends its grace; an unpaid one starts its grace, or revokes it when there is none.
   */
  private async license(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    now: Date,
    effects: Effects,
  ): Promise<void> {
    const reference = (event.reference as string).slice(0, 255);
    const found = await lockedRowWhere(manager, LicenseEntity, {
      project_id: project.id,
      payment_provider: connector.provider,
      payment_reference_id: reference,
    });
    if (event.verdict.kind === 'paid') {
      if (!found) {
        if (connector.issue_licenses)
          await this.issue(manager, project, connector, event, reference, effects);
        return;
      }
      if (found.revoked_at === null && found.grace_until === null) return;
      await manager.update(LicenseEntity, { id: found.id }, { revoked_at: null, grace_until: null });
      const after = await manager.findOneByOrFail(LicenseEntity, { id: found.id });
      const reactivated = found.revoked_at !== null;
      const action = reactivated ? 'license.reactivated' : 'license.updated';
      effects.events.push([action, after]);
      effects.audit.push({ action, before: found, after });
      effects.details.push(
        reactivated
          ? `License ${found.id} is reactivated.`
          : `License ${found.id} stays valid: its grace ended.`,
      );
      return;
    }
    if (!found || found.revoked_at !== null) return;
    if (connector.grace_days === 0) {
      await manager.update(LicenseEntity, { id: found.id }, { revoked_at: now, grace_until: null });
      const after = await manager.findOneByOrFail(LicenseEntity, { id: found.id });
      effects.events.push(['license.revoked', after]);
      effects.audit.push({ action: 'license.revoked', before: found, after });
      effects.details.push(`License ${found.id} is revoked.`);
      return;
    }
    if (found.grace_until !== null) return;
    const until = addDays(now, connector.grace_days);
    await manager.update(LicenseEntity, { id: found.id }, { grace_until: until });
    const after = await manager.findOneByOrFail(LicenseEntity, { id: found.id });
    effects.events.push(['license.updated', after]);
    effects.audit.push({ action: 'license.updated', before: found, after });
    effects.details.push(`License ${found.id} is revoked at ${toIsoTimestamp(until)} unless paid again.`);
  }

  /** One license from the connector's template, titled "<provider> <customer email or reference>" (made unique). */
  private async issue(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    reference: string,
    effects: Effects,
  ): Promise<void> {
    const owner = await manager.findOneByOrFail(UserEntity, { id: project.user_id });
    if (!owner.can_create_licenses) {
      effects.details.push('No license was issued: the plan does not allow creating licenses.');
      return;
    }
    const template = connector.license_template ?? {};
    const fields = { ...defaultsFor(owner) } as Record<string, unknown>;
    for (const [field, value] of Object.entries(template)) if (value !== undefined) fields[field] = value;
    const expires =
      typeof fields.expires_at === 'string'
        ? new Date(fields.expires_at)
        : (fields.expires_at as Date | null);
    // A template date that has passed since it was set would issue an expired license: none instead.
    fields.expires_at = expires && expires.getTime() > this.clock.nowMs() ? expires : null;
    if (
      typeof fields.domain_id === 'number' &&
      !(await lockedRowWhere(manager, DomainEntity, { id: fields.domain_id, project_id: project.id }))
    )
      fields.domain_id = null;
    const title = await this.freeTitle(
      manager,
      project.id,
      `${connector.provider} ${event.email ?? reference}`,
    );
    const uuid = randomUUID();
    const result = await manager.insert(LicenseEntity, {
      ...fields,
      title,
      project_id: project.id,
      user_id: project.user_id,
      uuid,
      uuid_hash: sha256Hex(uuid),
      validate_against: 'project_domains',
      revoked_at: null,
      payment_provider: connector.provider,
      payment_reference_id: reference,
      grace_until: null,
    });
    const license = await manager.findOneByOrFail(LicenseEntity, { id: result.identifiers[0].id as number });
    effects.events.push(['license.created', license]);
    effects.audit.push({ action: 'license.created', before: null, after: license });
    effects.details.push(`License ${license.id} is issued for ${reference}.`);
  }

  /** `base`, or `base (2)`, `base (3)`, … : the first title not taken in the project. */
  private async freeTitle(manager: EntityManager, projectId: number, base: string): Promise<string> {
    const stem = base.slice(0, 240);
    for (let n = 1; ; n++) {
      const title = n === 1 ? stem : `${stem} (${n})`;
      if (!(await manager.existsBy(LicenseEntity, { project_id: projectId, title }))) return title;
    }
  }
}
