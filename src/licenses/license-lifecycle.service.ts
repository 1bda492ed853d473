import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, Repository } from 'typeorm';
import { PeriodicTask } from '../common/periodic-task.js';
import { JOBS } from '../common/jobs.js';
import { addDays, Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { databaseFailure } from '../database/db-errors.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { ExpiryNotice, LicenseEntity } from './license.entity.js';

/** Licenses looked at per query; a tick goes on until nothing is due. */
const BATCH = 100;

/**
 * Sends license.expiring (LICENSE_EXPIRY_NOTICE_DAYS before expires_at) and license.expired (once it
 * has passed), each once per license and expires_at, through the outbox (docs/decisions.md#webhooks).
 *
 * It claims its work the way the dispatcher claims outbox rows: a conditional UPDATE of the license's
 * expiry_notice that only one caller can win, in the unit of work that records the event. Any number of
 * schedulers — one per instance and per `npm run dispatcher` — may run at once; each notice is sent
 * once. It runs wherever the dispatcher runs (WEBHOOK_DISPATCHER), every LICENSE_EXPIRY_POLL_MS.
 * Revoked licenses and licenses of deleted projects are left alone; a new expires_at (PATCH/PUT)
 * clears expiry_notice, so the new date is announced in its turn.
 */
@Injectable()
export class LicenseLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly task: PeriodicTask;
  private shuttingDown = false;

  constructor(
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    private readonly projects: ProjectsService,
    private readonly projectChanges: ProjectChanges,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {
    this.task = new PeriodicTask({
      ...JOBS.expiryNotices(config.env),
      logger: new Logger('LicenseLifecycle'),
      run: async () => {
        await this.tick();
      },
      lines: {
        failing: (error) => [
          { db: databaseFailure(error) },
          'Expiry notices failing; trying on (logged again once they work)',
        ],
        recovered: 'Expiry notices work again',
      },
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.env.WEBHOOK_DISPATCHER) this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    await this.task.stop();
  }

  /** Sends every notice due at `now` (the clock's); answers how many this call claimed. */
  async tick(now = this.clock.now()): Promise<number> {
    const soon = addDays(now, this.config.env.LICENSE_EXPIRY_NOTICE_DAYS);
    let claimed = 0;
    for (;;) {
      const due = await this.licenses
        .createQueryBuilder('l')
        .innerJoin(ProjectEntity, 'p', 'p.id = l.project_id AND p.deleted_at IS NULL')
        .select(['l.id', 'l.project_id'])
        .where('l.revoked_at IS NULL')
        .andWhere(
          new Brackets((w) =>
            w
              .where('l.expiry_notice IS NULL AND l.expires_at <= :soon', { soon })
              .orWhere("l.expiry_notice = 'expiring' AND l.expires_at <= :now", { now }),
          ),
        )
        .orderBy('l.expires_at', 'ASC')
        .addOrderBy('l.id', 'ASC')
        .limit(BATCH)
        .getMany();
      let progress = false;
      for (const license of due) {
        if (this.shuttingDown) return claimed;
        if (await this.claim(license, now, soon)) {
          claimed++;
          progress = true;
        }
      }
      // Everything found went to another scheduler (or its project just went): the next tick's.
      if (due.length < BATCH || !progress) return claimed;
    }
  }

  /** Claims the notice due for one license and records its event in the same unit; false when another caller has it. */
  private async claim(
    found: Pick<LicenseEntity, 'id' | 'project_id'>,
    now: Date,
    soon: Date,
  ): Promise<boolean> {
    const project = await this.projects.find(found.project_id);
    if (!project) return false;
    return this.projectChanges.run(
      project,
      async (manager) => {
        // Past expires_at only license.expired is sent, also when license.expiring never was.
        const notice =
          (await this.mark(
            manager,
            found.id,
            'expired',
            "(expiry_notice IS NULL OR expiry_notice = 'expiring') AND expires_at <= :now",
            { now },
          )) ??
          (await this.mark(
            manager,
            found.id,
            'expiring',
            'expiry_notice IS NULL AND expires_at > :now AND expires_at <= :soon',
            { now, soon },
          ));
        if (!notice) return { result: false };
        const license = await manager.findOneByOrFail(LicenseEntity, { id: found.id });
        // The service's own notice, not a management write: no audit row.
        return { result: true, events: [[`license.${notice}`, license]] };
      },
      { invalidates: false }, // expiry_notice is in no cache: it is never returned
    );
  }

  /** The conditional update that claims `notice`; updated_at stays (nothing the vendor set has changed). */
  private async mark(
    manager: EntityManager,
    id: number,
    notice: ExpiryNotice,
    condition: string,
    params: Record<string, Date>,
  ): Promise<ExpiryNotice | null> {
    const result = await manager
      .createQueryBuilder()
      .update(LicenseEntity)
      .set({ expiry_notice: notice, updated_at: () => 'updated_at' })
      .where('id = :id AND revoked_at IS NULL', { id })
      .andWhere(condition, params)
      .execute();
    return result.affected === 1 ? notice : null;
  }
}
