import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { countingDatabase } from '../../test/utils/counting-db.js';
import { utcDay } from '../licenses/licenses.service.js';
import { UsageCounter } from './usage-counter.js';
import { UsageFlush } from './usage-flush.js';

describe('UsageCounter', () => {
  let db: Awaited<ReturnType<typeof countingDatabase>>;
  let flush: UsageFlush;
  let counter: UsageCounter;
  beforeAll(async () => {
    db = await countingDatabase();
    flush = new UsageFlush(db.ds, db.unit);
    counter = new UsageCounter(db.ds, db.changes(), flush);
    for (const id of [1, 2, 3, 4])
      await db.ds.query(
        'INSERT INTO licenses (id, project_id, user_id, uuid, uuid_hash, title) VALUES (?, 1, 1, ?, ?, ?)',
        [id, `u${id}`, `h${id}`, `t${id}`],
      );
  });
  afterAll(async () => db.ds.destroy());
  /** Today's [count, paid] of the license. */
  const today = async (licenseId: number) =>
    (
      await db.ds.query<Array<{ count: number; paid: number }>>(
        'SELECT count, paid FROM license_usage WHERE license_id = ? AND day = ?',
        [licenseId, utcDay()],
      )
    ).map((r) => [Number(r.count), Number(r.paid)]);

  it("takes a limited license's uses one by one: the call that takes the last one is told so, the next is refused", async () => {
    const answers = [];
    // paid, unpaid, paid, then a refused paid one: two of the three uses taken were paid
    for (const paid of [true, false, true, true])
      answers.push(await counter.takeUsage(db.license(1, null, 3), db.project, paid));
    expect(answers).toEqual(['ok', 'ok', 'last', 'refused']);
    expect(await today(1)).toEqual([[3, 2]]);
  });

  it('racing calls take exactly the allowance: one of them the last use', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, async () => counter.takeUsage(db.license(2, null, 5), db.project, true)),
    );
    expect(answers.filter((a) => a === 'ok')).toHaveLength(4);
    expect(answers.filter((a) => a === 'last')).toHaveLength(1);
    expect(answers.filter((a) => a === 'refused')).toHaveLength(7);
    expect(await today(2)).toEqual([[5, 5]]);
  });

  it('a limit of 0 refuses without asking the database', () => {
    db.statements.length = 0;
    expect(counter.takeUsage(db.license(3, null, 0), db.project, true)).toBe('refused');
    expect(db.statements).toHaveLength(0);
  });

  it('an unlimited license is answered at once, counted in memory and written by the flush', async () => {
    db.statements.length = 0;
    for (const paid of [true, false, false])
      expect(counter.takeUsage(db.license(4), db.project, paid)).toBe('ok'); // not a promise
    expect(db.statements).toHaveLength(0);
    await flush.flush();
    expect(await today(4)).toEqual([[3, 1]]);
  });
});
