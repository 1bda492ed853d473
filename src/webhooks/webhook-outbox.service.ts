import { Injectable } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import { randomUUID } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { UnitOfWork, writeLocked } from '../database/unit-of-work.js';
import { UserEntity } from '../auth/user.entity.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';

/** Every event type, in the README's order (docs/decisions.md#webhooks). */
export const WEBHOOK_EVENTS = [
  ...(['created', 'updated', 'deleted', 'paid', 'unpaid', 'locked', 'unlocked'] as const).map((e) => `project.${e}` as const),
  ...(['created', 'updated', 'deleted', 'paid', 'unpaid'] as const).map((e) => `domain.${e}` as const),
  ...(
    ['created', 'updated', 'deleted', 'revoked', 'reactivated', 'usage_limit_reached', 'deactivated', 'domain_limit_reached', 'expiring', 'expired'] as const
  ).map((e) => `license.${e}` as const),
  ...(['created', 'updated', 'deleted'] as const).map((e) => `injectable.${e}` as const),
];
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Wakes the in-process dispatcher after a commit; set by the dispatcher when it runs here. */
export type Kick = () => void;

/**
 * Writes events to the outbox with the same EntityManager — so in the same transaction — as the
 * change that causes them (docs/architecture.md#the-outbox). Only for projects with a webhook_url whose owner has webhooks on.
 */
@Injectable()
export class WebhookOutbox {
  private kick: Kick = () => undefined;

  constructor(private readonly unit: UnitOfWork) {}

  /**
   * Runs a change and records the events it returns in one unit of work (one transaction), then
   * wakes the dispatcher. `work` gets the unit's EntityManager and returns [result, events].
   */
  async change<T>(
    project: ProjectEntity,
    work: (manager: EntityManager) => Promise<[T, Array<[WebhookEvent, unknown]>] | [T, Array<[WebhookEvent, unknown]>, ProjectEntity]>,
  ): Promise<T> {
    let recorded = 0;
    const result = await this.unit.run(async (manager) => {
      // A third element is the project as the change left it (its webhook_url may have just changed).
      const [value, events, after] = await work(manager);
      recorded = await this.record(manager, after ?? project, events);
      return value;
    });
    if (recorded > 0) this.kick();
    return result;
  }

  onKick(kick: Kick): void {
    this.kick = kick;
  }

  /**
   * Like change(), for a project that does not exist yet: serialises the owner's writes (a row lock
   * on MySQL) so that counts taken inside the unit stay true until it commits.
   */
  async changeOwned<T extends ProjectEntity>(userId: number, work: (manager: EntityManager) => Promise<[T, Array<[WebhookEvent, unknown]>]>): Promise<T> {
    let recorded = 0;
    const result = await this.unit.run(async (manager) => {
      await writeLocked(manager.createQueryBuilder(UserEntity, 'u').select('u.id').where('u.id = :id', { id: userId })).getOne();
      const [project, events] = await work(manager);
      recorded = await this.record(manager, project, events);
      return project;
    });
    if (recorded > 0) this.kick();
    return result;
  }

  /** Records each event; returns how many were written. */
  async record(manager: EntityManager, project: ProjectEntity, events: Array<[WebhookEvent, unknown]>): Promise<number> {
    if (!project.webhook_url || events.length === 0) return 0;
    const owner = await manager.findOne(UserEntity, { where: { id: project.user_id }, select: { id: true, webhooks_enabled: true } });
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

/** The host and port a webhook URL is sent to: what the dispatcher's per-host cap counts by. */
export function receiverHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
