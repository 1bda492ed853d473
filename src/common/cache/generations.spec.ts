import { describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ChangeCounterGenerations, UNSHARED_MAX_AGE_MS } from './change-counter-generations.js';

/** Without Redis, over a database whose projects' change counters the test sets. */
function unshared() {
  const counters = new Map<number, number>();
  const state = { fail: false, reads: 0 };
  const dataSource = {
    query: async (sql: string, ids: number[]) => {
      if (state.fail) throw new Error('database away');
      if (sql.startsWith('SELECT id, change_seq')) state.reads++;
      return ids.filter((id) => counters.has(id)).map((id) => ({ id, change_seq: String(counters.get(id)) }));
    },
  } as unknown as DataSource;
  const generations = new ChangeCounterGenerations(dataSource);
  let now = 1_000_000;
  generations.now = () => now;
  /** Moves the clock and makes one call for `project`, which reads the counters when they are due; waits for that read. */
  const call = async (ms: number, project: number) => {
    now += ms;
    const generation = generations.current(project);
    await new Promise((resolve) => setImmediate(resolve));
    return generation;
  };
  return { generations, counters, state, call };
}

describe('ProjectGenerations without Redis: the change counters', () => {
  it("a project whose counter another instance moved starts a new generation at the next read, a second on; others don't", async () => {
    const { generations, counters, call } = unshared();
    counters.set(1, 5).set(2, 9);
    await generations.observe(1);
    await generations.observe(2);
    const [one, two] = [await call(0, 1), await call(0, 2)];
    counters.set(1, 6); // written by another instance
    expect(await call(999, 1)).toBe(one); // not read yet: within the second
    await call(1, 1); // due: read now
    expect(generations.current(1)).toBeGreaterThan(one as number);
    expect(generations.current(2)).toBe(two);
  });

  it('a project first seen without observe() starts a new generation at the first read (its rows may predate it)', async () => {
    const { generations, counters, call } = unshared();
    counters.set(3, 1);
    const first = await call(0, 3); // watched now, read at once: that read starts it anew
    expect(generations.current(3)).toBeGreaterThan(first as number);
    const settled = generations.current(3);
    await call(1000, 3);
    expect(generations.current(3)).toBe(settled); // read again, unchanged
  });

  it('a project gone from the table starts a new generation', async () => {
    const { generations, counters, call } = unshared();
    counters.set(4, 2);
    await generations.observe(4);
    const before = await call(0, 4);
    counters.delete(4);
    await call(1000, 4);
    expect(generations.current(4)).toBeGreaterThan(before as number);
  });

  it("this instance's own write does not count twice: bump() takes the counter the write left", async () => {
    const { generations, counters, call } = unshared();
    counters.set(5, 1);
    await generations.observe(5);
    await call(0, 5);
    counters.set(5, 2);
    await generations.bump(5, 2);
    const bumped = generations.current(5);
    await call(1000, 5);
    expect(generations.current(5)).toBe(bumped);
  });

  it('while the counters cannot be read, every project starts a new generation 5 s after the last read that worked', async () => {
    const logger = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const { generations, counters, state, call } = unshared();
      counters.set(6, 1);
      await generations.observe(6);
      const kept = await call(0, 6); // a read that works, at t
      state.fail = true;
      expect(await call(UNSHARED_MAX_AGE_MS - 1, 6)).toBe(kept); // reads fail meanwhile
      expect(await call(1, 6)).toBeGreaterThan(kept as number);
      expect(logger).toHaveBeenCalledWith("could not read the projects' change counters: database away");
    } finally {
      logger.mockRestore();
    }
  });

  it('reads nothing while no project is cached, and each project once per statement', async () => {
    const { generations, counters, state, call } = unshared();
    expect(state.reads).toBe(0);
    for (let id = 10; id < 20; id++) counters.set(id, 0);
    for (let id = 10; id < 20; id++) generations.current(id);
    await call(1000, 10);
    expect(state.reads).toBe(2); // the first call's read (project 10), then all ten in one statement
  });
});
