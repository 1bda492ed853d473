import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { instanceToPlain } from 'class-transformer';
import { randomBytes } from 'node:crypto';
import { EntityManager, Repository } from 'typeorm';
import { REDACTED } from '../audit/audit-log.service.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { openSecret, sealSecret, sha256Hex } from '../common/crypto/crypto.js';
import { fieldError, notFound, ValidationFailed } from '../common/http/errors.js';
import type { FieldErrors } from '../common/http/envelope.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { AppConfig } from '../config/app-config.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import { lockedRow, lockedRowWhere } from '../database/unit-of-work.js';
import { DomainsService } from '../domains/domains.service.js';
import { PlanEntity } from '../plans/plan.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { assertAccess, ProjectsService } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import {
  ConnectorProduct,
  CreatePaymentConnectorDto,
  LicenseTemplate,
  LicenseTemplateDto,
  UpdatePaymentConnectorDto,
} from './dto/payment-connector.dto.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { readPayload } from './event-payload.js';
import { PaymentEventEntity } from './payment-event.entity.js';
import { providerNamed, type Provider } from './providers/registry.js';

/** An accepted event as the API answers it. */
export interface PaymentEventItem {
  id: number;
  provider_event_id: string;
  type: string;
  outcome: string;
  target: { kind: string; id: number } | null;
  detail: string;
  /** The purchase (GET …/subscriptions/{id}) the event recorded, or null. */
  subscription_id: number | null;
  received_at: string | null;
}

export function toPaymentEventItem(row: PaymentEventEntity): PaymentEventItem {
  return {
    id: row.id,
    provider_event_id: row.provider_event_id,
    type: row.type,
    outcome: row.outcome,
    target: row.target_kind && row.target_id !== null ? { kind: row.target_kind, id: row.target_id } : null,
    detail: row.detail,
    subscription_id: row.subscription_id ?? null,
    received_at: toIsoTimestamp(row.received_at),
  };
}

/** Bytes of randomness in an endpoint token: 256 bits, 43 URL-safe characters. */
const TOKEN_BYTES = 32;

/** The connector resource (docs/payments.md): create, read, change and delete, and its event log. */
@Injectable()
export class PaymentConnectorsService {
  constructor(
    @InjectRepository(PaymentConnectorEntity)
    private readonly connectors: Repository<PaymentConnectorEntity>,
    @InjectRepository(PaymentEventEntity) private readonly events: Repository<PaymentEventEntity>,
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
    private readonly config: AppConfig,
  ) {}

  /** As licenses (docs/decisions.md#licenses): the connector must be in the project (404) before the key's scope and owner (403). */
  async findAccessible(
    principal: ApiPrincipal,
    projectId: number,
    connectorId: number,
    options: { write?: boolean } = {},
  ): Promise<{ project: ProjectEntity; connector: PaymentConnectorEntity }> {
    const project = await this.projects.findOr404(projectId);
    const connector = await this.connectors.findOneBy({ id: connectorId, project_id: project.id });
    if (!connector) throw notFound('Payment connector');
    assertAccess(principal, project, options);
    return { project, connector: this.withEndpoint(connector) };
  }

  async list(project: ProjectEntity, query: CursorQueryDto): Promise<CursorPage<PaymentConnectorEntity>> {
    const qb = this.connectors
      .createQueryBuilder('c')
      .where('c.project_id = :project', { project: project.id });
    const page = await this.cursors.page(qb, `payment-connectors:${project.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
    });
    return { ...page, data: page.data.map((c) => this.withEndpoint(c)) };
  }

  /** The connector's accepted events, latest first. */
  async eventLog(
    connector: PaymentConnectorEntity,
    query: CursorQueryDto,
  ): Promise<CursorPage<PaymentEventItem>> {
    const qb = this.events.createQueryBuilder('e').where('e.connector_id = :id', { id: connector.id });
    const page = await this.cursors.page(qb, `payment-events:${connector.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
    });
    return { data: page.data.map(toPaymentEventItem), next_cursor: page.next_cursor };
  }

  /** One accepted event of the connector with its stored payload; 404 ("Event not found.") for an event of another connector. */
  async event(
    connector: PaymentConnectorEntity,
    eventId: number,
  ): Promise<PaymentEventItem & { payload: Record<string, unknown> | null }> {
    const row = await this.events
      .createQueryBuilder('e')
      .addSelect('e.payload')
      .where('e.id = :id AND e.connector_id = :connector', { id: eventId, connector: connector.id })
      .getOne();
    if (!row) throw notFound('Event');
    return { ...toPaymentEventItem(row), payload: readPayload(row.payload) };
  }

  async create(project: ProjectEntity, dto: CreatePaymentConnectorDto): Promise<PaymentConnectorEntity> {
    const provider = dto.provider as Provider;
    await this.check(project, provider, dto);
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    return await this.projectChanges.run(project, async (manager) => {
      await assertPlansStay(manager, project.id, dto.products);
      const result = await manager.insert(PaymentConnectorEntity, {
        project_id: project.id,
        provider,
        name: dto.name ?? null,
        signing_secret: sealSecret(this.config.appKey, dto.signing_secret),
        token_hash: sha256Hex(token),
        token_sealed: sealSecret(this.config.appKey, token),
        grace_days: dto.grace_days ?? 3,
        issue_licenses: dto.issue_licenses ?? false,
        license_template: storedTemplate(dto.license_template),
        products: dto.products ?? [],
        match_customers_by_email: dto.match_customers_by_email ?? false,
        is_active: true,
        last_event_at: null,
      });
      const after = await manager.findOneByOrFail(PaymentConnectorEntity, {
        id: result.identifiers[0].id as number,
      });
      return {
        result: this.withEndpoint(after),
        events: [['payment_connector.created', this.withEndpoint(after)]],
        audit: {
          action: 'payment_connector.created',
          before: null,
          after,
          also: { signing_secret: [null, REDACTED] },
        },
      };
    });
  }

  async update(
    project: ProjectEntity,
    connector: PaymentConnectorEntity,
    dto: UpdatePaymentConnectorDto,
  ): Promise<PaymentConnectorEntity> {
    if (dto.provider !== undefined && dto.provider !== null && dto.provider !== connector.provider)
      throw fieldError(
        'provider',
        'The provider of a connector cannot be changed: create another connector.',
      );
    await this.check(project, connector.provider, dto);
    const changes: Partial<PaymentConnectorEntity> = {};
    if (dto.name !== undefined) changes.name = dto.name;
    if (dto.grace_days !== undefined && dto.grace_days !== null) changes.grace_days = dto.grace_days;
    if (dto.issue_licenses !== undefined && dto.issue_licenses !== null)
      changes.issue_licenses = dto.issue_licenses;
    if (dto.is_active !== undefined && dto.is_active !== null) changes.is_active = dto.is_active;
    if (dto.license_template !== undefined) changes.license_template = storedTemplate(dto.license_template);
    if (dto.products !== undefined) changes.products = dto.products ?? [];
    if (dto.match_customers_by_email !== undefined && dto.match_customers_by_email !== null)
      changes.match_customers_by_email = dto.match_customers_by_email;
    const secret = typeof dto.signing_secret === 'string';
    if (secret) changes.signing_secret = sealSecret(this.config.appKey, dto.signing_secret as string);
    return await this.projectChanges.run(project, async (manager) => {
      await assertPlansStay(manager, project.id, dto.products);
      const before = await lockedRow(manager, PaymentConnectorEntity, connector.id);
      if (Object.keys(changes).length > 0)
        await manager.update(PaymentConnectorEntity, { id: connector.id }, changes);
      const after = await manager.findOneByOrFail(PaymentConnectorEntity, { id: connector.id });
      return {
        result: this.withEndpoint(after),
        events: [['payment_connector.updated', this.withEndpoint(after)]],
        audit: {
          action: 'payment_connector.updated',
          before,
          after,
          also: secret ? { signing_secret: [REDACTED, REDACTED] } : undefined,
        },
      };
    });
  }

  /** Deletes the connector and its event log: its endpoint answers 404 from then on. */
  async remove(project: ProjectEntity, connector: PaymentConnectorEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      const before = await lockedRow(manager, PaymentConnectorEntity, connector.id);
      await manager.delete(PaymentConnectorEntity, { id: connector.id });
      await manager.delete(PaymentEventEntity, { connector_id: connector.id });
      return {
        result: undefined,
        events: [['payment_connector.deleted', this.withEndpoint(before)]],
        audit: {
          action: 'payment_connector.deleted',
          before,
          after: null,
          also: { signing_secret: [REDACTED, null] },
        },
      };
    });
  }

  /** The connector with its endpoint_url (PUBLIC_URL + /api/v1/payments/{provider}/{token}). */
  withEndpoint(connector: PaymentConnectorEntity): PaymentConnectorEntity {
    const token = openSecret(this.config.appKey, connector.token_sealed);
    const copy = Object.assign(new PaymentConnectorEntity(), connector);
    copy.products = connector.products ?? [];
    copy.endpoint_url = `${this.config.publicUrl}/api/v1/payments/${connector.provider}/${token}`;
    return copy;
  }

  /** What the DTO cannot check: the secret's form (its provider's rule), and the template's domain. */
  private async check(
    project: ProjectEntity,
    provider: Provider,
    dto: UpdatePaymentConnectorDto,
  ): Promise<void> {
    const errors: FieldErrors = {};
    const secretProblem =
      typeof dto.signing_secret === 'string'
        ? (providerNamed(provider)?.secretProblem(dto.signing_secret) ?? null)
        : null;
    if (secretProblem) errors.signing_secret = [secretProblem];
    const template = dto.license_template;
    if (template) {
      if (
        template.domain_id !== undefined &&
        template.domain_id !== null &&
        !(await this.domains.exists(project.id, template.domain_id))
      )
        errors['license_template.domain_id'] = ['The selected domain id is invalid.'];
    }
    const missing = await missingPlan(this.connectors.manager, project.id, dto.products);
    if (missing !== null) errors.products = [planNotFound(missing)];
    if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);
  }
}

const planNotFound = (code: string) => `The plan "${code}" in products is not a plan of this project.`;

/** The plan codes the products name. */
export const planCodesOf = (products: ConnectorProduct[] | null | undefined): string[] => [
  ...new Set((products ?? []).flatMap((p) => (typeof p === 'string' ? [] : [p.plan]))),
];

/** The first plan code of `products` that no plan of the project has, or null (read with `manager`). */
async function missingPlan(
  manager: EntityManager,
  projectId: number,
  products: ConnectorProduct[] | null | undefined,
  lock = false,
): Promise<string | null> {
  for (const code of planCodesOf(products)) {
    const where = { project_id: projectId, code };
    const plan = lock
      ? await lockedRowWhere(manager, PlanEntity, where)
      : await manager.findOneBy(PlanEntity, where);
    if (!plan) return code;
  }
  return null;
}

/**
 * The plans the products name stay while the write runs: read again inside the unit, locked on MySQL,
 * so a plan delete racing this write either sees the connector naming it (and refuses) or has already
 * removed the plan (and this write answers 422).
 */
async function assertPlansStay(
  manager: EntityManager,
  projectId: number,
  products: ConnectorProduct[] | null | undefined,
): Promise<void> {
  const missing = await missingPlan(manager, projectId, products, true);
  if (missing !== null) throw new ValidationFailed({ products: [planNotFound(missing)] });
}

/** The template as stored: only the fields sent, dates as ISO-8601. */
function storedTemplate(dto: LicenseTemplateDto | null | undefined): LicenseTemplate | null {
  if (!dto) return null;
  const plain = instanceToPlain(dto) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(plain)) {
    if (value === undefined) continue;
    out[field] = value instanceof Date ? value.toISOString() : value;
  }
  if (dto.expires_at instanceof Date) out.expires_at = dto.expires_at.toISOString();
  return out;
}
