import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ApiError, fieldError, notFound } from '../common/http/errors.js';
import { violatesUnique } from '../database/db-errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import { lockedRow, writeLocked } from '../database/unit-of-work.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { PaymentConnectorEntity } from '../payments/payment-connector.entity.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { CreatePlanDto, UpdatePlanDto } from './dto/plan.dto.js';
import { PlanEntity } from './plan.entity.js';

const codeTaken = (code: string) =>
  new ApiError(HttpStatus.CONFLICT, `The code "${code}" is already taken by another plan of this project.`, {
    code: ['The code has already been taken.'],
  });

/** The plans of a project (docs/plans.md): what licenses on them are entitled to. */
@Injectable()
export class PlansService {
  constructor(
    @InjectRepository(PlanEntity) private readonly plans: Repository<PlanEntity>,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
  ) {}

  list(project: ProjectEntity, query: CursorQueryDto): Promise<CursorPage<PlanEntity>> {
    const qb = this.plans.createQueryBuilder('p').where('p.project_id = :project', { project: project.id });
    return this.cursors.page(qb, `plans:${project.id}`, query, { defaultPerPage: 50, order: 'ASC' });
  }

  async get(project: ProjectEntity, id: number): Promise<PlanEntity> {
    const plan = await this.plans.findOneBy({ id, project_id: project.id });
    if (!plan) throw notFound('Plan');
    return plan;
  }

  /** A plan by id, whatever its project, or null (the runtime lookup; a license's plan). */
  find(id: number): Promise<PlanEntity | null> {
    return this.plans.findOneBy({ id });
  }

  /** The plans of these ids, by id. */
  async byIds(ids: number[]): Promise<Map<number, PlanEntity>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await this.plans
      .createQueryBuilder('p')
      .where('p.id IN (:...ids)', { ids: unique })
      .getMany();
    return new Map(rows.map((p) => [p.id, p]));
  }

  async create(project: ProjectEntity, dto: CreatePlanDto): Promise<PlanEntity> {
    if (await this.plans.existsBy({ project_id: project.id, code: dto.code })) throw codeTaken(dto.code);
    return this.unique(dto.code, () =>
      this.projectChanges.run(project, async (manager) => {
        const result = await manager.insert(PlanEntity, {
          project_id: project.id,
          code: dto.code,
          name: dto.name,
          entitlements: dto.entitlements ?? {},
          max_domains: dto.max_domains ?? null,
          max_subdomains_per_domain: dto.max_subdomains_per_domain ?? null,
          max_usage_per_day: dto.max_usage_per_day ?? null,
        });
        const plan = await manager.findOneByOrFail(PlanEntity, { id: result.identifiers[0].id as number });
        return {
          result: plan,
          events: [['plan.created', plan]],
          audit: { action: 'plan.created', before: null, after: plan },
        };
      }),
    );
  }

  /** PATCH: only the fields sent. `entitlements` sent replaces the whole object. */
  async update(project: ProjectEntity, plan: PlanEntity, dto: UpdatePlanDto): Promise<PlanEntity> {
    const changes: Partial<PlanEntity> = {};
    for (const field of ['code', 'name', 'entitlements'] as const) {
      if (dto[field] === null) throw fieldError(field, `The ${field} field is required.`);
      if (dto[field] !== undefined) (changes as Record<string, unknown>)[field] = dto[field];
    }
    for (const field of ['max_domains', 'max_subdomains_per_domain', 'max_usage_per_day'] as const)
      if (dto[field] !== undefined) changes[field] = dto[field] ?? null;
    if (changes.code !== undefined && changes.code !== plan.code) {
      const same = await this.plans.findOneBy({ project_id: project.id, code: changes.code });
      if (same && same.id !== plan.id) throw codeTaken(changes.code);
    }
    return this.unique(changes.code ?? plan.code, () =>
      this.projectChanges.run(project, async (manager) => {
        const before = await lockedRow(manager, PlanEntity, plan.id);
        if (Object.keys(changes).length > 0) await manager.update(PlanEntity, { id: plan.id }, changes);
        const after = await manager.findOneByOrFail(PlanEntity, { id: plan.id });
        return {
          result: after,
          events: [['plan.updated', after]],
          audit: { action: 'plan.updated', before, after },
        };
      }),
    );
  }

  /** Refused (409) while licenses use the plan or connectors' products name it; counted as committed, under the plan's row lock. */
  async remove(project: ProjectEntity, plan: PlanEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      const before = await lockedRow(manager, PlanEntity, plan.id);
      const using = await writeLocked(
        manager.createQueryBuilder(LicenseEntity, 'l').where('l.plan_id = :id', { id: plan.id }),
      ).getCount();
      if (using > 0)
        throw new ApiError(
          HttpStatus.CONFLICT,
          `The plan cannot be deleted: ${using} license${using === 1 ? ' is' : 's are'} on it.`,
        );
      const connectors = await writeLocked(
        manager
          .createQueryBuilder(PaymentConnectorEntity, 'c')
          .where('c.project_id = :project', { project: project.id }),
      ).getMany();
      const naming = connectors.filter((c) =>
        (c.products ?? []).some((p) => typeof p !== 'string' && p.plan === before.code),
      ).length;
      if (naming > 0)
        throw new ApiError(
          HttpStatus.CONFLICT,
          `The plan cannot be deleted: ${naming} payment connector${naming === 1 ? ' names it in its' : 's name it in their'} products.`,
        );
      await manager.delete(PlanEntity, { id: plan.id });
      return {
        result: undefined,
        events: [['plan.deleted', before]],
        audit: { action: 'plan.deleted', before, after: null },
      };
    });
  }

  /** A write that raced another to the same code: 409, as the check before it would have said. */
  private async unique<T>(code: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (violatesUnique(error, 'uq_plans_project_code', 'plans.project_id, plans.code'))
        throw codeTaken(code);
      throw error;
    }
  }
}
