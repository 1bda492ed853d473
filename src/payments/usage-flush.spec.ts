import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { countingDatabase } from '../../test/utils/counting-db.js';
import { UsageFlush } from './usage-flush.js';

describe('UsageFlush', () => {
  let db: Awaited<ReturnType<typeof countingDatabase>>;
  beforeAll(async () => {
    db = await countingDatabase();
  });
  afterAll(async () => db.ds.destroy());

  it('writes the counts of 450 licenses in three statements, dropping those of a license that is gone', async () => {
    const service = new UsageFlush(db.ds, db.unit);
    const ids = Array.from({ length: 450 }, (_, i) => 1000 + i);
    for (const id of ids) {
      await db.ds.query(
        'INSERT INTO licenses (id, project_id, user_id, uuid, uuid_hash, title) VALUES (?, 1, 1, ?, ?, ?)',
        [id, `u${id}`, `h${id}`, `t${id}`],
      );
    }
    for (const id of ids) for (let n = 0; n <= id % 3; n++) service.add(id, '2026-01-01');
    service.add(99_999, '2026-01-01'); // no such license
    db.statements.length = 0;
    await service.flush();
    expect(db.statements.filter((sql) => /^INSERT INTO license_usage/.test(sql))).toHaveLength(3);
    const rows = await db.ds.query(
      'SELECT license_id, count FROM license_usage WHERE license_id >= 1000 ORDER BY license_id',
    );
    expect(rows.map((r: { license_id: number; count: number }) => [r.license_id, r.count])).toEqual(
      ids.map((id) => [id, (id % 3) + 1]),
    );
  });
});
