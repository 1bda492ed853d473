import { LRUCache } from 'lru-cache';
import { growingLru } from './growing-lru.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { ProjectGenerations } from './generations.js';

/**
 * Loads that callers share: one promise per key while it is under way (a new license on a busy site
 * arrives as a burst; the database then sees one read or one insert, not one per call).
 */
export class SharedLoads<K, V> {
  private readonly inFlight = new Map<K, Promise<V>>();

  /** The load of `key` under way, if any. */
  pending(key: K): Promise<V> | undefined {
    return this.inFlight.get(key);
  }

  /** The load of `key` under way, else `load()`, which later callers share until it settles. */
  run(key: K, load: () => Promise<V>): Promise<V> {
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const started = load().finally(() => {
      if (this.inFlight.get(key) === started) this.inFlight.delete(key);
    });
    this.inFlight.set(key, started);
    return started;
  }
}

/** What a load gives: the value, the project whose rows it is of, and that project's generation read before them. */
export interface Loaded<V> {
  value: V;
  project: number;
  /** null: the generation could not be trusted; the value is answered, not kept. */
  generation: number | null;
}

/**
 * A bounded in-process cache of values that each depend on one project's rows
 * (docs/architecture.md#caches-and-generations): each kept with the project's generation read before
 * its rows were, and served only while that generation is current. Concurrent first loads of a key
 * share one promise; a caller that joined a load under way takes its value only if the generation it
 * was loaded under is still current (else a write landed meanwhile, and it loads again itself).
 *
 * A hit is answered at once, without a promise (`peek`, and `get`/`fill` on a current entry): the
 * runtime check's warm path stays synchronous (common/maybe-promise.ts).
 */
export class GenerationCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly lru: LRUCache<K, Loaded<V>>;
  private readonly loads = new SharedLoads<K, Loaded<V> | null>();

  constructor(
    private readonly generations: ProjectGenerations,
    /** At most `max` entries, or at most `maxSize` by `sizeOf` (payloads: their bytes). */
    bound: { max: number } | { maxSize: number; sizeOf: (value: V) => number },
  ) {
    this.lru =
      'max' in bound
        ? growingLru(bound.max)
        : new LRUCache({
            maxSize: bound.maxSize,
            sizeCalculation: (entry) => Math.max(1, bound.sizeOf(entry.value)),
          });
  }

  /**
   * The value kept for `key` when it is current, from memory only. `generation`: compare with this
   * one (the caller read it already) instead of reading the project's current one.
   */
  peek(key: K, generation?: number | null): V | undefined {
    const held = this.lru.get(key);
    return held !== undefined && this.isCurrent(held, generation) ? held.value : undefined;
  }

  /** Whether an entry is kept for `key`, current or not. */
  has(key: K): boolean {
    return this.lru.has(key);
  }

  /** The project of the entry kept for `key`, current or not (a key's project never changes). */
  projectOf(key: K): number | undefined {
    return this.lru.get(key)?.project;
  }

  /** Keeps `value` for `key` under `generation` (read before its rows); nothing when that is null. */
  set(key: K, project: number, generation: number | null, value: V): void {
    if (generation !== null) this.lru.set(key, { value, project, generation });
  }

  /**
   * The value for `key` of `project`'s rows: at once while current, else loaded by `load` under the
   * generation read here, before it.
   */
  get(key: K, project: number, load: () => Promise<V>): MaybePromise<V> {
    const generation = this.generations.current(project);
    const held = generation === null ? undefined : this.lru.get(key);
    if (held !== undefined && held.generation === generation) return held.value;
    // The generation is read when each load starts: a joiner that loads again files its rows under the newer one.
    return this.fill(key, async () => {
      // Nothing to wait for once the project's counter is known (always, with Redis).
      const observing = this.generations.observe(project);
      if (observing) await observing;
      const before = this.generations.current(project);
      return { value: await load(), project, generation: before };
    }) as MaybePromise<V>;
  }

  /**
   * The value for `key`: at once while current, else what `load` gives, which reads the generation
   * itself before the rows (and may learn the project only from them). `load` is told the project of
   * a stale entry, when one was kept. A load that finds nothing answers null, which is not kept.
   */
  fill(key: K, load: (project: number | undefined) => Promise<Loaded<V> | null>): MaybePromise<V | null> {
    const held = this.lru.get(key);
    if (held !== undefined) {
      if (this.isCurrent(held)) return held.value;
      this.lru.delete(key);
    }
    const loadAndKeep = async () => {
      const loaded = await load(held?.project);
      if (loaded !== null) this.set(key, loaded.project, loaded.generation, loaded.value);
      return loaded;
    };
    const pending = this.loads.pending(key);
    if (pending) {
      return pending.then(async (loaded) => {
        if (loaded === null) return null;
        if (this.isCurrent(loaded)) return loaded.value;
        return (await loadAndKeep())?.value ?? null;
      });
    }
    return this.loads.run(key, loadAndKeep).then((loaded) => loaded?.value ?? null);
  }

  private isCurrent(entry: Loaded<V>, generation = this.generations.current(entry.project)): boolean {
    return entry.generation !== null && entry.generation === generation;
  }
}
