import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Brackets, DataSource, Repository } from 'typeorm';
import { openSecret } from '../common/crypto.js';
import { databaseFailure } from '../common/db-errors.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AppConfig } from '../config/app-config.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { privateTarget } from './ssrf.js';
import { webhookAttempts } from '../metrics/metrics.js';
import { webhookSignature } from './signature.js';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookOutbox } from './webhook-outbox.service.js';

const PARALLEL = 5;
const CLAIM_MARGIN_MS = 5000;
const INTERRUPTED = 'Interrupted: the dispatcher sending it stopped before recording the outcome (the receiver may have received it).';

/** Seconds from a Retry-After header (delta-seconds or HTTP date), or null. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/**
 * Delivers the outbox (SPEC 10). Rows are claimed one by one with a conditional UPDATE, so two
 * dispatchers — in one process or many, on one database — never send the same attempt twice. A claim
 * expires, so a dispatcher that dies mid-delivery loses nothing: another one takes the row over.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly logger = new Logger('WebhookDispatcher');
  private readonly schedule: number[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    private readonly outbox: WebhookOutbox,
    private readonly config: AppConfig,
    private readonly unit: UnitOfWork,
  ) {
    this.schedule = config.env.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number);
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
    this.outbox.onKick(() => this.kick());
    this.kick();
  }

  /** Stops polling and waits for the deliveries under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Runs a pass now (or right after the current one). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.pass()
      .then(
        () => this.passed(null),
        (error: unknown) => this.passed(error),
      )
      .finally(() => {
        this.running = null;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else {
          this.timer = setTimeout(() => this.kick(), this.config.env.WEBHOOK_POLL_MS);
          this.timer.unref();
        }
      });
  }

  private failing = false;

  /**
   * Logs the first failed pass of a run of them (the database away: every poll fails until it is
   * back) and the first pass that works again, not every poll in between.
   */
  private passed(error: unknown): void {
    if (error !== null && !this.failing) this.logger.warn({ db: databaseFailure(error) }, 'Webhook dispatch failing; polling on (logged again once it works)');
    if (error === null && this.failing) this.logger.log('Webhook dispatch works again');
    this.failing = error !== null;
  }

  /**
   * One pass: claim what is due, a few rows at a time, and deliver them. Only as many rows are
   * claimed as are sent at once, so no claim can run out while its row waits for its turn.
   */
  async pass(): Promise<void> {
    for (;;) {
      const claimed = await this.claim();
      if (claimed.length === 0) return;
      await Promise.all(claimed.map((d) => this.deliver(d)));
      if (this.stopped) return;
    }
  }

  /** Due: pending and its time has come, or claimed by a dispatcher whose claim ran out. */
  private due(now: Date, alias = 'd') {
    const col = (name: string) => (alias ? `${alias}.${name}` : name);
    return new Brackets((w) =>
      w
        .where(`(${col('status')} = :pending AND ${col('next_attempt_at')} <= :now)`, { pending: 'pending', now })
        .orWhere(`(${col('status')} = :delivering AND ${col('claimed_until')} < :now)`, { delivering: 'delivering', now }),
    );
  }

  /**
   * Claims what is due, row by row, with a conditional update. A row still 'delivering' under a claim
   * that ran out was being sent by a dispatcher that stopped before it recorded the outcome: that
   * attempt is logged as interrupted (the receiver may have had it) and counted, in the same unit as
   * the claim, and the next attempt goes out with the same webhook-id.
   */
  private async claim(): Promise<WebhookDeliveryEntity[]> {
    const now = new Date();
    const candidates = await this.deliveries.createQueryBuilder('d').where(this.due(now)).orderBy('d.id', 'ASC').limit(PARALLEL).getMany();
    const claimed: WebhookDeliveryEntity[] = [];
    // The claim outlives one attempt (timeout + margin); after that another dispatcher may take the row.
    const until = new Date(Math.ceil((now.getTime() + this.claimMs) / 1000) * 1000);
    for (const candidate of candidates) {
      const interrupted = candidate.status === 'delivering';
      const took = await this.unit.run(async (manager) => {
        const changes: Partial<WebhookDeliveryEntity> = { status: 'delivering', claimed_by: this.id, claimed_until: until };
        if (interrupted) {
          Object.assign(changes, {
            attempts: candidate.attempts + 1,
            // The lost attempt began about one claim's length before its claim ran out.
            first_attempt_at: candidate.first_attempt_at ?? new Date((candidate.claimed_until?.getTime() ?? now.getTime()) - this.claimMs),
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
        return { ...candidate, ...changes } as WebhookDeliveryEntity;
      });
      if (took) {
        if (interrupted) webhookAttempts.inc({ outcome: 'interrupted' });
        claimed.push(took);
      }
    }
    return claimed;
  }

  private get claimMs(): number {
    return this.config.env.WEBHOOK_TIMEOUT_MS + CLAIM_MARGIN_MS;
  }

  private async deliver(delivery: WebhookDeliveryEntity): Promise<void> {
    const project = await this.dataSource
      .getRepository(ProjectEntity)
      .createQueryBuilder('p')
      .withDeleted()
      .addSelect('p.webhook_secret')
      .where('p.id = :id', { id: delivery.project_id })
      .getOne();
    const url = project?.webhook_url ?? null;
    const attempt = delivery.attempts + 1;
    const started = Date.now();
    let code: number | null = null;
    let error: string | null = null;
    let retryAfter: number | null = null;

    if (!url) {
      error = 'The project no longer has a webhook_url.';
    } else {
      const blocked = this.config.env.WEBHOOK_ALLOW_PRIVATE ? null : await privateTarget(url);
      if (blocked) {
        error = `Refused: the webhook URL ${blocked} (set WEBHOOK_ALLOW_PRIVATE=true to allow).`;
      } else {
        const timestamp = Math.floor(Date.now() / 1000);
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'user-agent': 'LicenseGate-Webhooks/1',
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(timestamp),
        };
        const sealed = project?.webhook_secret;
        if (sealed) headers['webhook-signature'] = webhookSignature(openSecret(this.config.appKey, sealed), delivery.event_id, timestamp, delivery.payload);
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers,
            body: delivery.payload,
            redirect: 'manual',
            signal: AbortSignal.timeout(this.config.env.WEBHOOK_TIMEOUT_MS),
          });
          code = response.status;
          retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
          await response.body?.cancel().catch(() => undefined);
          if (code < 200 || code >= 300) error = `HTTP ${code}`;
        } catch (e) {
          const err = e as Error & { cause?: { code?: string } };
          error = err.name === 'TimeoutError' ? `Timed out after ${this.config.env.WEBHOOK_TIMEOUT_MS} ms` : `${err.message}${err.cause?.code ? ` (${err.cause.code})` : ''}`;
        }
      }
    }

    const ok = error === null;
    const now = new Date();
    let next: Date | null = null;
    let status: WebhookDeliveryEntity['status'] = 'succeeded';
    if (!ok) {
      const base = this.schedule[attempt - 1];
      if (base === undefined) {
        status = 'failed';
        this.logger.warn(`webhook ${delivery.event_id} (${delivery.type}) failed after ${attempt} attempts: ${error}`);
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
        .where('id = :id AND claimed_by = :me AND attempts = :before', { id: delivery.id, me: this.id, before: delivery.attempts })
        .execute();
      if (result.affected !== 1) return false;
      await manager.insert(WebhookAttemptEntity, {
        delivery_id: delivery.id,
        attempt,
        url: (url ?? '').slice(0, 2048),
        response_code: code,
        duration_ms: Date.now() - started,
        error: error?.slice(0, 1000) ?? null,
        outcome,
        next_attempt_at: next,
      });
      return true;
    });
    if (recorded) {
      webhookAttempts.inc({ outcome });
    } else {
      this.logger.warn(`webhook ${delivery.event_id} (${delivery.type}): attempt ${attempt} ended (${error ?? 'succeeded'}) after another dispatcher took the delivery over; not recorded`);
    }
  }
}
