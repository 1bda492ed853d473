import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ProjectGenerations } from '../common/read-cache.js';
import { DomainEntity } from '../domains/domain.entity.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { ProjectEntity } from '../projects/project.entity.js';

/** What the runtime path needs about a license, loaded once and reused until the project changes. */
export interface RuntimeEntry {
  license: LicenseEntity;
  /** null when the project was deleted */
  project: ProjectEntity | null;
  /** The project's active domains by name. */
  domains: Map<string, DomainEntity>;
  /** The license's pinned domain, active or not. */
  pinned: DomainEntity | null;
  /** The project's default_redirect_url, kept even when the project was deleted (for the 403). */
  redirectUrl: string | null;
  generation: string;
}

export interface ProjectEntry {
  project: ProjectEntity;
  domains: Map<string, DomainEntity>;
  generation: string;
}

// Bounded: about 1 KB an entry, so the cache stays well inside the heap `npm start` allows.
const MAX_ENTRIES = 50_000;

/**
 * In-process cache of license and project lookups for the runtime path (SPEC 9). Each entry carries
 * the project's generation at load time; any write to the project bumps the generation, so the very
 * next call after a revoke, a payment flip or a lock reloads from the database.
 */
@Injectable()
export class RuntimeLookupService {
  private readonly byHash = new Map<string, RuntimeEntry>();
  private readonly byProject = new Map<number, ProjectEntry>();

  constructor(
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    @InjectRepository(ProjectEntity) private readonly projects: Repository<ProjectEntity>,
    @InjectRepository(DomainEntity) private readonly domainRepo: Repository<DomainEntity>,
    private readonly generations: ProjectGenerations,
  ) {}

  /** The cached entry for `hash` when it is current and that can be told without waiting (no Redis). */
  peek(hash: string): RuntimeEntry | undefined {
    const cached = this.byHash.get(hash);
    if (cached === undefined) return undefined;
    const generation = this.generations.known(cached.license.project_id);
    return generation !== undefined && generation === cached.generation ? cached : undefined;
  }

  /** The license whose key hashes to `hash` (SHA-256 of the uuid as sent), or null. */
  async byKeyHash(hash: string): Promise<RuntimeEntry | null> {
    const cached = this.byHash.get(hash);
    if (cached) {
      const generation = await this.generations.get(cached.license.project_id);
      if (generation !== null && generation === cached.generation) return cached;
      this.byHash.delete(hash);
    }
    const license = await this.licenses.findOneBy({ uuid_hash: hash });
    if (!license) return null;
    const generation = await this.generations.get(license.project_id);
    const projectEntry = await this.byProjectId(license.project_id, generation);
    const entry: RuntimeEntry = {
      license,
      project: projectEntry?.project ?? null,
      redirectUrl: projectEntry
        ? projectEntry.project.default_redirect_url
        : ((await this.projects.findOne({ where: { id: license.project_id }, withDeleted: true }))?.default_redirect_url ?? null),
      domains: projectEntry?.domains ?? new Map(),
      pinned: license.domain_id === null ? null : await this.domainRepo.findOneBy({ id: license.domain_id }),
      generation: generation ?? '',
    };
    if (generation !== null) remember(this.byHash, hash, entry);
    return entry;
  }

  /** The project (not deleted) with its active domains, or null. */
  async project(projectId: number): Promise<ProjectEntry | null> {
    return this.byProjectId(projectId, await this.generations.get(projectId));
  }

  private async byProjectId(projectId: number, generation: string | null): Promise<ProjectEntry | null> {
    const cached = this.byProject.get(projectId);
    if (cached && generation !== null && cached.generation === generation) return cached;
    const project = await this.projects.findOneBy({ id: projectId });
    if (!project) {
      this.byProject.delete(projectId);
      return null;
    }
    const rows = await this.domainRepo.findBy({ project_id: projectId, is_active: true });
    const entry: ProjectEntry = { project, domains: new Map(rows.map((d) => [d.domain, d])), generation: generation ?? '' };
    if (generation !== null) remember(this.byProject, projectId, entry);
    return entry;
  }
}

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
