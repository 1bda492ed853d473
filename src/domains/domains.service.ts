import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { isUniqueViolation } from '../common/db-errors.js';
import { normalizeDomain } from '../common/domain-name.js';
import { fieldError, notFound } from '../common/errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../common/pagination.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { DomainEntity } from './domain.entity.js';
import { CreateDomainDto, UpdateDomainDto } from './dto/domain.dto.js';

const DOMAIN_DEFAULTS = { has_paid: false, is_active: true, is_primary: false } as const;
const DOMAIN_TAKEN = 'The domain has already been taken.';
const DOMAIN_INVALID = 'The domain must be a host name such as shop.example.com: no scheme, port, path, IP address or wildcard.';

@Injectable()
export class DomainsService {
  constructor(
    @InjectRepository(DomainEntity) private readonly domains: Repository<DomainEntity>,
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    private readonly cursors: Cursors,
  ) {}

  list(project: ProjectEntity, query: CursorQueryDto): Promise<CursorPage<DomainEntity>> {
    const qb = this.domains.createQueryBuilder('d').where('d.project_id = :project', { project: project.id });
    return this.cursors.page(qb, `domains:${project.id}`, query, { defaultPerPage: 50, order: 'ASC' });
  }

  async get(project: ProjectEntity, id: number): Promise<DomainEntity> {
    const domain = await this.domains.findOneBy({ id, project_id: project.id });
    if (!domain) throw notFound('Domain');
    return domain;
  }

  async create(project: ProjectEntity, dto: CreateDomainDto): Promise<DomainEntity> {
    const name = this.normalize(dto.domain);
    if (await this.domains.existsBy({ project_id: project.id, domain: name })) throw fieldError('domain', DOMAIN_TAKEN);
    let id: number;
    try {
      const result = await this.domains.insert({ ...DOMAIN_DEFAULTS, ...pickFlags(dto), is_primary: false, project_id: project.id, domain: name });
      id = result.identifiers[0].id as number;
    } catch (error) {
      if (isUniqueViolation(error)) throw fieldError('domain', DOMAIN_TAKEN);
      throw error;
    }
    if (dto.is_primary) await this.makePrimary(project.id, id);
    return this.domains.findOneByOrFail({ id });
  }

  async update(project: ProjectEntity, domain: DomainEntity, dto: UpdateDomainDto, replace: boolean): Promise<DomainEntity> {
    const changes: Partial<DomainEntity> = { ...(replace ? DOMAIN_DEFAULTS : {}), ...pickFlags(dto) };
    if (dto.domain === null) throw fieldError('domain', 'The domain field is required.');
    const primary = changes.is_primary;
    delete changes.is_primary;
    if (dto.domain !== undefined && dto.domain !== null) {
      const name = this.normalize(dto.domain);
      if (name !== domain.domain) {
        if (await this.domains.existsBy({ project_id: project.id, domain: name })) throw fieldError('domain', DOMAIN_TAKEN);
        changes.domain = name;
      }
    }
    try {
      if (Object.keys(changes).length > 0) await this.domains.update({ id: domain.id }, changes);
    } catch (error) {
      if (isUniqueViolation(error)) throw fieldError('domain', DOMAIN_TAKEN);
      throw error;
    }
    if (primary === true) await this.makePrimary(project.id, domain.id);
    if (primary === false) await this.domains.update({ id: domain.id }, { is_primary: false });
    return this.domains.findOneByOrFail({ id: domain.id });
  }

  async remove(domain: DomainEntity): Promise<void> {
    const pinned = await this.licenses.countBy({ domain_id: domain.id });
    if (pinned > 0) {
      throw fieldError('domain', `The domain cannot be deleted: ${pinned} license${pinned === 1 ? ' is' : 's are'} pinned to it.`);
    }
    await this.domains.delete({ id: domain.id });
  }

  /** One statement, so the project never has two primaries or a half-done switch. */
  private async makePrimary(projectId: number, id: number): Promise<void> {
    await this.domains
      .createQueryBuilder()
      .update(DomainEntity)
      .set({ is_primary: () => `CASE WHEN id = ${Number(id)} THEN 1 ELSE 0 END` })
      .where('project_id = :projectId', { projectId })
      .execute();
  }

  private normalize(input: string): string {
    const name = normalizeDomain(input);
    if (!name) throw fieldError('domain', DOMAIN_INVALID);
    return name;
  }
}

function pickFlags(dto: UpdateDomainDto): Partial<DomainEntity> {
  const out: Partial<DomainEntity> = {};
  for (const flag of ['has_paid', 'is_active', 'is_primary'] as const) if (dto[flag] !== undefined && dto[flag] !== null) out[flag] = dto[flag];
  return out;
}
