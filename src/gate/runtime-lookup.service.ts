import { Injectable } from '@nestjs/common';
import { growingLru } from '../common/cache/growing-lru.js';
import { GenerationCache, type Loaded } from '../common/cache/generation-cache.js';
import { ProjectGenerations } from '../common/cache/generations.js';
import type { MaybePromise } from '../common/maybe-promise.js';
import type { DomainEntity } from '../domains/domain.entity.js';
import { DomainsService } from '../domains/domains.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import { LicensesService } from '../licenses/licenses.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';
import { applyPlanLimits, type RuntimePlan, runtimePlan } from '../plans/runtime-plan.js';

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
  /** The license's plan code and effective entitlements; null when it has neither (plans/runtime-plan.ts). */
  plan?: RuntimePlan | null;
}

/** A project with its active domains by name; `project` null when it does not exist or was deleted. */
export interface ProjectEntry {
  project: ProjectEntity | null;
  domains: Map<string, DomainEntity>;
}

// Bounded: about 1 KB an entry, so the cache stays well inside the heap `npm start` allows.
const MAX_ENTRIES = 50_000;
const ABSENT_MS = 60_000;

/**
 * In-process cache of license and project lookups for the runtime path. Each entry carries the
 * project's generation read before its rows (common/cache/generations.ts); any write to the project
 * bumps it, so the very next call after a revoke, a payment flip or a lock reloads from the database.
 */
@Injectable()
export class RuntimeLookupService {
  private readonly byHash: GenerationCache<string, RuntimeEntry>;
  private readonly byProject: GenerationCache<number, ProjectEntry>;
  /**
   * Keys found in no license, believed absent for a minute (ABSENT_MS). The service makes keys as random uuids with
   * their license, so such a key does not become valid later through the API (and a license created
   * by this process leaves the set at once, LicensesService.onKeyCreated); the minute covers rows
   * an operator puts into the table directly (an import from another system). A deleted license still
   * deployed on a busy site costs one database read a minute, not one per call.
   */
  // On the wall clock, as every other time here (lru-cache's default is performance.now()).
  // The value: the project of the deleted license the key was (license_tombstones), else 0.
  private readonly absent = growingLru<string, number>(MAX_ENTRIES, {
    ttl: ABSENT_MS,
    ttlResolution: 0,
    perf: Date,
  });

  constructor(
    private readonly licenses: LicensesService,
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
    private readonly generations: ProjectGenerations,
  ) {
    this.byHash = new GenerationCache(generations, { max: MAX_ENTRIES });
    this.byProject = new GenerationCache(generations, { max: MAX_ENTRIES });
    licenses.onKeyCreated((hash) => this.absent.delete(hash));
  }

  /**
   * The project a key belongs to, from memory only: its license's (current or not: a license never
   * changes project), or its deleted license's. For the analytics of refusals that come before the
   * lookup (gate/answer-counting.ts).
   */
  projectOf(hash: string): number | null {
    return this.byHash.projectOf(hash) ?? (this.absent.get(hash) || null);
  }

  /** The cached entry for `hash` when it is current: answered from memory, with or without Redis. */
  peek(hash: string): RuntimeEntry | undefined {
    return this.byHash.peek(hash);
  }

  /**
   * The license whose key hashes to `hash` (SHA-256 of the uuid as sent), or null.
   *
   * Concurrent calls with the same key share one load (a new license on a busy site arrives as a
   * burst). A call that joined a load already under way accepts its entry only if the project's
   * generation is still the one the entry was loaded under; otherwise a write landed after the load
   * began, and the call loads again itself (GenerationCache.fill).
   */
  async byKeyHash(hash: string): Promise<RuntimeEntry | null> {
    if (this.absent.has(hash)) return null;
    return await this.byHash.fill(hash, (knownProjectId) => this.load(hash, knownProjectId));
  }

  /**
   * Reads the project's generation before the rows it vouches for (common/cache/generations.ts). A
   * license seen for the first time is read once to learn its project, then again after the generation.
   */
  private async load(hash: string, knownProjectId: number | undefined): Promise<Loaded<RuntimeEntry> | null> {
    let projectId = knownProjectId;
    if (projectId === undefined) {
      const first = await this.licenses.projectOfKey(hash);
      if (first === null) return await this.noLicense(hash);
      projectId = first;
    }
    await this.generations.observe(projectId);
    const generation = this.generations.current(projectId);
    const license = await this.licenses.byKeyHash(hash);
    if (!license) return await this.noLicense(hash);
    // A license never changes project; should it ever, the entry is simply not kept.
    const current = license.project_id === projectId ? generation : null;
    const { project, domains } = await this.project(license.project_id);
    // The plan is the project's: its edits bump the generation read above, as every write to the project does.
    const plan = license.plan_id ? await this.licenses.planOf(license.plan_id) : null;
    applyPlanLimits(license, plan);
    const value: RuntimeEntry = {
      plan: runtimePlan(license, plan),
      license,
      project,
      redirectUrl: project
        ? project.default_redirect_url
        : await this.projects.redirectUrlOf(license.project_id),
      domains,
      pinned: license.domain_id === null ? null : await this.domains.find(license.domain_id),
    };
    return { value, project: projectId, generation: current };
  }

  private async noLicense(hash: string): Promise<null> {
    this.absent.set(hash, (await this.licenses.projectOfDeletedKey(hash)) ?? 0);
    return null;
  }

  /** The project (null when deleted) with its active domains. */
  project(projectId: number): MaybePromise<ProjectEntry> {
    return this.byProject.get(projectId, projectId, async () => {
      const project = await this.projects.find(projectId);
      const rows = project ? await this.domains.active(projectId) : [];
      return { project, domains: new Map(rows.map((d) => [d.domain, d])) };
    });
  }
}
