import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, QueryDeepPartialEntity, Repository } from 'typeorm';
import { REDACTED } from '../audit/audit-log.service.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { UserEntity } from '../auth/user.entity.js';
import { sealSecret } from '../common/crypto/crypto.js';
import { isUniqueViolation } from '../database/db-errors.js';
import { lockedRow } from '../database/unit-of-work.js';
import {
  ApiError,
  fieldError,
  forbidden,
  notFound,
  PROJECT_LOCKED,
  SLUG_TAKEN,
} from '../common/http/errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import { AppConfig } from '../config/app-config.js';
import { CreateProjectDto, UpdateProjectDto } from './dto/project.dto.js';
import { ProjectEntity } from './project.entity.js';
import { newSigningKeyPair, rawPublicKey } from '../common/crypto/signing.js';
import { WebhookTargets } from '../webhooks/ssrf.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { ALL_EVENTS } from '../webhooks/webhook-events.js';
import { instanceToPlain } from 'class-transformer';

type ProjectEvents = Array<[WebhookEvent, unknown]>;

/** Fields a PUT resets when they are omitted. */
const PROJECT_DEFAULTS = {
  description: null,
  default_redirect_url: null,
  webhook_url: null,
  webhook_secret: null,
  logo_url: null,
  meta: {},
  has_paid: false,
  is_active: true,
  webhook_events: [ALL_EVENTS],
  webhook_enabled: true,
  offline_grace_hours: 72,
};

/** lowercase alpha_dash from a name: 'My Cool App!' → 'my-cool-app'. */
export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 240)
    .replace(/-+$/, '');
  return base || 'project';
}

@Injectable()
export class ProjectsService {
  constructor(
    @InjectRepository(ProjectEntity) private readonly projects: Repository<ProjectEntity>,
    private readonly cursors: Cursors,
    private readonly config: AppConfig,
    private readonly projectChanges: ProjectChanges,
    private readonly targets: WebhookTargets,
  ) {}

  /**
   * The project if this key may act on it. Order: 404 when it does not exist (or was deleted),
   * then 403 for a scoped key of another project or a global key of another owner, then — for
   * writes — 403 while the project is locked.
   */
  async findAccessible(
    principal: ApiPrincipal,
    id: number,
    options: { write?: boolean } = {},
  ): Promise<ProjectEntity> {
    const project = await this.findOr404(id);
    assertAccess(principal, project, options);
    return project;
  }

  /** The project, or null when it does not exist or was deleted. No access check. */
  find(id: number): Promise<ProjectEntity | null> {
    return this.projects.findOneBy({ id });
  }

  /** A project's default_redirect_url, deleted projects included (a refusal of their licenses still redirects). */
  async redirectUrlOf(id: number): Promise<string | null> {
    return (
      (
        await this.projects.findOne({
          where: { id },
          withDeleted: true,
          select: { id: true, default_redirect_url: true },
        })
      )?.default_redirect_url ?? null
    );
  }

  /** The project's Ed25519 private key, sealed with APP_KEY; null when the project does not exist or was deleted. */
  async sealedSigningKey(id: number): Promise<string | null> {
    const row = await this.projects
      .createQueryBuilder('p')
      .select('p.id')
      .addSelect('p.signing_private_key')
      .where('p.id = :id', { id })
      .getOne();
    return row?.signing_private_key ?? null;
  }

  /** Where a project's webhooks go now, and the (sealed) secret that signs them; deleted projects included. */
  webhookTarget(id: number): Promise<Pick<ProjectEntity, 'webhook_url' | 'webhook_secret'> | null> {
    return this.projects
      .createQueryBuilder('p')
      .withDeleted()
      .select(['p.id', 'p.webhook_url'])
      .addSelect('p.webhook_secret')
      .where('p.id = :id', { id })
      .getOne();
  }

  /** The project (not deleted) or 404, without an access check: callers check access themselves. */
  async findOr404(id: number): Promise<ProjectEntity> {
    const project = await this.projects.findOneBy({ id });
    if (!project) throw notFound('Project');
    return project;
  }

  /** The plan limit is enforced before validation (docs/decisions.md#projects), so a guard checks it too. */
  async assertBelowProjectLimit(user: UserEntity): Promise<void> {
    if (user.max_projects === null || user.max_projects === undefined) return;
    if ((await this.projects.countBy({ user_id: user.id })) >= user.max_projects)
      throw projectLimitReached(user.max_projects);
  }

  /**
   * One unit of work: the plan-limit count, the insert and the `project.created` outbox row land
   * together, and the owner's row is locked (MySQL) or the connection owned (SQLite) meanwhile, so
   * racing creates can never exceed the limit.
   */
  async create(principal: ApiPrincipal, dto: CreateProjectDto): Promise<ProjectEntity> {
    await this.assertWebhookTarget(dto.webhook_url);
    const keys = newSigningKeyPair(this.config.appKey);
    const user = principal.user;
    for (let attempt = 0; ; attempt++) {
      const slug = dto.slug ?? (await this.freeSlug(slugify(dto.name)));
      if (dto.slug && (await this.projects.exists({ where: { slug }, withDeleted: true })))
        throw fieldError('slug', SLUG_TAKEN);
      const values = {
        ...PROJECT_DEFAULTS,
        ...this.writable(dto),
        user_id: user.id,
        license_key_id: null,
        slug,
        locked_at: null,
        lock_reason: null,
        signing_public_key: keys.publicPem,
        signing_private_key: keys.sealedPrivate,
      };
      try {
        return await this.projectChanges.runNewProject(user.id, async (manager) => {
          if (
            user.max_projects !== null &&
            (await manager.countBy(ProjectEntity, { user_id: user.id })) >= user.max_projects
          ) {
            throw projectLimitReached(user.max_projects);
          }
          const result = await manager.insert(ProjectEntity, values);
          const project = await manager.findOneByOrFail(ProjectEntity, {
            id: result.identifiers[0].id as number,
          });
          const also = dto.webhook_secret
            ? { webhook_secret: [null, REDACTED] as [null, string] }
            : undefined;
          return {
            result: project,
            events: [['project.created', project]],
            audit: { action: 'project.created', before: null, after: project, also },
          };
        });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        // A racing create took the slug between our check and our insert.
        if (dto.slug || attempt >= 4) throw fieldError('slug', SLUG_TAKEN);
      }
    }
  }

  list(principal: ApiPrincipal, query: CursorQueryDto): Promise<CursorPage<ProjectEntity>> {
    const qb = this.projects.createQueryBuilder('p').where('p.user_id = :user', { user: principal.user.id });
    if (principal.projectId !== null) qb.andWhere('p.id = :id', { id: principal.projectId });
    // A member limited to some projects lists those (0 matches no row: IN () is not SQL).
    if (principal.projectIds !== null)
      qb.andWhere('p.id IN (:...ids)', { ids: principal.projectIds.length ? principal.projectIds : [0] });
    const scope = `projects:${principal.user.id}:${principal.projectId ?? '*'}:${principal.projectIds?.join(',') ?? '*'}`;
    return this.cursors.page(qb, scope, query, { defaultPerPage: 20, order: 'DESC' });
  }

  /** PATCH (partial) or PUT (full replace: omitted optional fields return to their defaults). */
  async update(project: ProjectEntity, dto: UpdateProjectDto, replace: boolean): Promise<ProjectEntity> {
    if (dto.name === null) throw fieldError('name', 'The name field is required.');
    const changes: Partial<ProjectEntity> = { ...(replace ? PROJECT_DEFAULTS : {}), ...this.writable(dto) };
    // A manual change of has_paid ends a payment grace (docs/payments.md).
    if (changes.has_paid !== undefined) changes.grace_until = null;
    if (dto.slug && dto.slug !== project.slug) {
      if (await this.projects.exists({ where: { slug: dto.slug }, withDeleted: true }))
        throw fieldError('slug', SLUG_TAKEN);
      changes.slug = dto.slug;
    }
    await this.assertWebhookTarget(changes.webhook_url);
    return await this.projectChanges.run(project, async (manager) => {
      const before = await lockedRow(manager, ProjectEntity, project.id);
      // The secret is never read back: the audit row says whether one was set, before and after.
      const secret =
        'webhook_secret' in changes
          ? [
              (await hasWebhookSecret(manager, project.id)) ? REDACTED : null,
              changes.webhook_secret ? REDACTED : null,
            ]
          : null;
      const also = secret ? { webhook_secret: secret as [unknown, unknown] } : undefined;
      await manager.update(
        ProjectEntity,
        { id: project.id },
        changes as QueryDeepPartialEntity<ProjectEntity>,
      );
      const after = await manager.findOneByOrFail(ProjectEntity, { id: project.id });
      const events: ProjectEvents = [['project.updated', after]];
      if (after.has_paid !== before.has_paid)
        events.push([after.has_paid ? 'project.paid' : 'project.unpaid', after]);
      return {
        result: after,
        events,
        project: after,
        audit: { action: 'project.updated', before, after, also },
      };
    });
  }

  async remove(project: ProjectEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      // Of racing deletes one goes on and the others find it gone (404): one event.
      const before = await lockedRow(manager, ProjectEntity, project.id);
      await manager.softDelete(ProjectEntity, { id: project.id });
      return {
        result: undefined,
        events: [['project.deleted', { id: before.id, name: before.name, slug: before.slug }]],
        audit: { action: 'project.deleted', before, after: null },
      };
    });
  }

  async setLock(project: ProjectEntity, locked: boolean, reason?: string | null): Promise<ProjectEntity> {
    return this.projectChanges.run(project, async (manager) => {
      const before = await lockedRow(manager, ProjectEntity, project.id);
      const changes = locked
        ? { locked_at: before.locked_at ?? new Date(), lock_reason: reason ?? before.lock_reason ?? null }
        : { locked_at: null, lock_reason: null };
      await manager.update(ProjectEntity, { id: project.id }, changes);
      const after = await manager.findOneByOrFail(ProjectEntity, { id: project.id });
      const changed = Boolean(before.locked_at) !== locked;
      const event = locked ? 'project.locked' : 'project.unlocked';
      return {
        result: after,
        events: changed ? [[event, { ...instanceToPlain(after), reason: after.lock_reason }]] : [],
        audit: { action: event, before, after, also: { reason: [before.lock_reason, after.lock_reason] } },
      };
    });
  }

  /** A webhook_url on a loopback, private or link-local address is refused on write (docs/decisions.md#webhooks). */
  private async assertWebhookTarget(url: string | null | undefined): Promise<void> {
    if (!url) return;
    const problem = await this.targets.refusal(url);
    if (problem)
      throw fieldError(
        'webhook_url',
        `The webhook url ${problem}; set WEBHOOK_ALLOW_PRIVATE=true to allow it.`,
      );
  }

  signingKey(project: ProjectEntity) {
    return {
      algorithm: 'Ed25519',
      public_key_pem: project.signing_public_key,
      public_key: rawPublicKey(project.signing_public_key),
    };
  }

  /** The DTO fields that map straight onto columns; the webhook secret is sealed with APP_KEY. */
  private writable(dto: UpdateProjectDto): Partial<ProjectEntity> {
    const out: Partial<ProjectEntity> = {};
    for (const field of [
      'name',
      'description',
      'default_redirect_url',
      'webhook_url',
      'logo_url',
      'has_paid',
      'is_active',
      'offline_grace_hours',
    ] as const) {
      if (dto[field] !== undefined && !(field === 'name' && dto[field] === null))
        (out as Record<string, unknown>)[field] = dto[field];
    }
    if (dto.meta !== undefined) out.meta = dto.meta ?? {};
    if (dto.webhook_events !== undefined)
      out.webhook_events = dto.webhook_events ? [...new Set(dto.webhook_events)] : [ALL_EVENTS];
    if (dto.webhook_enabled !== undefined) out.webhook_enabled = dto.webhook_enabled;
    if (dto.webhook_secret !== undefined)
      out.webhook_secret = dto.webhook_secret ? sealSecret(this.config.appKey, dto.webhook_secret) : null;
    return out;
  }

  /** `base`, else `base-2`, `base-3`, … — counting deleted projects too, whose slugs stay reserved. */
  private async freeSlug(base: string): Promise<string> {
    const rows: { slug: string }[] = await this.projects
      .createQueryBuilder('p')
      .withDeleted()
      .select('p.slug', 'slug')
      .where('p.slug = :base OR p.slug LIKE :pattern', {
        base,
        pattern: `${base.replace(/[\\%_]/g, '\\$&')}-%`,
      })
      .getRawMany();
    const taken = new Set(rows.map((r) => r.slug));
    if (!taken.has(base)) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
  }
}

/** Whether the project has a webhook secret (a column never read with the row). */
async function hasWebhookSecret(manager: EntityManager, id: number): Promise<boolean> {
  const row = await manager
    .createQueryBuilder(ProjectEntity, 'p')
    .withDeleted()
    .select('p.id')
    .addSelect('p.webhook_secret')
    .where('p.id = :id', { id })
    .getOne();
  return Boolean(row?.webhook_secret);
}

const projectLimitReached = (max: number) =>
  new ApiError(
    HttpStatus.FORBIDDEN,
    `Project limit reached: your plan allows ${max} project${max === 1 ? '' : 's'}.`,
  );

export const NOT_YOUR_PROJECT = 'Your membership does not include this project.';

/** A scoped key acts only on its project; a global key only on its owner's projects (docs/decisions.md#accounts-and-api-keys). */
export function assertAccess(
  principal: ApiPrincipal,
  project: ProjectEntity,
  options: { write?: boolean } = {},
): void {
  if (principal.projectId !== null && principal.projectId !== project.id) {
    throw forbidden('This API key is scoped to another project.');
  }
  if (principal.projectIds !== null && !principal.projectIds.includes(project.id))
    throw forbidden(NOT_YOUR_PROJECT);
  if (project.user_id !== principal.user.id)
    throw forbidden('This API key does not belong to the owner of this project.');
  if (options.write && project.locked_at) throw forbidden(PROJECT_LOCKED);
}
