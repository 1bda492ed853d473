import { describe, expect, it } from '@jest/globals';
import { GenerationCache, SharedLoads } from './generation-cache.js';
import { ChangeCounterGenerations } from './change-counter-generations.js';

/** Without Redis and without a database: generations move only on bump(). */
function cache() {
  const generations = new ChangeCounterGenerations();
  return { generations, cache: new GenerationCache<string, { n: number }>(generations, { max: 2 }) };
}

/** A load the test settles: `resolve` gives its value. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('SharedLoads', () => {
  it('concurrent callers of one key share one load, and the next call after it settles loads anew', async () => {
    const loads = new SharedLoads<string, number>();
    let started = 0;
    const gate = deferred<number>();
    const load = () => (started++, gate.promise);
    const [a, b] = [loads.run('k', load), loads.run('k', load)];
    expect(a).toBe(b);
    expect(loads.pending('k')).toBe(a);
    gate.resolve(7);
    expect([await a, await b]).toEqual([7, 7]);
    expect(started).toBe(1);
    expect(loads.pending('k')).toBeUndefined();
    expect(await loads.run('k', () => Promise.resolve(8))).toBe(8);
  });

  it('a failed load is forgotten: the next call tries again', async () => {
    const loads = new SharedLoads<string, number>();
    await expect(loads.run('k', () => Promise.reject(new Error('database away')))).rejects.toThrow(
      'database away',
    );
    expect(await loads.run('k', () => Promise.resolve(1))).toBe(1);
  });
});

describe('GenerationCache', () => {
  it('answers a current entry at once, without a promise, and reloads after a write to its project', async () => {
    const { generations, cache: c } = cache();
    let loads = 0;
    const load = () => Promise.resolve({ n: ++loads });
    expect(await c.get('a', 1, load)).toEqual({ n: 1 });
    expect(c.get('a', 1, load)).toEqual({ n: 1 }); // not a promise
    expect(c.peek('a')).toEqual({ n: 1 });
    await generations.bump(2); // another project: still current
    expect(c.peek('a')).toEqual({ n: 1 });
    await generations.bump(1);
    expect(c.peek('a')).toBeUndefined();
    expect(c.has('a')).toBe(true); // held, not served
    expect(c.projectOf('a')).toBe(1);
    expect(await c.get('a', 1, load)).toEqual({ n: 2 });
  });

  it('files a load under the generation read before it: a write during the load leaves it stale', async () => {
    const { generations, cache: c } = cache();
    const gate = deferred<{ n: number }>();
    const loading = c.get('a', 1, () => gate.promise);
    await generations.bump(1); // committed while the rows were read
    gate.resolve({ n: 1 });
    expect(await loading).toEqual({ n: 1 }); // answered to its caller
    expect(c.peek('a')).toBeUndefined(); // never served again
  });

  it('a caller joining a load under way shares it, unless a write landed since: then it loads again', async () => {
    const { generations, cache: c } = cache();
    let loads = 0;
    const gate = deferred<void>();
    const load = async () => {
      const n = ++loads;
      if (n === 1) await gate.promise;
      return { n };
    };
    const [first, joined] = [c.get('a', 1, load), c.get('a', 1, load)];
    gate.resolve();
    expect([await first, await joined]).toEqual([{ n: 1 }, { n: 1 }]);
    expect(loads).toBe(1);

    await generations.bump(1);
    const gate2 = deferred<void>();
    const slow = async () => {
      const n = ++loads;
      if (n === 2) await gate2.promise;
      return { n };
    };
    const before = c.get('a', 1, slow);
    const joiner = c.get('a', 1, slow);
    await generations.bump(1); // a write lands while the shared load is under way
    gate2.resolve();
    expect(await before).toEqual({ n: 2 });
    expect(await joiner).toEqual({ n: 3 }); // loaded again, under the new generation
    expect(c.peek('a')).toEqual({ n: 3 });
  });

  it('fill: the load reads the generation itself, is told the project of a stale entry, and null is not kept', async () => {
    const { generations, cache: c } = cache();
    const told: Array<number | undefined> = [];
    const load = (project: number | undefined) => {
      told.push(project);
      return Promise.resolve({ value: { n: told.length }, project: 5, generation: generations.current(5) });
    };
    expect(await c.fill('a', load)).toEqual({ n: 1 });
    expect(c.fill('a', load)).toEqual({ n: 1 });
    await generations.bump(5);
    expect(await c.fill('a', load)).toEqual({ n: 2 });
    expect(told).toEqual([undefined, 5]);
    expect(await c.fill('b', () => Promise.resolve(null))).toBeNull();
    expect(c.has('b')).toBe(false);
  });

  it('keeps nothing loaded under an untrusted generation (null), and is bounded', () => {
    const { cache: c } = cache();
    c.set('a', 1, null, { n: 1 });
    expect(c.has('a')).toBe(false);
    c.set('a', 1, 0, { n: 1 });
    c.set('b', 1, 0, { n: 2 });
    c.set('c', 1, 0, { n: 3 });
    expect(c.has('a')).toBe(false); // the least recently used went
    expect(c.peek('c', 0)).toEqual({ n: 3 });
    expect(c.peek('c', 1)).toBeUndefined(); // compared with the generation given
  });
});
