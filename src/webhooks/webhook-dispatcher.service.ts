import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Brackets, Repository } from 'typeorm';
import { openSecret } from '../common/crypto/crypto.js';
import { databaseFailure } from '../database/db-errors.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AppConfig } from '../config/app-config.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { JOBS } from '../common/jobs.js';
import { Clock } from '../common/time.js';
import { ProjectsService } from '../projects/projects.service.js';
import { postWebhook } from './post-webhook.js';
import { WebhookTargets } from './ssrf.js';
import { webhookAttempts } from '../metrics/metrics.js';
import { webhookSignature } from './signature.js';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookOutbox } from './webhook-outbox.service.js';

const CLAIM_MARGIN_MS = 5000;
const INTERRUPTED =
  'Interrupted: the dispatcher sending it stopped before recording the outcome (the receiver may have received it).';

/** Seconds from a Retry-After header (delta-seconds or HTTP date), or null. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/**
 * Delivers the outbox (docs/architecture.md#the-outbox) through a pool: up to WEBHOOK_CONCURRENCY deliveries at once, at most
 * WEBHOOK_CONCURRENCY_PER_HOST of them to one receiver, and each slot refilled as soon as its delivery
 * ends, so deliveries never wait on each other. A row is claimed only when a slot is free for it, with
 * a conditional UPDATE, so two dispatchers — in one process or many, on one database — never send the
 * same attempt twice. A claim expires, so a dispatcher that dies mid-delivery loses nothing: another
 * one takes the row over.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly logger = new Logger('WebhookDispatcher');
  private readonly schedule: number[];
  private readonly poll: PeriodicTask;
  private stopped = true;
  /** Deliveries under way, and how many of them go to each receiver host. */
  private readonly sending = new Set<Promise<void>>();
  private readonly perHost = new Map<string, number>();
  /** Hosts at their cap when the last query found nothing else due, and when (see stillDrained). */
  private drained: { hosts: Set<string>; at: number } | null = null;

  constructor(
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    private readonly outbox: WebhookOutbox,
    private readonly config: AppConfig,
    private readonly unit: UnitOfWork,
    private readonly targets: WebhookTargets,
    private readonly projects: ProjectsService,
    private readonly clock: Clock,
  ) {
    this.schedule = config.env.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
    // The first failed fill of a run of them (the database away: every poll fails until it is back) and
    // the first fill that works again are logged, not every poll in between.
    this.poll = new PeriodicTask({
      ...JOBS.webhookDispatch(config.env),
      logger: this.logger,
      run: () => this.fill(),
      lines: {
        failing: (error) => [
          { db: databaseFailure(error) },
          'Webhook dispatch failing; polling on (logged again once it works)',
        ],
        recovered: 'Webhook dispatch works again',
      },
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.env.WEBHOOK_DISPATCHER) this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.outbox.onKick((hosts) => {
      // An event for a host with a free slot may be due behind the backlog the guard remembers.
      if (hosts.some((host) => (this.perHost.get(host) ?? 0) < this.config.env.WEBHOOK_CONCURRENCY_PER_HOST))
        this.drained = null;
      void this.fillNow();
    });
    this.poll.start();
    void this.fillNow();
  }

  /** Stops claiming and waits for the deliveries under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.poll.stop();
    await Promise.all(this.sending);
  }

  /**
   * Fills free slots now, or right after the fill under way; resolves when a fill begun after this
   * call has ended (its deliveries started, not finished). Tests that move the clock call it.
   */
  async fillNow(): Promise<void> {
    if (!this.stopped) await this.poll.runNow();
  }

  /**
   * Claims due rows, longest due first, while slots are free, and starts each delivery at once without
   * waiting for it.
   * Rows of a host already at its cap are left for a later fill: the query skips those hosts, so a
   * backlog to one slow receiver does not hide the rows behind it.
   */
  private async fill(): Promise<void> {
    const { WEBHOOK_CONCURRENCY: slots, WEBHOOK_CONCURRENCY_PER_HOST: perHost } = this.config.env;
    while (!this.stopped && this.sending.size < slots) {
      const now = this.clock.now();
      const full = [...this.perHost].filter(([, n]) => n >= perHost).map(([host]) => host);
      if (this.stillDrained(full, now)) return;
      const candidates = await this.dueRows(now, full, slots - this.sending.size);
      if (candidates.length === 0) {
        if (full.length > 0) this.drained = { hosts: new Set(full), at: now.getTime() };
        return;
      }
      let progress = false;
      for (const candidate of candidates) {
        if (this.stopped || this.sending.size >= slots) return;
        // A host that filled up within this batch is skipped by the next query.
        if ((this.perHost.get(candidate.target_host) ?? 0) >= perHost) {
          progress = true;
          continue;
        }
        const claimed = await this.claim(candidate, now);
        if (claimed) {
          this.send(claimed);
          progress = true;
        }
      }
      // Every candidate went to another dispatcher: what is left is the next poll's.
      if (!progress) return;
    }
  }

  private send(delivery: WebhookDeliveryEntity): void {
    const host = delivery.target_host;
    this.perHost.set(host, (this.perHost.get(host) ?? 0) + 1);
    const sent: Promise<void> = this.deliver(delivery)
      .catch((error: Error) =>
        this.logger.warn(`webhook ${delivery.event_id}: delivery failed unexpectedly: ${error.message}`),
      )
      .finally(() => {
        this.sending.delete(sent);
        const left = (this.perHost.get(host) ?? 1) - 1;
        if (left > 0) this.perHost.set(host, left);
        else this.perHost.delete(host);
        void this.fillNow();
      });
    this.sending.add(sent);
  }

  /**
   * Up to `limit` due rows of hosts not `full`, longest due first. Pending rows and rows whose claim ran
   * out are two queries, each walking its index in order and stopping at `limit`: as one query with
   * OR, SQLite gathered every due row and sorted them, for every fill, so a backlog made each fill
   * slower (docs/benchmarks.md#webhook-backlog).
   */
  private async dueRows(now: Date, full: string[], limit: number): Promise<WebhookDeliveryEntity[]> {
    const rows = (where: string, params: object) => {
      const query = this.deliveries.createQueryBuilder('d').where(where, params);
      if (full.length > 0) query.andWhere('d.target_host NOT IN (:...full)', { full });
      return query.orderBy('d.next_attempt_at', 'ASC').addOrderBy('d.id', 'ASC').limit(limit).getMany();
    };
    const pending = await rows('d.status = :pending AND d.next_attempt_at <= :now', {
      pending: 'pending',
      now,
    });
    const stale = await rows('d.status = :delivering AND d.claimed_until < :now', {
      delivering: 'delivering',
      now,
    });
    if (stale.length === 0) return pending;
    const at = (row: WebhookDeliveryEntity) => row.next_attempt_at?.getTime() ?? 0;
    return [...pending, ...stale].sort((a, b) => at(a) - at(b) || a.id - b.id).slice(0, limit);
  }

  /**
   * True while the last query found nothing due beyond hosts at their cap and those hosts are all full
   * again, for up to one poll interval (a kick for another host ends it sooner). A backlog to one slow
   * receiver cannot be skipped by an index: asking again each time one of its deliveries ends and the
   * next one fills its slot walked the whole backlog for every delivery.
   */
  private stillDrained(full: string[], now: Date): boolean {
    const drained = this.drained;
    if (drained === null) return false;
    if (now.getTime() - drained.at >= this.config.env.WEBHOOK_POLL_MS) {
      this.drained = null;
      return false;
    }
    // Nothing was due outside these hosts when it was set, whatever their slots did since.
    for (const host of drained.hosts) if (!full.includes(host)) return false;
    return true;
  }

  /** Due: pending and its time has come, or claimed by a dispatcher whose claim ran out. */
  private due(now: Date, alias = 'd') {
    const col = (name: string) => (alias ? `${alias}.${name}` : name);
    return new Brackets((w) =>
      w
        .where(`(${col('status')} = :pending AND ${col('next_attempt_at')} <= :now)`, {
          pending: 'pending',
          now,
        })
        .orWhere(`(${col('status')} = :delivering AND ${col('claimed_until')} < :now)`, {
          delivering: 'delivering',
          now,
        }),
    );
  }

  /**
   * Claims one due row with a conditional update. A row still 'delivering' under a claim that ran out
   * was being sent by a dispatcher that stopped before it recorded the outcome: that attempt is logged
   * as interrupted (the receiver may have had it) and counted, in the same unit as the claim, and the
   * next attempt goes out with the same webhook-id.
   */
  private async claim(candidate: WebhookDeliveryEntity, now: Date): Promise<WebhookDeliveryEntity | null> {
    const interrupted = candidate.status === 'delivering';
    // The claim outlives one attempt (timeout + margin); after that another dispatcher may take the row.
    const until = new Date(Math.ceil((now.getTime() + this.claimMs) / 1000) * 1000);
    const took = await this.unit.run(async (manager) => {
      const changes: Partial<WebhookDeliveryEntity> = {
        status: 'delivering',
        claimed_by: this.id,
        claimed_until: until,
      };
      if (interrupted) {
        Object.assign(changes, {
          attempts: candidate.attempts + 1,
          // The lost attempt began about one claim's length before its claim ran out.
          first_attempt_at:
            candidate.first_attempt_at ??
            new Date((candidate.claimed_until?.getTime() ?? now.getTime()) - this.claimMs),
          last_attempt_at: now,
          last_status_code: null,
          last_error: INTERRUPTED,
        });
      }
      const result = await manager
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set(changes)
        .where('id = :id AND attempts = :attempts', { id: candidate.id, attempts: candidate.attempts })
        .andWhere(this.due(now, ''))
        .execute();
      if (result.affected !== 1) return null;
      if (interrupted) {
        await manager.insert(WebhookAttemptEntity, {
          delivery_id: candidate.id,
          attempt: candidate.attempts + 1,
          url: '',
          response_code: null,
          duration_ms: 0,
          error: INTERRUPTED,
          outcome: 'interrupted',
          next_attempt_at: now,
        });
      }
      return { ...candidate, ...changes };
    });
    if (took && interrupted) webhookAttempts.inc({ outcome: 'interrupted' });
    return took;
  }

  private get claimMs(): number {
    return this.config.env.WEBHOOK_TIMEOUT_MS + CLAIM_MARGIN_MS;
  }

  private async deliver(delivery: WebhookDeliveryEntity): Promise<void> {
    const project = await this.projects.webhookTarget(delivery.project_id);
    const url = project?.webhook_url ?? null;
    const attempt = delivery.attempts + 1;
    const started = this.clock.nowMs();
    const timer = performance.now();
    let code: number | null = null;
    let error: string | null = null;
    let retryAfter: number | null = null;

    if (!url) {
      error = 'The project no longer has a webhook_url.';
    } else if (!URL.canParse(url)) {
      error = 'The webhook URL is not a valid URL.';
    } else {
      const target = new URL(url);
      error = this.targets.literalRefusal(target);
      if (!error) {
        // Real time, not the clock: the receiver checks it against its own (Standard Webhooks' tolerance).
        const timestamp = Math.floor(Date.now() / 1000);
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'user-agent': 'LicenseGate-Webhooks/1',
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(timestamp),
        };
        const sealed = project?.webhook_secret;
        if (sealed)
          headers['webhook-signature'] = webhookSignature(
            openSecret(this.config.appKey, sealed),
            delivery.event_id,
            timestamp,
            delivery.payload,
          );
        const answer = await postWebhook(target, {
          headers,
          body: delivery.payload,
          timeoutMs: this.config.env.WEBHOOK_TIMEOUT_MS,
          lookup: this.targets.lookup,
        });
        code = answer.status;
        retryAfter = retryAfterSeconds(answer.retryAfter, this.clock.nowMs());
        error = answer.error;
      }
    }

    const ok = error === null;
    const now = this.clock.now();
    let next: Date | null = null;
    let status: WebhookDeliveryEntity['status'] = 'succeeded';
    if (!ok) {
      const base = this.schedule[attempt - 1];
      if (base === undefined) {
        status = 'failed';
        this.logger.warn(
          `webhook ${delivery.event_id} (${delivery.type}) failed after ${attempt} attempts: ${error}`,
        );
      } else {
        status = 'pending';
        // The schedule counts from the first try; a longer Retry-After wins. Rounded up to the next
        // whole second, which every database stores exactly, so no retry comes early.
        const first = (delivery.first_attempt_at ?? new Date(started)).getTime();
        const scheduled = first + base * (0.9 + Math.random() * 0.2) * 1000;
        const at = Math.max(scheduled, now.getTime() + (retryAfter ?? 0) * 1000, now.getTime() + 500);
        next = new Date(Math.ceil(at / 1000) * 1000);
      }
    }
    const outcome = ok ? 'succeeded' : status === 'failed' ? 'failed' : 'retrying';
    // The outcome and its log row land together, and only while the claim is still this dispatcher's:
    // one that stalled past its claim leaves the row to whoever took it over.
    const recorded = await this.unit.run(async (manager) => {
      const result = await manager
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({
          status,
          attempts: attempt,
          next_attempt_at: next,
          first_attempt_at: delivery.first_attempt_at ?? new Date(started),
          last_attempt_at: now,
          last_status_code: code,
          last_error: error?.slice(0, 1000) ?? null,
          claimed_by: null,
          claimed_until: null,
        })
        .where('id = :id AND claimed_by = :me AND attempts = :before', {
          id: delivery.id,
          me: this.id,
          before: delivery.attempts,
        })
        .execute();
      if (result.affected !== 1) return false;
      await manager.insert(WebhookAttemptEntity, {
        delivery_id: delivery.id,
        attempt,
        url: (url ?? '').slice(0, 2048),
        response_code: code,
        duration_ms: Math.round(performance.now() - timer),
        error: error?.slice(0, 1000) ?? null,
        outcome,
        next_attempt_at: next,
      });
      return true;
    });
    if (recorded) {
      webhookAttempts.inc({ outcome });
    } else {
      this.logger.warn(
        `webhook ${delivery.event_id} (${delivery.type}): attempt ${attempt} ended (${error ?? 'succeeded'}) after another dispatcher took the delivery over; not recorded`,
      );
    }
  }
}
