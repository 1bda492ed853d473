import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { ApiPrincipal } from '../auth/principal.js';
import { notFound } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { CursorPage, Cursors } from '../database/pagination.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { assertAccess, ProjectsService } from '../projects/projects.service.js';
import { SubscriptionListQueryDto } from './dto/subscription-list-query.dto.js';
import { PaymentEventItem, toPaymentEventItem } from './payment-connectors.service.js';
import { PaymentEventEntity } from './payment-event.entity.js';
import { SubscriptionEntity } from './subscription.entity.js';

/** A purchase as the API answers it (docs/payments.md#subscriptions). */
export interface SubscriptionItem {
  id: number;
  connector_id: number;
  provider: string;
  reference: string;
  kind: string;
  status: string;
  cancel_at_period_end: boolean;
  customer_id: number | null;
  license_id: number | null;
  license_deleted_at: string | null;
  target: { kind: string; id: number } | null;
  product_ids: string[];
  current_period_end: string | null;
  last_event_at: string | null;
  last_event_type: string | null;
  created_at: string | null;
  updated_at: string | null;
}

export function toSubscriptionItem(row: SubscriptionEntity): SubscriptionItem {
  return {
    id: row.id,
    connector_id: row.connector_id,
    provider: row.provider,
    reference: row.reference,
    kind: row.kind,
    status: row.status,
    cancel_at_period_end: Boolean(row.cancel_at_period_end),
    customer_id: row.customer_id,
    license_id: row.license_id,
    license_deleted_at: toIsoTimestamp(row.license_deleted_at),
    target: row.target_kind && row.target_id !== null ? { kind: row.target_kind, id: row.target_id } : null,
    product_ids: row.product_ids ?? [],
    current_period_end: toIsoTimestamp(row.current_period_end),
    last_event_at: toIsoTimestamp(row.last_event_at),
    last_event_type: row.last_event_type,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

/** Events listed with one purchase: its latest. */
export const SUBSCRIPTION_EVENTS = 50;

/**
 * What providers sold, read-only: the rows are written by the connectors' events
 * (payment-receipt.service.ts), never through this API.
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    @InjectRepository(SubscriptionEntity) private readonly subscriptions: Repository<SubscriptionEntity>,
    @InjectRepository(PaymentEventEntity) private readonly events: Repository<PaymentEventEntity>,
    private readonly projects: ProjectsService,
    private readonly cursors: Cursors,
  ) {}

  /** As licenses: the purchase must be in the project (404) before the key's scope and owner (403). */
  async findAccessible(
    principal: ApiPrincipal,
    projectId: number,
    id: number,
  ): Promise<{ project: ProjectEntity; subscription: SubscriptionEntity }> {
    const project = await this.projects.findOr404(projectId);
    const subscription = await this.subscriptions.findOneBy({ id, project_id: project.id });
    if (!subscription) throw notFound('Subscription');
    assertAccess(principal, project);
    return { project, subscription };
  }

  /** One page of the project's purchases, newest first, narrowed by the filters sent. */
  async list(project: ProjectEntity, query: SubscriptionListQueryDto): Promise<CursorPage<SubscriptionItem>> {
    const qb = this.subscriptions
      .createQueryBuilder('s')
      .where('s.project_id = :project', { project: project.id });
    if (query.status !== undefined) qb.andWhere('s.status = :status', { status: query.status });
    if (query.customer_id !== undefined)
      qb.andWhere('s.customer_id = :customer', { customer: query.customer_id });
    if (query.connector_id !== undefined)
      qb.andWhere('s.connector_id = :connector', { connector: query.connector_id });
    const page = await this.cursors.page(qb, `subscriptions:${project.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
    });
    return { data: page.data.map(toSubscriptionItem), next_cursor: page.next_cursor };
  }

  /** The purchase with its connector's events of it, latest first. */
  async detail(subscription: SubscriptionEntity): Promise<SubscriptionItem & { events: PaymentEventItem[] }> {
    const events = await this.events.find({
      where: { connector_id: subscription.connector_id, subscription_id: subscription.id },
      order: { id: 'DESC' },
      take: SUBSCRIPTION_EVENTS,
    });
    return { ...toSubscriptionItem(subscription), events: events.map(toPaymentEventItem) };
  }
}
