import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AsyncLocalStorage } from 'node:async_hooks';
import { countingDatabase } from '../../test/utils/counting-db.js';

describe('UnitOfWork on SQLite: units waiting together share one commit', () => {
  let db: Awaited<ReturnType<typeof countingDatabase>>;
  beforeAll(async () => {
    db = await countingDatabase();
    await db.ds.query('CREATE TABLE notes (id integer PRIMARY KEY, text varchar(20) NOT NULL)');
  });
  afterAll(async () => db.ds.destroy());

  const write = (id: number, text: string, refuse = false) =>
    db.unit.run(async (manager) => {
      await manager.query('INSERT INTO notes (id, text) VALUES (?, ?)', [id, text]);
      if (refuse) throw new Error(`refused ${id}`);
      return id;
    });
  const transactionStatements = () =>
    db.statements.filter((sql) => /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(sql));

  it('commits three concurrent units once; the one that fails keeps none of its work', async () => {
    db.statements.length = 0;
    const outcomes = await Promise.allSettled([write(1, 'one'), write(2, 'two', true), write(3, 'three')]);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: 1 },
      { status: 'rejected', reason: new Error('refused 2') },
      { status: 'fulfilled', value: 3 },
    ]);
    expect(await db.ds.query('SELECT id, text FROM notes ORDER BY id')).toEqual([
      { id: 1, text: 'one' },
      { id: 3, text: 'three' },
    ]);
    expect(transactionStatements()).toEqual([
      'BEGIN TRANSACTION',
      'SAVEPOINT unit',
      'RELEASE unit',
      'SAVEPOINT unit',
      'ROLLBACK TO unit',
      'RELEASE unit',
      'SAVEPOINT unit',
      'RELEASE unit',
      'COMMIT',
    ]);
  });

  it('a unit that breaks the whole transaction fails the units of its group that had succeeded; the rest run after', async () => {
    const broken = new Error('the transaction is gone');
    const outcomes = await Promise.allSettled([
      write(10, 'ten'),
      db.unit.run(async (manager) => {
        // What SQLite does on its own after some errors (a full disk, say): the whole transaction rolled back.
        await manager.query('ROLLBACK');
        throw broken;
      }),
      write(11, 'eleven'),
    ]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: broken },
      { status: 'rejected', reason: broken },
      { status: 'fulfilled', value: 11 },
    ]);
    await expect(write(12, 'twelve')).resolves.toBe(12);
    expect(await db.ds.query('SELECT id FROM notes WHERE id >= 10')).toEqual([{ id: 11 }, { id: 12 }]);
  });

  it("runs each unit of a group in its own caller's async context, not the first caller's", async () => {
    const caller = new AsyncLocalStorage<string>();
    const seen = await Promise.all(
      ['alice', 'bob', 'carol'].map((who) =>
        caller.run(who, () => db.unit.run(async () => caller.getStore())),
      ),
    );
    expect(seen).toEqual(['alice', 'bob', 'carol']);
  });
});
