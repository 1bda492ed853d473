import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { Actor, inAuditContext } from '../audit/audit-context.js';
import { JOBS } from '../common/jobs.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { Clock, wholeSecond } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentEventEntity } from './payment-event.entity.js';

/** Rows looked at per query; a run goes on until nothing is due. */
const BATCH = 100;

type Kind = 'project' | 'domain' | 'license';
const TABLES = { project: ProjectEntity, domain: DomainEntity, license: LicenseEntity } as const;

/**
 * Closes the gate when a payment grace ends (docs/payments.md): a project's or domain's has_paid
 * becomes false, a license from an order is revoked, each exactly once across instances.
 *
 * It claims its work as the dispatcher and LicenseLifecycle do: a conditional UPDATE (grace_until
 * still set and passed, the row still paid or not revoked) that only one caller can win, in the unit
 * of work that records its audit row and events. It runs wherever the dispatcher runs
 * (WEBHOOK_DISPATCHER), every PAYMENT_GRACE_POLL_MS.
 */
@Injectable()
export class PaymentGrace implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly task: PeriodicTask;

  constructor(
    @InjectRepository(ProjectEntity) private readonly projectRows: Repository<ProjectEntity>,
    @InjectRepository(PaymentEventEntity) private readonly events: Repository<PaymentEventEntity>,
    @InjectRepository(PaymentConnectorEntity)
    private readonly connectors: Repository<PaymentConnectorEntity>,
    private readonly projects: ProjectsService,
    private readonly projectChanges: ProjectChanges,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {
    this.task = new PeriodicTask({
      ...JOBS.paymentGraces(config.env),
      logger: new Logger('PaymentGrace'),
      run: async () => {
        await this.tick();
      },
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.env.WEBHOOK_DISPATCHER) this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /** Closes every grace ended at the clock's now; answers how many this call claimed. */
  async tick(): Promise<number> {
    const now = wholeSecond(this.clock.now());
    let claimed = 0;
    for (const kind of ['project', 'domain', 'license'] as const) {
      for (;;) {
        const due = await this.due(kind, now);
        let progress = false;
        for (const row of due) {
          if (await this.claim(kind, row, now)) {
            claimed++;
            progress = true;
          }
        }
        // Everything found went to another scheduler: the next run's.
        if (due.length < BATCH || !progress) break;
      }
    }
    return claimed;
  }

  private due(kind: Kind, now: Date): Promise<Array<{ id: number; project_id: number }>> {
    const qb = this.projectRows.manager
      .createQueryBuilder(TABLES[kind], 'r')
      .where('r.grace_until IS NOT NULL AND r.grace_until <= :now', { now })
      .orderBy('r.grace_until', 'ASC')
      .addOrderBy('r.id', 'ASC')
      .limit(BATCH);
    if (kind === 'project') qb.select(['r.id']).andWhere('r.has_paid = 1');
    // Rows of deleted projects are left alone (and must not fill every batch ahead of the others).
    if (kind !== 'project')
      qb.innerJoin(ProjectEntity, 'p', 'p.id = r.project_id AND p.deleted_at IS NULL').select([
        'r.id',
        'r.project_id',
      ]);
    if (kind === 'domain') qb.andWhere('r.has_paid = 1');
    if (kind === 'license') qb.andWhere("r.revoked_at IS NULL AND (r.billing = 'project' OR r.has_paid = 1)");
    return qb.getMany().then((rows) =>
      rows.map((row) => ({
        id: row.id,
        project_id: kind === 'project' ? row.id : (row as unknown as DomainEntity).project_id,
      })),
    );
  }

  /** Claims one ended grace and records its change in the same unit; false when another caller has it. */
  private async claim(kind: Kind, found: { id: number; project_id: number }, now: Date): Promise<boolean> {
    const project = await this.projects.find(found.project_id);
    if (!project) return false;
    const actor = await this.actorOf(kind, found.id);
    return inAuditContext({ actor, request_id: null, ip: null, user_agent: null }, () =>
      this.projectChanges.run(project, async (manager) => {
        const before = await manager.findOneBy(TABLES[kind], { id: found.id });
        // A license that carries its own payment is never revoked by payment: its has_paid becomes false.
        const own = kind === 'license' && (before as LicenseEntity | null)?.billing === 'license';
        if (!before || !(await this.mark(manager, own ? 'own' : kind, found.id, now)))
          return { result: false, unchanged: true, audit: [] };
        const after = await manager.findOneByOrFail(TABLES[kind], { id: found.id });
        if (own)
          return {
            result: true,
            events: [
              ['license.updated', after],
              ['license.unpaid', after],
            ],
            audit: { action: 'license.unpaid', before, after },
          };
        const action = kind === 'license' ? 'license.revoked' : (`${kind}.unpaid` as const);
        const events: Array<[typeof action | `${Kind}.updated`, unknown]> =
          kind === 'license'
            ? [[action, after]]
            : [
                [`${kind}.updated`, after],
                [action, after],
              ];
        return { result: true, events, audit: { action, before, after } };
      }),
    );
  }

  /** The conditional update that claims the row. */
  private async mark(manager: EntityManager, kind: Kind | 'own', id: number, now: Date): Promise<boolean> {
    const qb =
      kind === 'own'
        ? manager
            .createQueryBuilder()
            .update(LicenseEntity)
            .set({ has_paid: false, grace_until: null })
            .where("billing = 'license' AND has_paid = 1 AND revoked_at IS NULL")
        : kind === 'license'
          ? manager
              .createQueryBuilder()
              .update(LicenseEntity)
              .set({ revoked_at: now, revoked_by: 'payment', grace_until: null })
              .where("revoked_at IS NULL AND billing = 'project'")
          : manager
              .createQueryBuilder()
              .update(TABLES[kind as Kind] as typeof ProjectEntity)
              .set({ has_paid: false, grace_until: null })
              .where('has_paid = 1');
    const result = await qb
      .andWhere('id = :id AND grace_until IS NOT NULL AND grace_until <= :now', { id, now })
      .execute();
    return result.affected === 1;
  }

  /**
   * The audit row's actor: the connector whose unpaid event started the grace (the latest applied event
   * on the target; for a license, the project's connector of its provider), null ids once it is gone.
   */
  private async actorOf(kind: Kind, id: number): Promise<Actor> {
    let provider: string | null = null;
    let connectorId: number | null = null;
    if (kind === 'license') {
      const license = await this.projectRows.manager.findOne(LicenseEntity, {
        where: { id },
        select: { id: true, project_id: true, payment_provider: true },
      });
      provider = license?.payment_provider ?? null;
      if (license && provider) {
        const connector = await this.connectors.findOne({
          where: { project_id: license.project_id, provider: provider as PaymentConnectorEntity['provider'] },
          order: { id: 'DESC' },
        });
        connectorId = connector?.id ?? null;
      }
    } else {
      const event = await this.events.findOne({
        where: { target_kind: kind, target_id: id, outcome: 'applied' },
        order: { id: 'DESC' },
      });
      if (event) {
        connectorId = event.connector_id;
        provider = (await this.connectors.findOneBy({ id: event.connector_id }))?.provider ?? null;
      }
    }
    return {
      type: 'payment',
      api_key_id: null,
      api_key_prefix: null,
      user_id: null,
      provider,
      connector_id: connectorId,
    };
  }
}
