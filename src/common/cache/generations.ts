import type { EntityManager } from 'typeorm';

/*
 * Cache generations: how every cache of this service stays fresh (docs/architecture.md#caches-and-generations).
 *
 * Each project has a generation, a number that every write to the project (or to anything in it:
 * domains, licenses, injectables, activations, its webhook settings) bumps right after it commits. A
 * cached value that depends on a project's rows is kept together with the generation it was loaded
 * under, and served only while that generation is still the current one: the first read after a
 * write reloads.
 *
 * The one rule every cache follows: read the generation BEFORE the rows. A write that commits while
 * a load is under way bumps the generation after its commit; the load, which may have read the rows
 * from before the write, is then filed under a generation that is already stale and never served.
 * Reading the generation after the rows would file pre-write rows under the post-write generation.
 *
 * Who bumps: ProjectChanges.run(project, …) (project-changes/), once, after the commit of every change
 * it records (every write under /project/{project} goes through it, and so do the runtime's freed
 * activations), and also after a change that failed, in case its COMMIT landed unanswered; inside the
 * unit it also adds one to the project's change counter (recordChange). A new kind of write that goes
 * through it needs nothing more.
 *
 * How other instances hear of a write is one of two schemes, chosen once in cache.module.ts:
 * RedisGenerations (redis-generations.ts) with REDIS_URL, ChangeCounterGenerations
 * (change-counter-generations.ts) without it. Both are a ProjectGenerations, which callers inject.
 *
 * Two kinds of generation, for two kinds of cache:
 *
 * - current(project), for caches in this process (the runtime lookups, payload pages, activations):
 *   answered from memory, without any I/O, so a warm runtime call touches neither the database nor
 *   Redis. The writing instance sees its write at once; others within a second without Redis (the
 *   change counters), as soon as the message reaches them with it (docs/decisions.md#caching gives
 *   the bound we measure).
 *
 * - shared(project), for the management read cache (common/cache/read-cache.ts), whose entries live in Redis
 *   when it is configured and are shared by every instance: there the number Redis keeps, read with
 *   the cached value; without Redis the in-process generation.
 */

/**
 * The project generations every cache is checked against. One scheme is the process's: see
 * RedisGenerations and ChangeCounterGenerations for how each learns of other instances' writes.
 */
export abstract class ProjectGenerations {
  /** Stamps come from one clock: every change takes the next number, so none is ever handed out twice. */
  private clock = 0;
  /** Every project's generation is at least this; raised when what this process knew can no longer be trusted. */
  private floor = 0;
  private readonly changedAt = new Map<number, number>();
  /** The clock the age bound is kept on; tests move it. */
  now: () => number = Date.now;

  /**
   * The project's generation as this process knows it, without waiting; null while it cannot be
   * trusted. Null means: do not serve from the cache, and do not keep what you load.
   */
  abstract current(projectId: number): number | null;

  /** The generation for caches that live outside the process (common/cache/read-cache.ts); null when it cannot be read. */
  abstract shared(projectId: number): Promise<string | null>;

  /**
   * Call after a write to the project has committed (or may have); `seq`: its change counter as the
   * write left it (recordChange).
   */
  abstract bump(projectId: number, seq?: number): Promise<void>;

  /**
   * A load calls it before it reads the generation its rows go under (GenerationCache, shared(),
   * gate/runtime-lookup.service.ts); a promise when the scheme must read something first.
   */
  observe(_projectId: number): Promise<void> | undefined {
    return undefined;
  }

  /**
   * Records a write to the project in the write's own transaction (`manager`), before its commit:
   * instances without Redis learn of it from the counter. Gives the counter's new value when the
   * scheme reads it, for bump() after the commit.
   */
  async recordChange(manager: EntityManager, projectId: number): Promise<number | undefined> {
    await manager.query('UPDATE projects SET change_seq = change_seq + 1 WHERE id = ?', [projectId]);
    return undefined;
  }

  /** The project's generation in memory. */
  protected known(projectId: number): number {
    const changed = this.changedAt.get(projectId);
    return changed !== undefined && changed > this.floor ? changed : this.floor;
  }

  /** The project starts a new generation. */
  protected changed(projectId: number): void {
    this.changedAt.set(projectId, ++this.clock);
  }

  /** Every project gets a generation above any handed out so far. */
  protected forgetAll(): void {
    this.floor = ++this.clock;
    this.changedAt.clear();
  }
}
