import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { lockedRow, writeLocked } from '../database/unit-of-work.js';
import { normalizeDomain } from '../common/net/domain-name.js';
import { DOMAIN_TAKEN, fieldError, notFound } from '../common/http/errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import type { Audit } from '../audit/audit-log.service.js';
import { LicenseActivationEntity } from '../licenses/license-usage.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { DomainEntity } from './domain.entity.js';
import { CreateDomainDto, UpdateDomainDto } from './dto/domain.dto.js';

const DOMAIN_DEFAULTS = { has_paid: false, is_active: true, is_primary: false } as const;
const DOMAIN_INVALID =
  'The domain must be a host name such as shop.example.com: no scheme, port, path, IP address or wildcard.';

@Injectable()
export class DomainsService {
  constructor(
    @InjectRepository(DomainEntity) private readonly domains: Repository<DomainEntity>,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
  ) {}

  list(project: ProjectEntity, query: CursorQueryDto): Promise<CursorPage<DomainEntity>> {
    const qb = this.domains.createQueryBuilder('d').where('d.project_id = :project', { project: project.id });
    return this.cursors.page(qb, `domains:${project.id}`, query, { defaultPerPage: 50, order: 'ASC' });
  }

  /** Whether `id` is a domain of the project. */
  exists(projectId: number, id: number): Promise<boolean> {
    return this.domains.existsBy({ id, project_id: projectId });
  }

  /** The project's active domains (what runtime checks match a calling domain against). */
  active(projectId: number): Promise<DomainEntity[]> {
    return this.domains.findBy({ project_id: projectId, is_active: true });
  }

  /** A domain by id, whatever its project or state (a license's pinned domain). */
  find(id: number): Promise<DomainEntity | null> {
    return this.domains.findOneBy({ id });
  }

  async get(project: ProjectEntity, id: number): Promise<DomainEntity> {
    const domain = await this.domains.findOneBy({ id, project_id: project.id });
    if (!domain) throw notFound('Domain');
    return domain;
  }

  async create(project: ProjectEntity, dto: CreateDomainDto): Promise<DomainEntity> {
    const name = this.normalize(dto.domain);
    if (await this.domains.existsBy({ project_id: project.id, domain: name }))
      throw fieldError('domain', DOMAIN_TAKEN);
    return await this.projectChanges.run(project, async (manager) => {
      const result = await manager.insert(DomainEntity, {
        ...DOMAIN_DEFAULTS,
        ...pickFlags(dto),
        is_primary: false,
        project_id: project.id,
        domain: name,
      });
      const id = result.identifiers[0].id as number;
      if (dto.is_primary) await makePrimary(manager, project.id, id);
      const domain = await manager.findOneByOrFail(DomainEntity, { id });
      return {
        result: domain,
        events: [['domain.created', domain]],
        audit: { action: 'domain.created', before: null, after: domain },
      };
    });
  }

  async update(
    project: ProjectEntity,
    domain: DomainEntity,
    dto: UpdateDomainDto,
    replace: boolean,
  ): Promise<DomainEntity> {
    const changes: Partial<DomainEntity> = { ...(replace ? DOMAIN_DEFAULTS : {}), ...pickFlags(dto) };
    // A manual change of has_paid ends a payment grace (docs/payments.md).
    if (changes.has_paid !== undefined) changes.grace_until = null;
    if (dto.domain === null) throw fieldError('domain', 'The domain field is required.');
    const primary = changes.is_primary;
    delete changes.is_primary;
    if (dto.domain !== undefined && dto.domain !== null) {
      const name = this.normalize(dto.domain);
      if (name !== domain.domain) {
        if (await this.domains.existsBy({ project_id: project.id, domain: name }))
          throw fieldError('domain', DOMAIN_TAKEN);
        changes.domain = name;
      }
    }
    return await this.projectChanges.run(project, async (manager) => {
      // The project's row first, as every domain update takes it: updates within one project run one
      // at a time (so none sees another's old state, and two "make primary" cannot deadlock).
      await lockedRow(manager, ProjectEntity, project.id);
      const before = await manager.findOneByOrFail(DomainEntity, { id: domain.id });
      if (Object.keys(changes).length > 0) await manager.update(DomainEntity, { id: domain.id }, changes);
      if (primary === true) await makePrimary(manager, project.id, domain.id);
      if (primary === false) await manager.update(DomainEntity, { id: domain.id }, { is_primary: false });
      const after = await manager.findOneByOrFail(DomainEntity, { id: domain.id });
      const events: Array<[WebhookEvent, unknown]> = [['domain.updated', after]];
      if (after.has_paid !== before.has_paid)
        events.push([after.has_paid ? 'domain.paid' : 'domain.unpaid', after]);
      const freed =
        after.domain !== before.domain
          ? await freeActivations(manager, project.id, before.domain)
          : { events: [], audit: [] };
      return {
        result: after,
        events: [...events, ...freed.events],
        audit: [{ action: 'domain.updated', before, after }, ...freed.audit],
      };
    });
  }

  async remove(project: ProjectEntity, domain: DomainEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      // The row locked first: of racing deletes one goes on, the others find it gone (404), and a
      // license being pinned to it (whose write locks the same row) has committed or will find it
      // gone. The pins are then counted as committed (a locking read), not as an earlier snapshot.
      const before = await lockedRow(manager, DomainEntity, domain.id);
      const pinned = await writeLocked(
        manager.createQueryBuilder(LicenseEntity, 'l').where('l.domain_id = :id', { id: domain.id }),
      ).getCount();
      if (pinned > 0) {
        throw fieldError(
          'domain',
          `The domain cannot be deleted: ${pinned} license${pinned === 1 ? ' is' : 's are'} pinned to it.`,
        );
      }
      await manager.delete(DomainEntity, { id: domain.id });
      const freed = await freeActivations(manager, project.id, before.domain);
      return {
        result: undefined,
        events: [['domain.deleted', before], ...freed.events],
        audit: [{ action: 'domain.deleted', before, after: null }, ...freed.audit],
      };
    });
  }

  private normalize(input: string): string {
    const name = normalizeDomain(input);
    if (!name) throw fieldError('domain', DOMAIN_INVALID);
    return name;
  }
}

/**
 * Deletes the project's activations of a registered domain name that is going (deleted, or renamed):
 * the name can never be used again, so the max_domains and max_subdomains_per_domain slots it holds
 * are freed, as a vendor's delete of each activation would (license.deactivated, by api_key;
 * docs/decisions.md#activations). The project's generation, bumped after the commit, tells every
 * instance's runtime path.
 */
async function freeActivations(
  manager: EntityManager,
  projectId: number,
  name: string,
): Promise<{ events: Array<[WebhookEvent, unknown]>; audit: Audit[] }> {
  const rows = await writeLocked(
    manager
      .createQueryBuilder(LicenseActivationEntity, 'a')
      .innerJoin(LicenseEntity, 'l', 'l.id = a.license_id')
      .where('l.project_id = :projectId', { projectId })
      .andWhere('a.domain = :name', { name })
      .orderBy('a.id', 'ASC'),
  ).getMany();
  if (rows.length === 0) return { events: [], audit: [] };
  await manager.delete(
    LicenseActivationEntity,
    rows.map((row) => row.id),
  );
  return {
    events: rows.map((row) => [
      'license.deactivated',
      {
        license_id: row.license_id,
        project_id: projectId,
        domain: row.domain,
        host: row.host,
        by: 'api_key',
      },
    ]),
    audit: rows.map((row) => ({
      action: 'license.deactivated',
      resource_id: row.license_id,
      before: null,
      after: null,
      also: { activation: [{ id: row.id, domain: row.domain, host: row.host }, null] },
    })),
  };
}

/** One statement, so the project never has two primaries or a half-done switch. */
async function makePrimary(manager: EntityManager, projectId: number, id: number): Promise<void> {
  await manager
    .createQueryBuilder()
    .update(DomainEntity)
    .set({ is_primary: () => `CASE WHEN id = ${Number(id)} THEN 1 ELSE 0 END` })
    .where('project_id = :projectId', { projectId })
    .execute();
}

function pickFlags(dto: UpdateDomainDto): Partial<DomainEntity> {
  const out: Partial<DomainEntity> = {};
  for (const flag of ['has_paid', 'is_active', 'is_primary'] as const)
    if (dto[flag] !== undefined && dto[flag] !== null) out[flag] = dto[flag];
  return out;
}
