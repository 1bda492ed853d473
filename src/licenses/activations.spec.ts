import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { ProjectGenerations } from '../common/cache/generations.js';
import { RedisGenerations } from '../common/cache/redis-generations.js';
import type { RedisService } from '../common/cache/redis.js';
import { countingDatabase } from '../../test/utils/counting-db.js';
import { Activations } from './activations.js';
import type { AppConfig } from '../config/app-config.js';

describe('Activations', () => {
  let db: Awaited<ReturnType<typeof countingDatabase>>;
  beforeAll(async () => {
    db = await countingDatabase();
  });
  afterAll(async () => db.ds.destroy());
  afterEach(() => {
    jest.restoreAllMocks();
  });
  const activations = (known?: ProjectGenerations, maxActivations = 1000) =>
    new Activations(db.ds, db.changes(known ?? db.generations), known ?? db.generations, {
      env: { LICENSE_MAX_ACTIVATIONS: maxActivations },
    } as AppConfig);
  /** What activate() is given: the license and its project. */
  const at = (l: ReturnType<typeof db.license>) => ({ license: l, project: db.project });
  const license = (...args: Parameters<typeof db.license>) => db.license(...args);
  const rows = async (licenseId: number) =>
    db.ds.query('SELECT domain, host FROM license_activations WHERE license_id = ? ORDER BY host', [
      licenseId,
    ]);

  it('records a burst of first calls from one place with one insert per activation', async () => {
    const service = activations();
    db.statements.length = 0;
    const answers = await Promise.all(
      Array.from({ length: 25 }, async () =>
        service.activate(at(license(1)), 'shop.example', 'www.shop.example'),
      ),
    );
    expect(answers).toEqual(Array(25).fill('ok'));
    expect(db.statements.filter((sql) => /^INSERT INTO license_activations/.test(sql))).toHaveLength(2); // the domain and the host
    expect(await rows(1)).toEqual([
      { domain: 'shop.example', host: '' },
      { domain: 'shop.example', host: 'www.shop.example' },
    ]);
    // Known now: answered without the database.
    db.statements.length = 0;
    expect(await service.activate(at(license(1)), 'shop.example', 'www.shop.example')).toBe('ok');
    expect(db.statements).toHaveLength(0);
  });

  it('gives every call of a refused burst the refusal, and keeps the limit', async () => {
    const service = activations();
    expect(await service.activate(at(license(2, 1)), 'one.example', '')).toBe('ok');
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => service.activate(at(license(2, 1)), 'two.example', '')),
    );
    expect(answers).toEqual(Array(10).fill('max_domains'));
    expect(await rows(2)).toEqual([{ domain: 'one.example', host: '' }]);
    // A refusal is not remembered: the next call asks again (the limit may have been raised).
    expect(await service.activate(at(license(2, 2)), 'two.example', '')).toBe('ok');
  });

  it('different places racing for the last slot: exactly one gets it', async () => {
    const service = activations();
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map(async (d) => service.activate(at(license(3, 1)), `${d}.example`, '')),
    );
    expect(answers.filter((a) => a === 'ok')).toHaveLength(1);
    expect(await rows(3)).toHaveLength(1);
  });

  it('forgets the activations it remembered once the project is written to (a freed slot is free at once)', async () => {
    const service = activations();
    expect(await service.activate(at(license(4, 1)), 'one.example', '')).toBe('ok');
    // The activation is freed by a write that commits, then bumps the project's generation.
    await db.ds.query('DELETE FROM license_activations WHERE license_id = ?', [4]);
    await db.generations.bump(1);
    expect(await service.activate(at(license(4, 1)), 'two.example', '')).toBe('ok');
    // The first place is not let in from memory: the only slot is taken now.
    expect(await service.activate(at(license(4, 1)), 'one.example', '')).toBe('max_domains');
    expect(await rows(4)).toEqual([{ domain: 'two.example', host: '' }]);
  });

  it('remembers nothing while the generation cannot be trusted (Redis away): every call asks the database', async () => {
    // With a Redis client but no confirmed subscription, current() is null.
    const untrusted = new RedisGenerations({
      client: {},
      key: (name: string) => name,
    } as unknown as RedisService);
    expect(untrusted.current(1)).toBeNull();
    const service = activations(untrusted);
    expect(await service.activate(at(license(5)), 'away.example', '')).toBe('ok');
    db.statements.length = 0;
    expect(await service.activate(at(license(5)), 'away.example', '')).toBe('ok');
    expect(db.statements.filter((sql) => /FROM license_activations/.test(sql)).length).toBeGreaterThan(0);
  });

  it('writes last_seen_at in one statement per flush, at most once per activation every 30 s, never moving it back', async () => {
    const service = activations();
    const seen = async (licenseId: number) =>
      db.ds.query<Array<{ host: string; last_seen_at: string }>>(
        'SELECT host, last_seen_at FROM license_activations WHERE license_id = ? ORDER BY host',
        [licenseId],
      );
    for (const id of [6, 7])
      expect(await service.activate(at(license(id)), 'seen.example', 'www.seen.example')).toBe('ok');
    await db.ds.query(
      "UPDATE license_activations SET last_seen_at = '2020-01-01 00:00:00' WHERE license_id IN (6, 7)",
    );
    await service.flush(); // what recording them marked
    const start = Date.now();
    const clock = jest.spyOn(Date, 'now');
    // Within 30 s of the last mark: nothing to write.
    clock.mockReturnValue(start + 29_000);
    expect(await service.activate(at(license(6)), 'seen.example', 'www.seen.example')).toBe('ok');
    db.statements.length = 0;
    await service.flush();
    expect(db.statements.filter((sql) => sql.startsWith('UPDATE license_activations'))).toHaveLength(0);
    // 31 s on: both licenses' domain and subdomain rows in one statement.
    clock.mockReturnValue(start + 31_000);
    for (const id of [6, 7])
      expect(await service.activate(at(license(id)), 'seen.example', 'www.seen.example')).toBe('ok');
    await service.flush();
    expect(db.statements.filter((sql) => sql.startsWith('UPDATE license_activations'))).toHaveLength(1);
    const expected = new Date(start + 31_000).toISOString().slice(0, 19).replace('T', ' ');
    for (const id of [6, 7])
      expect((await seen(id)).map((r) => r.last_seen_at)).toEqual([expected, expected]);
    // A later time written by another instance stays.
    await db.ds.query(
      "UPDATE license_activations SET last_seen_at = '2999-01-01 00:00:00' WHERE license_id = 6",
    );
    clock.mockReturnValue(start + 62_000);
    expect(await service.activate(at(license(6)), 'seen.example', '')).toBe('ok');
    await service.flush();
    expect((await seen(6)).map((r) => r.last_seen_at)).toEqual([
      '2999-01-01 00:00:00',
      '2999-01-01 00:00:00',
    ]);
  });

  it('records the first refusal of a limit per license and day once, and then asks nothing more of the outbox', async () => {
    const service = activations();
    expect(await service.activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe('max_domains');
    const notices = () =>
      db.ds.query('SELECT license_id, domain, host FROM license_limit_notices WHERE license_id = 8');
    // Keyed by the limit, not the place: made-up hosts make no more notices.
    expect(await notices()).toEqual([{ license_id: 8, domain: 'max_domains', host: '' }]);
    db.statements.length = 0;
    expect(await service.activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe('max_domains');
    expect(db.statements.filter((sql) => /license_limit_notices/.test(sql))).toHaveLength(0);
    // Another instance (a fresh service) meets the row and records nothing twice.
    expect(await activations().activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe(
      'max_domains',
    );
    expect(await notices()).toHaveLength(1);
  });

  it('past LICENSE_MAX_ACTIVATIONS answers new places without recording them, once-a-day notice, no database per repeat', async () => {
    const service = activations(undefined, 3);
    const hosts = ['a.shop.example', 'b.shop.example', 'c.shop.example', 'd.shop.example'];
    // No limit of its own: only the cap holds it. The domain row and two hosts fill it.
    for (const host of hosts) expect(await service.activate(at(license(9)), 'shop.example', host)).toBe('ok');
    expect(await rows(9)).toEqual([
      { domain: 'shop.example', host: '' },
      { domain: 'shop.example', host: 'a.shop.example' },
      { domain: 'shop.example', host: 'b.shop.example' },
    ]);
    expect(await service.activate(at(license(9)), 'other.example', '')).toBe('ok');
    expect(await rows(9)).toHaveLength(3);
    const notices = await db.ds.query('SELECT domain FROM license_limit_notices WHERE license_id = 9');
    expect(notices).toEqual([{ domain: 'activations' }]);
    // A capped place seen again costs nothing.
    db.statements.length = 0;
    expect(await service.activate(at(license(9)), 'shop.example', 'd.shop.example')).toBe('ok');
    expect(await service.activate(at(license(9)), 'other.example', '')).toBe('ok');
    expect(db.statements).toHaveLength(0);
  });

  it("the license's own limit refuses before the cap lets a place through", async () => {
    const service = activations(undefined, 1);
    expect(await service.activate(at(license(10, 1)), 'one.example', '')).toBe('ok');
    expect(await service.activate(at(license(10, 1)), 'two.example', '')).toBe('max_domains');
  });
});
