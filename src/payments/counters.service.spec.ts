import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ProjectGenerations } from '../common/cache/generations.js';
import type { RedisService } from '../common/cache/redis.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { AuditLog } from '../audit/audit-log.service.js';
import { Clock } from '../common/time.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service.js';
import { CountersService } from './counters.service.js';

describe('CountersService activations', () => {
  let ds: DataSource;
  let unit: UnitOfWork;
  const statements: string[] = [];
  beforeAll(async () => {
    ds = await new DataSource({
      ...dataSourceOptions('sqlite::memory:'),
      logging: ['query'],
      logger: {
        logQuery: (sql: string) => void statements.push(sql),
        logQueryError: () => undefined,
        logQuerySlow: () => undefined,
        logSchemaBuild: () => undefined,
        logMigration: () => undefined,
        log: () => undefined,
      },
    }).initialize();
    await ds.runMigrations();
    unit = new UnitOfWork(ds);
    unit.onModuleInit();
  });
  afterAll(async () => ds.destroy());

  const generations = new ProjectGenerations({
    client: null,
    key: (name: string) => name,
  } as unknown as RedisService);
  const counters = (known = generations) =>
    new CountersService(
      ds,
      unit,
      new ProjectChanges(unit, new AuditLog(unit), new WebhookOutbox(new Clock()), known),
      known,
    );
  /** A license with these limits (only what the counters read). */
  const license = (
    id: number,
    max_domains: number | null = null,
    max_usage_per_day: number | null = null,
  ) => ({
    id,
    project_id: 1,
    max_domains,
    max_subdomains_per_domain: null,
    max_usage_per_day,
  });
  const project = { id: 1, webhook_url: null } as ProjectEntity;
  /** What activate() is given: the license and its project. */
  const at = (l: ReturnType<typeof license>) => ({ license: l, project });
  afterEach(() => {
    jest.restoreAllMocks();
  });

  const activations = async (licenseId: number) =>
    ds.query('SELECT domain, host FROM license_activations WHERE license_id = ? ORDER BY host', [licenseId]);

  it('records a burst of first calls from one place with one insert per activation', async () => {
    const service = counters();
    statements.length = 0;
    const answers = await Promise.all(
      Array.from({ length: 25 }, async () =>
        service.activate(at(license(1)), 'shop.example', 'www.shop.example'),
      ),
    );
    expect(answers).toEqual(Array(25).fill('ok'));
    expect(statements.filter((sql) => /^INSERT INTO license_activations/.test(sql))).toHaveLength(2); // the domain and the host
    expect(await activations(1)).toEqual([
      { domain: 'shop.example', host: '' },
      { domain: 'shop.example', host: 'www.shop.example' },
    ]);
    // Known now: answered without the database.
    statements.length = 0;
    expect(await service.activate(at(license(1)), 'shop.example', 'www.shop.example')).toBe('ok');
    expect(statements).toHaveLength(0);
  });

  it('gives every call of a refused burst the refusal, and keeps the limit', async () => {
    const service = counters();
    expect(await service.activate(at(license(2, 1)), 'one.example', '')).toBe('ok');
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => service.activate(at(license(2, 1)), 'two.example', '')),
    );
    expect(answers).toEqual(Array(10).fill('max_domains'));
    expect(await activations(2)).toEqual([{ domain: 'one.example', host: '' }]);
    // A refusal is not remembered: the next call asks again (the limit may have been raised).
    expect(await service.activate(at(license(2, 2)), 'two.example', '')).toBe('ok');
  });

  it('different places racing for the last slot: exactly one gets it', async () => {
    const service = counters();
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map(async (d) => service.activate(at(license(3, 1)), `${d}.example`, '')),
    );
    expect(answers.filter((a) => a === 'ok')).toHaveLength(1);
    expect(await activations(3)).toHaveLength(1);
  });

  it('forgets the activations it remembered once the project is written to (a freed slot is free at once)', async () => {
    const service = counters();
    expect(await service.activate(at(license(4, 1)), 'one.example', '')).toBe('ok');
    // The activation is freed by a write that commits, then bumps the project's generation.
    await ds.query('DELETE FROM license_activations WHERE license_id = ?', [4]);
    await generations.bump(1);
    expect(await service.activate(at(license(4, 1)), 'two.example', '')).toBe('ok');
    // The first place is not let in from memory: the only slot is taken now.
    expect(await service.activate(at(license(4, 1)), 'one.example', '')).toBe('max_domains');
    expect(await activations(4)).toEqual([{ domain: 'two.example', host: '' }]);
  });

  it('writes the counts of 450 licenses in three statements, dropping those of a license that is gone', async () => {
    const service = counters();
    const ids = Array.from({ length: 450 }, (_, i) => 1000 + i);
    for (const id of ids) {
      await ds.query(
        'INSERT INTO licenses (id, project_id, user_id, uuid, uuid_hash, title) VALUES (?, 1, 1, ?, ?, ?)',
        [id, `u${id}`, `h${id}`, `t${id}`],
      );
    }
    for (const id of ids)
      for (let n = 0; n <= id % 3; n++) expect(await service.takeUsage(license(id), project)).toBe('ok');
    expect(await service.takeUsage(license(99_999), project)).toBe('ok');
    statements.length = 0;
    await service.flush();
    expect(statements.filter((sql) => /^INSERT INTO license_usage/.test(sql))).toHaveLength(3);
    const rows = await ds.query(
      'SELECT license_id, count FROM license_usage WHERE license_id >= 1000 ORDER BY license_id',
    );
    expect(rows.map((r: { license_id: number; count: number }) => [r.license_id, r.count])).toEqual(
      ids.map((id) => [id, (id % 3) + 1]),
    );
  });

  it('remembers nothing while the generation cannot be trusted (Redis away): every call asks the database', async () => {
    // With a Redis client but no confirmed subscription, current() is null.
    const untrusted = new ProjectGenerations({
      client: {},
      key: (name: string) => name,
    } as unknown as RedisService);
    expect(untrusted.current(1)).toBeNull();
    const service = counters(untrusted);
    expect(await service.activate(at(license(5)), 'away.example', '')).toBe('ok');
    statements.length = 0;
    expect(await service.activate(at(license(5)), 'away.example', '')).toBe('ok');
    expect(statements.filter((sql) => /FROM license_activations/.test(sql)).length).toBeGreaterThan(0);
  });

  it('writes last_seen_at in one statement per flush, at most once per activation every 30 s, never moving it back', async () => {
    const service = counters();
    const seen = async (licenseId: number) =>
      ds.query<Array<{ host: string; last_seen_at: string }>>(
        'SELECT host, last_seen_at FROM license_activations WHERE license_id = ? ORDER BY host',
        [licenseId],
      );
    for (const id of [6, 7])
      expect(await service.activate(at(license(id)), 'seen.example', 'www.seen.example')).toBe('ok');
    await ds.query(
      "UPDATE license_activations SET last_seen_at = '2020-01-01 00:00:00' WHERE license_id IN (6, 7)",
    );
    await service.flush(); // what recording them marked
    const start = Date.now();
    const clock = jest.spyOn(Date, 'now');
    // Within 30 s of the last mark: nothing to write.
    clock.mockReturnValue(start + 29_000);
    expect(await service.activate(at(license(6)), 'seen.example', 'www.seen.example')).toBe('ok');
    statements.length = 0;
    await service.flush();
    expect(statements.filter((sql) => sql.startsWith('UPDATE license_activations'))).toHaveLength(0);
    // 31 s on: both licenses' domain and subdomain rows in one statement.
    clock.mockReturnValue(start + 31_000);
    for (const id of [6, 7])
      expect(await service.activate(at(license(id)), 'seen.example', 'www.seen.example')).toBe('ok');
    await service.flush();
    expect(statements.filter((sql) => sql.startsWith('UPDATE license_activations'))).toHaveLength(1);
    const expected = new Date(start + 31_000).toISOString().slice(0, 19).replace('T', ' ');
    for (const id of [6, 7])
      expect((await seen(id)).map((r) => r.last_seen_at)).toEqual([expected, expected]);
    // A later time written by another instance stays.
    await ds.query(
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
    const service = counters();
    expect(await service.activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe('max_domains');
    const notices = () =>
      ds.query('SELECT license_id, domain, host FROM license_limit_notices WHERE license_id = 8');
    // Keyed by the limit, not the place: made-up hosts make no more notices.
    expect(await notices()).toEqual([{ license_id: 8, domain: 'max_domains', host: '' }]);
    statements.length = 0;
    expect(await service.activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe('max_domains');
    expect(statements.filter((sql) => /license_limit_notices/.test(sql))).toHaveLength(0);
    // Another instance (a fresh service) meets the row and records nothing twice.
    expect(await counters().activate(at(license(8, 0)), 'full.example', 'a.full.example')).toBe(
      'max_domains',
    );
    expect(await notices()).toHaveLength(1);
  });
});
