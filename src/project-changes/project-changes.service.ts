import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Audit, AuditLog } from '../audit/audit-log.service.js';
import { UserEntity } from '../auth/user.entity.js';
import { ProjectGenerations } from '../common/cache/generations.js';
import { UnitOfWork, writeLocked } from '../database/unit-of-work.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service.js';

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

/**
 * The write contract (docs/architecture.md#units-of-work): every change in a project runs here, in one
 * unit of work (one transaction) with its audit row and its outbox rows, and then makes the
 * project's cached rows stale on every instance (common/cache/generations.ts).
 */
@Injectable()
export class ProjectChanges {
  constructor(
    private readonly unit: UnitOfWork,
    private readonly audits: AuditLog,
    private readonly outbox: WebhookOutbox,
    private readonly generations: ProjectGenerations,
  ) {}

  /**
   * Runs a change and records its audit row and the events it returns in the same unit of work, then
   * bumps the project's generation and wakes the dispatcher. `work` gets the unit's EntityManager.
   * `invalidates: false` for a change no cache holds (a usage count), which leaves the caches alone;
   * a change that answers `unchanged` leaves them alone too. Both matter on the runtime routes, where
   * a license holder could otherwise make every instance drop the project's cached answers at will.
   */
  async run<T>(
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
        recorded = await this.record(manager, change.project ?? project, change);
        // Instances without Redis learn of the write from the project's change counter (common/cache/generations.ts).
        if (invalidates && !unchanged) seq = await this.generations.recordChange(manager, project.id);
        return change.result;
      });
      if (recorded > 0) this.outbox.dispatchSoon();
      return result;
    } finally {
      // Also after a failure: its COMMIT may have landed unanswered.
      if (invalidates && !unchanged) await this.generations.bump(project.id, seq);
    }
  }

  /**
   * Like run(), for a project that does not exist yet (`result` is the new project): serialises the
   * owner's writes (a row lock on MySQL) so that counts taken inside the unit stay true until it
   * commits. Nothing can have cached the new project, so no generation is bumped.
   */
  async runNewProject<T extends ProjectEntity>(
    ownerId: number,
    work: (manager: EntityManager) => Promise<ProjectChange<T>>,
  ): Promise<T> {
    let recorded = 0;
    const result = await this.unit.run(async (manager) => {
      await writeLocked(
        manager.createQueryBuilder(UserEntity, 'u').select('u.id').where('u.id = :id', { id: ownerId }),
      ).getOne();
      const change = await work(manager);
      recorded = await this.record(manager, change.project ?? change.result, change);
      return change.result;
    });
    if (recorded > 0) this.outbox.dispatchSoon();
    return result;
  }

  /** The audit row, then the outbox rows; answers how many events were queued. */
  private async record(
    manager: EntityManager,
    project: ProjectEntity,
    change: ProjectChange<unknown>,
  ): Promise<number> {
    await this.audits.record(manager, { owner_id: project.user_id, project_id: project.id }, change.audit);
    return this.outbox.record(manager, project, change.events ?? []);
  }
}
