import { Injectable } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import { randomUUID } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { Audit, AuditLog } from '../audit/audit-log.service.js';
import { ProjectGenerations } from '../common/cache/generations.js';
import { UnitOfWork, writeLocked } from '../database/unit-of-work.js';
import { UserEntity } from '../auth/user.entity.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { subscribes, WebhookEvent } from './webhook-events.js';

export type { WebhookEvent } from './webhook-events.js';

/**
 * What a change in a project did: its result, the webhook events it announces, the project as the
 * change left it when it changed the project itself (its webhook settings may have just changed),
 * and, for a management write, its audit row (docs/architecture.md#the-audit-log). `unchanged`: it
 * found nothing to write and wrote nothing, so no cache is made stale.
 */
export interface ProjectChange<T> {
  result: T;
  events?: Array<[WebhookEvent, unknown]>;
  project?: ProjectEntity;
  audit?: Audit | Audit[];
  unchanged?: true;
}

/** Wakes the in-process dispatcher after a commit; set by the dispatcher when it runs here. */
export type Kick = () => void;

/**
 * Writes events to the outbox with the same EntityManager — so in the same transaction — as the
 * change that causes them (docs/architecture.md#the-outbox), and with them the change's audit row.
 * Events go only to projects with a webhook_url that subscribe to them, whose owner has webhooks on.
 */
@Injectable()
export class WebhookOutbox {
  private kick: Kick = () => undefined;

  constructor(
    private readonly unit: UnitOfWork,
    private readonly audits: AuditLog,
    private readonly generations: ProjectGenerations,
  ) {}

  /**
   * Runs a change and records, in one unit of work (one transaction), its audit row and the events
   * it returns, then makes the project's cached rows stale on every instance
   * (common/cache/generations.ts) and wakes the dispatcher. `work` gets the unit's EntityManager.
   * `invalidates: false` for a change no cache holds (a usage count), which leaves the caches alone;
   * a change that answers `unchanged` leaves them alone too. Both matter on the runtime routes, where
   * a license holder could otherwise make every instance drop the project's cached answers at will.
   */
  async change<T>(
    project: ProjectEntity,
    work: (manager: EntityManager) => Promise<ProjectChange<T>>,
    { invalidates = true }: { invalidates?: boolean } = {},
  ): Promise<T> {
    let recorded = 0;
    let unchanged = false;
    let seq: number | undefined;
    try {
      const result = await this.unit.run(async (manager) => {
        const change = await work(manager);
        unchanged = change.unchanged === true;
        recorded = await this.recordChange(manager, change.project ?? project, change);
        // Instances without Redis learn of the write from the project's change counter (common/cache/generations.ts).
        if (invalidates && !unchanged) seq = await this.generations.recordChange(manager, project.id);
        return change.result;
      });
      if (recorded > 0) this.kick();
      return result;
    } finally {
      // Also after a failure: its COMMIT may have landed unanswered.
      if (invalidates && !unchanged) await this.generations.bump(project.id, seq);
    }
  }

  onKick(kick: Kick): void {
    this.kick = kick;
  }

  /**
   * Like change(), for a project that does not exist yet (`result` is the new project): serialises
   * the owner's writes (a row lock on MySQL) so that counts taken inside the unit stay true until it
   * commits.
   */
  async changeOwned<T extends ProjectEntity>(
    userId: number,
    work: (manager: EntityManager) => Promise<ProjectChange<T>>,
  ): Promise<T> {
    let recorded = 0;
    const result = await this.unit.run(async (manager) => {
      await writeLocked(
        manager.createQueryBuilder(UserEntity, 'u').select('u.id').where('u.id = :id', { id: userId }),
      ).getOne();
      const change = await work(manager);
      recorded = await this.recordChange(manager, change.project ?? change.result, change);
      return change.result;
    });
    if (recorded > 0) this.kick();
    return result;
  }

  private async recordChange(
    manager: EntityManager,
    project: ProjectEntity,
    change: ProjectChange<unknown>,
  ): Promise<number> {
    await this.audits.record(manager, { owner_id: project.user_id, project_id: project.id }, change.audit);
    return this.record(manager, project, change.events ?? []);
  }

  /**
   * Records each event the project subscribes to (`webhook_events`, while `webhook_enabled`); returns
   * how many were written.
   */
  async record(
    manager: EntityManager,
    project: ProjectEntity,
    all: Array<[WebhookEvent, unknown]>,
  ): Promise<number> {
    const events =
      project.webhook_enabled === false
        ? []
        : all.filter(([type]) => subscribes(project.webhook_events, type));
    if (!project.webhook_url || events.length === 0) return 0;
    const owner = await manager.findOne(UserEntity, {
      where: { id: project.user_id },
      select: { id: true, webhooks_enabled: true },
    });
    if (!owner?.webhooks_enabled) return 0;
    const now = new Date();
    for (const [type, data] of events) {
      const id = `evt_${randomUUID().replace(/-/g, '')}`;
      const body = JSON.stringify({ id, type, timestamp: toIsoTimestamp(now), data: instanceToPlain(data) });
      await manager.insert(WebhookDeliveryEntity, {
        project_id: project.id,
        event_id: id,
        type,
        payload: body,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        first_attempt_at: null,
        last_attempt_at: null,
        last_status_code: null,
        last_error: null,
        target_host: receiverHost(project.webhook_url),
        claimed_by: null,
        claimed_until: null,
      });
    }
    return events.length;
  }

  /** Call after the unit that recorded events has committed. */
  dispatchSoon(): void {
    this.kick();
  }
}

/** How long target_host may be (its column). */
const MAX_RECEIVER_HOST = 255;

/**
 * The host and port a webhook URL is sent to: what the dispatcher's per-host cap counts by. Cut to its
 * column: a webhook_url is refused on write when its host name is longer than DNS allows (253), so
 * only a port after the longest names, or a URL written straight into the database, is cut.
 */
export function receiverHost(url: string): string {
  try {
    return new URL(url).host.slice(0, MAX_RECEIVER_HOST);
  } catch {
    return '';
  }
}
