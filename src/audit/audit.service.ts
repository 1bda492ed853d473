import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, LessThan, Repository, SelectQueryBuilder } from 'typeorm';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { JOBS } from '../common/jobs.js';
import { AppConfig } from '../config/app-config.js';
import { CursorPage, Cursors } from '../database/pagination.js';
import { AuditEventEntity, Changes } from './audit-event.entity.js';
import type { AuditScope } from './audit-log.service.js';
import { AuditQueryDto } from './dto/audit-query.dto.js';

/** An audit row as the API answers it. */
export interface AuditItem {
  id: number;
  action: string;
  resource_type: string;
  resource_id: number | null;
  project_id: number | null;
  actor: {
    type: string;
    api_key_id: number | null;
    api_key_prefix: string | null;
    user_id: number | null;
    provider?: string | null;
    connector_id?: number | null;
    customer_id?: number | null;
  };
  changes: Changes;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  created_at: string | null;
}

export function toAuditItem(row: AuditEventEntity): AuditItem {
  return {
    id: row.id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    project_id: row.project_id,
    actor: {
      type: row.actor_type,
      api_key_id: row.actor_api_key_id,
      api_key_prefix: row.actor_api_key_prefix,
      user_id: row.actor_user_id,
      ...(row.actor_type === 'payment'
        ? { provider: row.actor_provider, connector_id: row.actor_connector_id }
        : {}),
      ...(row.actor_type === 'portal' ? { customer_id: row.actor_customer_id } : {}),
    },
    changes: row.changes,
    request_id: row.request_id,
    ip: row.ip,
    user_agent: row.user_agent,
    created_at: toIsoTimestamp(row.created_at),
  };
}

/** The rows a scope sees: the account's, and of those one project's when the scope names one. */
export type AuditReadScope = Pick<AuditScope, 'owner_id'> & { project_id: number | null };

const PRUNE_BATCH = 1000;

/** Reading the audit log, and pruning it past AUDIT_RETENTION_DAYS (docs/decisions.md#audit-log). */
@Injectable()
export class AuditService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('AuditLog');
  // A minute after start (not during it), then hourly; the first failure is logged, then the recovery.
  private readonly pruning = new PeriodicTask({
    ...JOBS.auditPruning,
    logger: this.logger,
    run: async () => {
      const pruned = await this.prune();
      if (pruned > 0)
        this.logger.log(
          `pruned ${pruned} audit rows older than ${this.config.env.AUDIT_RETENTION_DAYS} days`,
        );
    },
  });

  constructor(
    @InjectRepository(AuditEventEntity) private readonly events: Repository<AuditEventEntity>,
    private readonly cursors: Cursors,
    private readonly config: AppConfig,
  ) {}

  /** Latest first, filtered; the cursor belongs to the scope and the filters it was made with. */
  async list(scope: AuditReadScope, query: AuditQueryDto): Promise<CursorPage<AuditItem>> {
    const filters = [
      scope.owner_id,
      scope.project_id,
      query.action,
      query.resource_type,
      query.resource_id,
      query.since?.getTime(),
      query.until?.getTime(),
    ];
    const page = await this.cursors.page(
      this.filtered(scope, query),
      `audit:${JSON.stringify(filters)}`,
      query,
      { defaultPerPage: 20, order: 'DESC' },
    );
    return { data: page.data.map(toAuditItem), next_cursor: page.next_cursor };
  }

  /** The `limit` latest rows of a scope (the CLI's audit:list). */
  async latest(scope: AuditReadScope, limit: number): Promise<AuditItem[]> {
    const rows = await this.filtered(scope, {}).orderBy('e.id', 'DESC').limit(limit).getMany();
    return rows.map(toAuditItem);
  }

  private filtered(
    scope: AuditReadScope,
    query: Partial<AuditQueryDto>,
  ): SelectQueryBuilder<AuditEventEntity> {
    const qb = this.events.createQueryBuilder('e').where('e.owner_id = :owner', { owner: scope.owner_id });
    if (scope.project_id !== null) qb.andWhere('e.project_id = :project', { project: scope.project_id });
    if (query.action) qb.andWhere('e.action = :action', { action: query.action });
    if (query.resource_type) qb.andWhere('e.resource_type = :type', { type: query.resource_type });
    if (query.resource_id) qb.andWhere('e.resource_id = :resource', { resource: query.resource_id });
    if (query.since) qb.andWhere('e.created_at >= :since', { since: query.since });
    if (query.until) qb.andWhere('e.created_at <= :until', { until: query.until });
    return qb;
  }

  /**
   * Deletes the rows older than AUDIT_RETENTION_DAYS (0: keeps every row), a batch at a time so that
   * no statement holds locks for long. Every instance may run it: a row deleted twice is deleted.
   * Returns how many rows went.
   */
  async prune(now = Date.now()): Promise<number> {
    const days = this.config.env.AUDIT_RETENTION_DAYS;
    if (days === 0) return 0;
    const cutoff = new Date(now - days * 86_400_000);
    let pruned = 0;
    for (;;) {
      const batch = await this.events.find({
        select: { id: true },
        where: { created_at: LessThan(cutoff) },
        order: { id: 'ASC' },
        take: PRUNE_BATCH,
      });
      if (batch.length === 0) return pruned;
      await this.events.delete({ id: In(batch.map((row) => row.id)) });
      pruned += batch.length;
      if (batch.length < PRUNE_BATCH) return pruned;
    }
  }

  onApplicationBootstrap(): void {
    this.pruning.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pruning.stop();
  }
}
