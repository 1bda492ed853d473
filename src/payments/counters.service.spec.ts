import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ProjectGenerations } from '../common/cache/generations.js';
import type { RedisService } from '../common/cache/redis.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { AuditLog } from '../audit/audit-log.service.js';
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

  const generations = new ProjectGenerations({ client: null, key: (name: string) => name } as unknown as RedisService);
  const counters = () => new CountersService(ds, unit, new WebhookOutbox(unit, new AuditLog(unit), generations), generations);
  /** A license with these limits (only what the counters read). */
  const license = (id: number, max_domains: number | null = null, max_usage_per_day: number | null = null) => ({
    id,
    project_id: 1,
    max_domains,
    max_subdomains_per_domain: null,
    max_usage_per_day,
  });
  const project = { id: 1, webhook_url: null } as ProjectEntity;

  const activations = async (licenseId: number) =>
    ds.query('SELECT domain, host FROM license_activations WHERE license_id = ? ORDER BY host', [licenseId]);

  it('records a burst of first calls from one place with one insert per activation', async () => {
    const service = counters();
    statements.length = 0;
    const answers = await Promise.all(Array.from({ length: 25 }, () => service.activate(license(1), 'shop.example', 'www.shop.example')));
    expect(answers).toEqual(Array(25).fill('ok'));
    expect(statements.filter((sql) => /^INSERT INTO license_activations/.test(sql))).toHaveLength(2); // the domain and the host
    expect(await activations(1)).toEqual([
      { domain: 'shop.example', host: '' },
      { domain: 'shop.example', host: 'www.shop.example' },
    ]);
    // Known now: answered without the database.
    statements.length = 0;
    expect(await service.activate(license(1), 'shop.example', 'www.shop.example')).toBe('ok');
    expect(statements).toHaveLength(0);
  });

  it('gives every call of a refused burst the refusal, and keeps the limit', async () => {
    const service = counters();
    expect(await service.activate(license(2, 1), 'one.example', '')).toBe('ok');
    const answers = await Promise.all(Array.from({ length: 10 }, () => service.activate(license(2, 1), 'two.example', '')));
    expect(answers).toEqual(Array(10).fill('max_domains'));
    expect(await activations(2)).toEqual([{ domain: 'one.example', host: '' }]);
    // A refusal is not remembered: the next call asks again (the limit may have been raised).
    expect(await service.activate(license(2, 2), 'two.example', '')).toBe('ok');
  });

  it('different places racing for the last slot: exactly one gets it', async () => {
    const service = counters();
    const answers = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((d) => service.activate(license(3, 1), `${d}.example`, '')));
    expect(answers.filter((a) => a === 'ok')).toHaveLength(1);
    expect(await activations(3)).toHaveLength(1);
  });

  it('forgets the activations it remembered once the project is written to (a freed slot is free at once)', async () => {
    const service = counters();
    expect(await service.activate(license(4, 1), 'one.example', '')).toBe('ok');
    // The activation is freed by a write that commits, then bumps the project's generation.
    await ds.query('DELETE FROM license_activations WHERE license_id = ?', [4]);
    await generations.bump(1);
    expect(await service.activate(license(4, 1), 'two.example', '')).toBe('ok');
    // The first place is not let in from memory: the only slot is taken now.
    expect(await service.activate(license(4, 1), 'one.example', '')).toBe('max_domains');
    expect(await activations(4)).toEqual([{ domain: 'two.example', host: '' }]);
  });

  it('writes the counts of 450 licenses in three statements, dropping those of a license that is gone', async () => {
    const service = counters();
    const ids = Array.from({ length: 450 }, (_, i) => 1000 + i);
    for (const id of ids) {
      await ds.query('INSERT INTO licenses (id, project_id, user_id, uuid, uuid_hash, title) VALUES (?, 1, 1, ?, ?, ?)', [id, `u${id}`, `h${id}`, `t${id}`]);
    }
    for (const id of ids) for (let n = 0; n <= id % 3; n++) expect(await service.takeUsage(license(id), project)).toBe('ok');
    expect(await service.takeUsage(license(99_999), project)).toBe('ok');
    statements.length = 0;
    await service.flush();
    expect(statements.filter((sql) => /^INSERT INTO license_usage/.test(sql))).toHaveLength(3);
    const rows = await ds.query('SELECT license_id, count FROM license_usage WHERE license_id >= 1000 ORDER BY license_id');
    expect(rows.map((r: { license_id: number; count: number }) => [r.license_id, r.count])).toEqual(ids.map((id) => [id, (id % 3) + 1]));
  });
});
