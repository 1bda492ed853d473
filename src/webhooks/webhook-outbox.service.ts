import { Injectable } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import { randomUUID } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { UserEntity } from '../auth/user.entity.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { Clock } from '../common/time.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { subscribes, WebhookEvent } from './webhook-events.js';

/**
 * Wakes the in-process dispatcher after a commit, with the receivers' hosts events were recorded for;
 * set by the dispatcher when it runs here.
 */
export type Kick = (hosts: string[]) => void;

/**
 * The outbox rows of a change, written with the same EntityManager — so in the same transaction — as
 * the change that causes them (docs/architecture.md#the-outbox); ProjectChanges calls it for every
 * change. Events go only to projects with a webhook_url that subscribe to them, whose owner has
 * webhooks on.
 */
@Injectable()
export class WebhookOutbox {
  private kick: Kick = () => undefined;
  /** Hosts events were recorded for since the last kick (a unit rolled back included: it costs a query). */
  private readonly recorded = new Set<string>();

  constructor(private readonly clock: Clock) {}

  onKick(kick: Kick): void {
    this.kick = kick;
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
    const now = this.clock.now();
    const host = receiverHost(project.webhook_url);
    this.recorded.add(host);
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
        target_host: host,
        claimed_by: null,
        claimed_until: null,
      });
    }
    return events.length;
  }

  /** Call after the unit that recorded events (or queued `host`'s delivery again) has committed. */
  dispatchSoon(host?: string): void {
    if (host !== undefined) this.recorded.add(host);
    const hosts = [...this.recorded];
    this.recorded.clear();
    this.kick(hosts);
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
