import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { instanceToPlain } from 'class-transformer';
import { EntityManager, Repository } from 'typeorm';
import type { Audit } from '../audit/audit-log.service.js';
import { AuditContext, inAuditContext } from '../audit/audit-context.js';
import { UserEntity } from '../auth/user.entity.js';
import { openSecret, sha256Hex } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { unpairedSurrogates } from '../common/http/unicode.js';
import { normalizeDomain } from '../common/net/domain-name.js';
import { addDays, Clock, wholeSecond } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation, violatesUnique } from '../database/db-errors.js';
import { lockedRow, lockedRowWhere } from '../database/unit-of-work.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { defaultsFor, withPlan, withPlanIn } from '../licenses/licenses.service.js';
import { PlanEntity } from '../plans/plan.entity.js';
import { paymentEvents } from '../metrics/metrics.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { CustomerEntity, CustomerExternalIdEntity } from '../customers/customer.entity.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { findPurchase, productProblem, recordPurchase, staleness } from './purchases.js';
import { SubscriptionEntity } from './subscription.entity.js';
import { storedPayload } from './event-payload.js';
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
/**
 * Bytes that are not UTF-8, or an unpaired surrogate in what is read of the event (its id, type,
 * reference, email, domain): decoding would store U+FFFD in its place, and two distinct event ids would
 * become one (docs/payments.md#how-deliveries-are-checked).
 */
export const BODY_NOT_TEXT = 'The event body must be UTF-8 text, with no unpaired surrogate.';

/** A target whose has_paid an event moves. */
type Target = { kind: 'project'; row: ProjectEntity } | { kind: 'domain'; row: DomainEntity };

/** What an accepted event came to. */
type Outcome = 'applied' | 'ignored' | 'stale';

/** What an event did, gathered inside its unit of work. */
interface Effects {
  outcome: Outcome;
  details: string[];
  target: { kind: TargetKind; id: number } | null;
  /** The purchase row the event recorded (or found stale). */
  subscription: number | null;
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
/** Whether an event's product ids (null: it names none) differ from those recorded on its purchase. */
function itemsChanged(recorded: string[] | null, sent: string[] | null): boolean {
  if (sent === null) return false;
  if (recorded === null) return true;
  return sent.length !== recorded.length || sent.some((id) => !recorded.includes(id));
}

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
    if (!isUtf8(body)) throw new ApiError(HttpStatus.BAD_REQUEST, BODY_NOT_TEXT);
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
    // What is stored and compared must be text; elsewhere in the payload (a buyer's free text) an
    // unpaired surrogate is kept as JSON escapes it, and does not cost the payment.
    const { id, type, reference, email, domain, license } = event;
    if (unpairedSurrogates({ id, type, reference, email, domain, license }))
      throw new ApiError(HttpStatus.BAD_REQUEST, BODY_NOT_TEXT);
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
        const outcome = await inAuditContext(context, () =>
          this.apply(project, connector, event, storedPayload(payload, body.length)),
        );
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
    payload: string,
  ): Promise<Outcome> {
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
        payload,
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
          subscription_id: effects.subscription,
          detail: effects.details.join(' ').slice(0, 1000),
        },
      );
      return { result: effects.outcome, events: effects.events, audit: effects.audit };
    });
  }

  /**
   * What an event moves (docs/payments.md#order-of-events): its purchase is found (a refund's through
   * the payment ids kept), held to the connector's products and to the order of the provider's own
   * times, recorded, and then the first that applies moves: the purchase's license, a license issued
   * for it, the domain named, the project.
   */
  private async effects(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    now: Date,
  ): Promise<Effects> {
    const effects: Effects = {
      outcome: 'ignored',
      details: [],
      target: null,
      subscription: null,
      events: [],
      audit: [],
    };
    const refund = event.refund;
    // Types outside the table, events that name no purchase, and partial or unapproved refunds: the target of 18, or nothing.
    if ((!event.purchase && !refund) || (refund && event.verdict.kind === 'ignored')) {
      if (connector.issue_licenses && event.verdict.kind !== 'ignored') {
        effects.details.push(
          'The event names no purchase, so it reaches no license: a connector that issues licenses moves no project or domain.',
        );
        return effects;
      }
      return this.onTarget(manager, project, connector, event, now, effects, false);
    }
    let row = await findPurchase(
      manager,
      connector.id,
      event.purchase,
      refund ? refund.paymentIds : event.paymentIds,
    );
    if (refund && !row) {
      const named = event.purchase
        ? `the ${event.purchase.kind} ${shown(event.purchase.reference)}`
        : refund.paymentIds.length > 0
          ? `the payment ${refund.paymentIds.map(shown).join(', ')}`
          : 'no payment';
      effects.details.push(
        `${event.type} names ${named}, which no purchase of this connector has: nothing changed.`,
      );
      return effects;
    }
    if (!refund) {
      const problem = productProblem(connector, event, row);
      if (problem) {
        effects.details.push(problem);
        return effects;
      }
    }
    if (row) {
      const stale = staleness(row, event);
      if (stale) {
        effects.outcome = 'stale';
        effects.subscription = row.id;
        effects.details.push(stale);
        return effects;
      }
    }
    const customer = await this.customerOf(manager, project, connector, event, row, effects);
    // Whether the purchase's items change with this event: the plan follows them, and only then.
    const itemsChange = itemsChanged(row?.product_ids ?? null, event.productIds ?? null);
    row = await recordPurchase(manager, project, connector, event, row, customer);
    effects.subscription = row.id;
    if (event.verdict.kind === 'ignored') {
      const target = await this.targetOf(manager, project, event);
      if (typeof target !== 'string') effects.target = { kind: target.kind, id: target.row.id };
      effects.details.push(event.verdict.detail);
      return effects;
    }
    if (!row.license_id && !refund && event.license !== undefined && event.license !== null) {
      const named = await this.namedLicense(manager, project, event.license);
      if (typeof named === 'string') {
        effects.details.push(named);
        return effects;
      }
      // The purchase is this license's from now on: its later events (a refund, a renewal) reach it as an issued one's do.
      await manager.update(
        SubscriptionEntity,
        { id: row.id },
        { license_id: named.id, target_kind: 'license', target_id: named.id },
      );
      row.license_id = named.id;
    }
    const noGrace = refund !== null;
    const license = row.license_id
      ? await lockedRowWhere(manager, LicenseEntity, { id: row.license_id })
      : null;
    if (row.license_id && !license) {
      if (!row.license_deleted_at)
        await manager.update(SubscriptionEntity, { id: row.id }, { license_deleted_at: now });
      effects.details.push(
        `License ${row.license_id} of this purchase was deleted: nothing changed, and no license is issued for it again.`,
      );
      return effects;
    }
    if (license) {
      effects.target = { kind: 'license', id: license.id };
      if (license.revoked_at !== null && license.revoked_by !== 'payment') {
        effects.details.push(
          `License ${license.id} was revoked by the vendor: it stays revoked, whatever the provider sends.`,
        );
        return effects;
      }
      if (license.billing === 'license') {
        effects.outcome = 'applied';
        await this.ownFlag(manager, license, event.verdict.kind === 'paid', connector, now, noGrace, effects);
        if (event.verdict.kind === 'paid' && itemsChange)
          await this.followPlan(manager, project, connector, event, row, license.id, effects);
        return effects;
      }
      // A billing: project license (one issued before licenses carried their own payment) moves its target and itself.
      await this.onTarget(manager, project, connector, event, now, effects, noGrace);
      if (effects.outcome === 'applied')
        await this.projectLicense(
          manager,
          license,
          event.verdict.kind === 'paid',
          connector,
          now,
          noGrace,
          effects,
        );
      if (effects.outcome === 'applied' && event.verdict.kind === 'paid' && itemsChange)
        await this.followPlan(manager, project, connector, event, row, license.id, effects);
      return effects;
    }
    if (connector.issue_licenses) {
      if (event.verdict.kind !== 'paid') {
        effects.details.push(
          'This purchase has no license to move: a connector that issues licenses moves no project or domain.',
        );
        return effects;
      }
      const issued = await this.issue(manager, project, connector, event, row, customer, effects);
      if (issued) {
        effects.outcome = 'applied';
        effects.target = { kind: 'license', id: issued.id };
        await manager.update(
          SubscriptionEntity,
          { id: row.id },
          { license_id: issued.id, target_kind: 'license', target_id: issued.id },
        );
      }
      return effects;
    }
    await this.onTarget(manager, project, connector, event, now, effects, noGrace);
    if (effects.target)
      await manager.update(
        SubscriptionEntity,
        { id: row.id },
        { target_kind: effects.target.kind, target_id: effects.target.id },
      );
    return effects;
  }

  /** The license of the project licensegate_license names (its id); a string says why there is none. */
  private async namedLicense(
    manager: EntityManager,
    project: ProjectEntity,
    value: unknown,
  ): Promise<LicenseEntity | string> {
    const id =
      typeof value === 'number'
        ? value
        : typeof value === 'string' && /^\d{1,10}$/.test(value.trim())
          ? Number(value.trim())
          : NaN;
    if (!Number.isSafeInteger(id) || id < 1 || id > 2_147_483_647)
      return `licensegate_license is ${shown(value)}, not a license id: nothing changed.`;
    const license = await manager.findOneBy(LicenseEntity, { id, project_id: project.id });
    if (!license)
      return `License ${id} named by licensegate_license is not a license of this project: nothing changed.`;
    // Lemon Squeezy's and Paddle's custom data is the buyer's to write, and license ids are easy to
    // guess: a purchase may take only a license that nothing paid yet, or its refund would unpay a
    // license someone else paid for (docs/payments.md#metadata-written-by-the-buyer).
    if (license.billing !== 'license')
      return `License ${id} named by licensegate_license answers with its project's or domain's flag (billing: project): nothing changed.`;
    if (license.has_paid)
      return `License ${id} named by licensegate_license is paid already: a purchase takes only an unpaid license; nothing changed.`;
    const linked = await manager.countBy(SubscriptionEntity, { license_id: id });
    if (linked > 0)
      return `License ${id} named by licensegate_license has a purchase of its own already: nothing changed.`;
    return license;
  }

  /** The domain licensegate_domain names, else the project; a string says why there is none. */
  private async targetOf(
    manager: EntityManager,
    project: ProjectEntity,
    event: ProviderEvent,
  ): Promise<Target | string> {
    if (event.domain === undefined || event.domain === null) return { kind: 'project', row: project };
    const name = normalizeDomain(event.domain);
    const domain = name
      ? await manager.findOneBy(DomainEntity, { project_id: project.id, domain: name })
      : null;
    if (domain) return { kind: 'domain', row: domain };
    return typeof event.domain === 'string'
      ? `The domain ${shown(event.domain)} named by licensegate_domain is not registered under this project: nothing changed.`
      : `licensegate_domain is ${shown(event.domain)}, not a domain name: nothing changed.`;
  }

  /** Moves the project's or the named domain's has_paid (18); `noGrace`: unpaid at once (a refund). */
  private async onTarget(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    now: Date,
    effects: Effects,
    noGrace: boolean,
  ): Promise<Effects> {
    const target = await this.targetOf(manager, project, event);
    if (typeof target === 'string') {
      effects.details.push(target);
      return effects;
    }
    effects.target = { kind: target.kind, id: target.row.id };
    if (event.verdict.kind === 'ignored') {
      effects.details.push(event.verdict.detail);
      return effects;
    }
    effects.outcome = 'applied';
    if (event.verdict.kind === 'paid') await this.paid(manager, target, effects);
    else await this.unpaid(manager, target, noGrace ? 0 : connector.grace_days, now, effects);
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
   * A `billing: license` license's own has_paid: paid sets it and ends a grace; unpaid starts the
   * connector's grace (PaymentGrace then clears has_paid), or clears it at once for a refund or a grace
   * of 0. Payment never revokes such a license.
   */
  private async ownFlag(
    manager: EntityManager,
    before: LicenseEntity,
    paid: boolean,
    connector: PaymentConnectorEntity,
    now: Date,
    noGrace: boolean,
    effects: Effects,
  ): Promise<void> {
    const id = before.id;
    let changes: Partial<LicenseEntity>;
    let flip: 'paid' | 'unpaid' | null = null;
    if (paid) {
      if (before.has_paid && before.grace_until === null) {
        effects.details.push(`License ${id} was already paid.`);
        return;
      }
      changes = { has_paid: true, grace_until: null };
      flip = before.has_paid ? null : 'paid';
      effects.details.push(flip ? `License ${id} is paid.` : `License ${id} stays paid: its grace ended.`);
    } else if (!before.has_paid) {
      effects.details.push(`License ${id} was already unpaid.`);
      return;
    } else if (noGrace || connector.grace_days === 0) {
      changes = { has_paid: false, grace_until: null };
      flip = 'unpaid';
      effects.details.push(`License ${id} is unpaid (no grace).`);
    } else if (before.grace_until !== null) {
      effects.details.push(
        `License ${id} stays paid until ${toIsoTimestamp(before.grace_until)}, the grace already running.`,
      );
      return;
    } else {
      const until = addDays(now, connector.grace_days);
      changes = { grace_until: until };
      effects.details.push(
        `License ${id} stays paid until ${toIsoTimestamp(until)} (grace of ${connector.grace_days} day${connector.grace_days === 1 ? '' : 's'}).`,
      );
    }
    await manager.update(LicenseEntity, { id }, changes);
    const after = await manager.findOneByOrFail(LicenseEntity, { id });
    effects.events.push(['license.updated', after]);
    if (flip) effects.events.push([`license.${flip}`, after]);
    effects.audit.push({ action: flip ? `license.${flip}` : 'license.updated', before, after });
  }

  /**
   * A `billing: project` license of a purchase (18): a paid event reactivates it (when payment revoked
   * it) and ends its grace; an unpaid one starts its grace, or revokes it when there is none.
   */
  private async projectLicense(
    manager: EntityManager,
    found: LicenseEntity,
    paid: boolean,
    connector: PaymentConnectorEntity,
    now: Date,
    noGrace: boolean,
    effects: Effects,
  ): Promise<void> {
    if (paid) {
      if (found.revoked_at === null && found.grace_until === null) return;
      await manager.update(
        LicenseEntity,
        { id: found.id },
        { revoked_at: null, revoked_by: null, grace_until: null },
      );
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
    if (found.revoked_at !== null) return;
    if (noGrace || connector.grace_days === 0) {
      await manager.update(
        LicenseEntity,
        { id: found.id },
        { revoked_at: now, revoked_by: 'payment', grace_until: null },
      );
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

  /**
   * The buyer of the event (docs/payments.md#customers): the purchase's, else the customer holding the
   * provider's id for it, else (match_customers_by_email) one of that email with no id of this
   * provider, else a new one. Null when the event names neither an id nor an email.
   */
  private async customerOf(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    row: SubscriptionEntity | null,
    effects: Effects,
  ): Promise<number | null> {
    if (row?.customer_id) return row.customer_id;
    const external = event.customerId && event.customerId.length <= 255 ? event.customerId : null;
    if (external) {
      const known = await manager.findOneBy(CustomerExternalIdEntity, {
        project_id: project.id,
        provider: connector.provider,
        external_id: external,
      });
      if (known) return known.customer_id;
    }
    const email = event.email?.trim().toLowerCase() ?? '';
    if (email === '' || email.length > 320) return null;
    const keep = (customerId: number) =>
      external
        ? manager.insert(CustomerExternalIdEntity, {
            customer_id: customerId,
            project_id: project.id,
            provider: connector.provider,
            external_id: external,
          })
        : null;
    if (connector.match_customers_by_email) {
      const match = await manager
        .createQueryBuilder(CustomerEntity, 'c')
        .where('c.project_id = :project AND c.email = :email', { project: project.id, email })
        .andWhere(
          'NOT EXISTS (SELECT 1 FROM customer_external_ids x WHERE x.customer_id = c.id AND x.provider = :provider)',
          { provider: connector.provider },
        )
        .orderBy('c.id', 'ASC')
        .getOne();
      if (match) {
        await keep(match.id);
        return match.id;
      }
    }
    const name = event.customerName ? event.customerName.slice(0, 255) : null;
    const inserted = await manager.insert(CustomerEntity, { project_id: project.id, email, name });
    const id = inserted.identifiers[0].id as number;
    await keep(id);
    const customer = await manager.findOneByOrFail(CustomerEntity, { id });
    const answer = {
      ...instanceToPlain(customer),
      external_ids: external ? [{ provider: connector.provider, id: external }] : [],
    };
    effects.events.push(['customer.created', answer]);
    effects.audit.push({ action: 'customer.created', before: null, after: answer });
    effects.details.push(`Customer ${id} (${email}) is created.`);
    return id;
  }

  /**
   * One `billing: license` license from the connector's template, paid, titled "<provider> <customer
   * email or reference>" (made unique); null when the account may not create licenses.
   */
  private async issue(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    row: SubscriptionEntity,
    customer: number | null,
    effects: Effects,
  ): Promise<LicenseEntity | null> {
    const owner = await manager.findOneByOrFail(UserEntity, { id: project.user_id });
    if (!owner.can_create_licenses) {
      effects.details.push('No license was issued: the plan does not allow creating licenses.');
      return null;
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
      `${connector.provider} ${event.email ?? row.reference}`,
    );
    const plan = await this.planOf(manager, project, connector, event, row, effects);
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
      payment_reference_id: row.reference,
      payment_reference_kind: row.kind,
      grace_until: null,
      billing: 'license',
      has_paid: true,
      customer_id: customer,
      ...(plan ? { plan_id: plan.id } : {}),
    });
    const license = withPlan(
      await manager.findOneByOrFail(LicenseEntity, { id: result.identifiers[0].id as number }),
      plan,
    );
    effects.events.push(['license.created', license]);
    effects.audit.push({ action: 'license.created', before: null, after: license });
    effects.details.push(`License ${license.id} is issued for ${row.reference}.`);
    return license;
  }

  /**
   * The plan the event's products grant (docs/plans.md#from-payments): the first `{id, plan}` of the
   * connector's products among the ids the event (else its purchase) names; null when none names a
   * plan, or when the plan named is no longer one of the project's (said in the details).
   */
  private async planOf(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    row: SubscriptionEntity,
    effects: Effects,
  ): Promise<PlanEntity | null> {
    const named = new Set(event.productIds ?? row.product_ids ?? []);
    const entry = (connector.products ?? []).find((p) => typeof p !== 'string' && named.has(p.id));
    if (!entry || typeof entry === 'string') return null;
    const plan = await lockedRowWhere(manager, PlanEntity, { project_id: project.id, code: entry.plan });
    if (!plan)
      effects.details.push(
        `The plan ${shown(entry.plan)} of product ${shown(entry.id)} is not a plan of this project: the plan is left as it is.`,
      );
    return plan;
  }

  /**
   * A paid event whose items differ from the purchase's recorded ones (an upgrade, a downgrade, or the
   * first items seen) moves the license to the plan its products grant, audited and announced as a
   * management change of the plan is. A paid event naming the same items, or none (an invoice), leaves
   * the plan alone: one changed by hand stays.
   */
  private async followPlan(
    manager: EntityManager,
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    event: ProviderEvent,
    row: SubscriptionEntity,
    licenseId: number,
    effects: Effects,
  ): Promise<void> {
    const plan = await this.planOf(manager, project, connector, event, row, effects);
    if (!plan) return;
    const before = await withPlanIn(manager, await manager.findOneByOrFail(LicenseEntity, { id: licenseId }));
    if (before.plan_id === plan.id) return;
    await manager.update(LicenseEntity, { id: licenseId }, { plan_id: plan.id });
    const after = withPlan(await manager.findOneByOrFail(LicenseEntity, { id: licenseId }), plan);
    effects.outcome = 'applied';
    effects.events.push(['license.updated', after]);
    effects.events.push([
      'license.plan_changed',
      { license_id: licenseId, project_id: project.id, from: before.plan?.code ?? null, to: plan.code },
    ]);
    effects.audit.push({ action: 'license.plan_changed', before, after });
    effects.details.push(`License ${licenseId} is on plan ${shown(plan.code)}.`);
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
