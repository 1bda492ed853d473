import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
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
    // License id: id % 3 + 1 calls, the first of them unpaid, the others paid.
    for (const id of ids) for (let n = 0; n <= id % 3; n++) service.add(id, '2026-01-01', n > 0);
    service.add(99_999, '2026-01-01', true); // no such license
    db.statements.length = 0;
    await service.flush();
    // Paid and unpaid calls of a license are one row: still three statements for 450 licenses.
    expect(db.statements.filter((sql) => /^INSERT INTO license_usage/.test(sql))).toHaveLength(3);
    const rows = await db.ds.query(
      'SELECT license_id, count, paid FROM license_usage WHERE license_id >= 1000 ORDER BY license_id',
    );
    expect(
      rows.map((r: { license_id: number; count: number; paid: number }) => [r.license_id, r.count, r.paid]),
    ).toEqual(ids.map((id) => [id, (id % 3) + 1, id % 3]));
    // A second flush adds to both (license 1000 had 2 calls, 1 paid).
    service.add(1000, '2026-01-01', true);
    service.add(1000, '2026-01-01', false);
    await service.flush();
    const [again] = await db.ds.query('SELECT count, paid FROM license_usage WHERE license_id = 1000');
    expect([Number(again.count), Number(again.paid)]).toEqual([4, 2]);
  });

  it('keeps the counts while the database is away, says so once, and writes them when it answers', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    try {
      await db.ds.query(
        "INSERT INTO licenses (id, project_id, user_id, uuid, uuid_hash, title) VALUES (2000, 1, 1, 'u2000', 'h2000', 't2000')",
      );
      const service = new UsageFlush(db.ds, db.unit);
      const away = jest.spyOn(db.unit, 'run').mockRejectedValue(new Error('database away'));
      for (let i = 0; i < 4; i++) service.add(2000, '2026-01-02', i % 2 === 0);
      await service.flush();
      await service.flush();
      expect(warn.mock.calls.map((call) => call[1])).toEqual([
        'Usage counts could not be written: kept in memory until the database answers',
      ]);
      away.mockRestore();
      service.add(2000, '2026-01-02', true);
      await service.flush();
      expect(log).toHaveBeenCalledWith('Usage counts written again');
      const [row] = await db.ds.query<Array<{ count: number; paid: number }>>(
        "SELECT count, paid FROM license_usage WHERE license_id = 2000 AND day = '2026-01-02'",
      );
      expect([Number(row.count), Number(row.paid)]).toEqual([5, 3]);
    } finally {
      warn.mockRestore();
      log.mockRestore();
    }
  });
});
