import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { AnalyticsCounts, hourKey } from '../../src/analytics/analytics-counts.service.js';
import { REFUSAL_REASONS } from '../../src/common/http/errors.js';
import { LicenseUsagePaid1764750000000 } from '../../src/database/migrations/1764750000000-LicenseUsagePaid.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { Activations } from '../../src/licenses/activations.js';
import { UsageFlush } from '../../src/gate/usage-flush.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  uniqueToken,
} from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';
import { databaseBefore } from '../utils/upgrade.js';

/**
 * The runtime answers' analytics (docs/analytics.md): every outcome and refusal reason made
 * by a real call and found in the answer of GET /project/{id}/analytics, the buckets, the range
 * rules, who may read them, retention, and ANALYTICS_ENABLED.
 */

const RUNTIME = '/api/v1/project/has-paid';
const THROTTLE = 12;
type Json = Record<string, any>;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The clock stands still at the time the file starts, unless a test moves it (the per-license daily
 * counts go by the real UTC day, so the analytics' day must be the real one too).
 */
const START = Date.now();
const HOUR_START = START - (START % HOUR_MS);
const DAY_START = START - (START % DAY_MS);
const isoZ = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const day = (ms: number) => isoZ(ms).slice(0, 10);

describe('Runtime answers analytics', () => {
  let t: TestApp;
  const clock = new ManualClock(START);
  let owner: Awaited<ReturnType<typeof makeAccount>>;
  let project: Json;
  let paidDomain: Json;
  let unpaidDomain: Json;
  /** Statuses of every runtime call made on `project`, by the outcome/reason each must be counted as. */
  const made = new Map<string, number>();
  const tally = (key: string, n = 1) => made.set(key, (made.get(key) ?? 0) + n);

  const api = (key: string) => apiAs(t, key);
  const check = (uuid: string, domain?: string, country?: string) => {
    const req = t.http().post(RUNTIME).set('Accept', 'application/json').set('X-LICENSE-KEY', uuid);
    if (domain) req.set('X-Service-Domain', domain);
    if (country) req.set('CF-IPCountry', country);
    return req;
  };
  const flush = async () => {
    await t.app.get(UsageFlush).flush();
    await t.app.get(Activations).flush();
    await t.app.get(AnalyticsCounts).flush();
  };
  const analytics = async (query: Record<string, string>, key = owner.key, id = project.id as number) =>
    expectSuccess(await api(key).get(`/project/${id}/analytics`).query(query));
  const byKey = (data: Json) =>
    Object.fromEntries(
      (data.series as Json[]).map((s) => [s.key, (s.points as Json[]).reduce((n, p) => n + p.count, 0)]),
    );
  /** Counts the refusal `res` must be, asserting its status. */
  const refused = (res: Response, status: number, reason: string) => {
    expectError(res, status);
    tally(reason);
  };

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_RUNTIME_LIMIT: String(THROTTLE) }, { clock });
    owner = await makeAccount(t.app);
    project = await makeProject(t, owner.key, { has_paid: false });
    paidDomain = await makeDomain(t, owner.key, project.id, { has_paid: true });
    unpaidDomain = await makeDomain(t, owner.key, project.id, { has_paid: false });

    // paid and unpaid answers, with the domain and the country they came from
    const plain = await makeLicense(t, owner.key, project.id);
    expectSuccess(await check(plain.uuid, paidDomain.domain, 'de'));
    tally('paid');
    expectSuccess(await check(plain.uuid, unpaidDomain.domain, 'DE'));
    tally('unpaid');
    expectSuccess(await check(plain.uuid).query({ action: 'check_project' }));
    tally('unpaid');
    // the stream and self-service deactivation: the project's paid state (unpaid here)
    expectSuccess(
      await t
        .http()
        .get('/api/v1/injectable/stream')
        .set('X-LICENSE-KEY', plain.uuid)
        .set('CF-IPCountry', 'US'),
    );
    tally('unpaid');
    expectSuccess(
      await t
        .http()
        .post('/api/v1/license/deactivate')
        .set('X-LICENSE-KEY', plain.uuid)
        .set('X-Service-Domain', unpaidDomain.domain),
    );
    tally('unpaid');

    // has-paid spelled otherwise goes through Express instead of RuntimeFastPath: counted alike
    expectSuccess(
      await t
        .http()
        .post(`${RUNTIME}/`)
        .set('X-LICENSE-KEY', plain.uuid)
        .set('X-Service-Domain', paidDomain.domain),
    );
    tally('paid');
    refused(await t.http().post(`${RUNTIME}/`).set('X-LICENSE-KEY', plain.uuid), 400, 'domain_missing');

    // every refusal reason
    refused(await check(plain.uuid), 400, 'domain_missing');
    refused(await check(plain.uuid, `nowhere-${uniqueToken()}.example.org`), 403, 'domain_unregistered');

    const ip = await makeLicense(t, owner.key, project.id, { allowed_ips: '10.9.9.9' });
    refused(await check(ip.uuid, paidDomain.domain), 403, 'ip');
    const country = await makeLicense(t, owner.key, project.id, { allowed_countries: 'FR' });
    refused(await check(country.uuid, paidDomain.domain, 'US'), 403, 'country');

    const oneDomain = await makeLicense(t, owner.key, project.id, { max_domains: 1 });
    expectSuccess(await check(oneDomain.uuid, paidDomain.domain));
    tally('paid');
    refused(await check(oneDomain.uuid, unpaidDomain.domain), 403, 'domain_limit');

    const once = await makeLicense(t, owner.key, project.id, { max_usage_per_day: 1 });
    expectSuccess(await check(once.uuid, paidDomain.domain));
    tally('paid');
    refused(await check(once.uuid, paidDomain.domain), 429, 'usage_limit');

    const revoked = await makeLicense(t, owner.key, project.id);
    expectSuccess(await api(owner.key).post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
    refused(await check(revoked.uuid, paidDomain.domain), 403, 'revoked');

    const expired = await makeLicense(t, owner.key, project.id);
    await t.dataSource
      .getRepository(LicenseEntity)
      .update(expired.id, { expires_at: new Date(Date.now() - 1000) });
    expectSuccess(await api(owner.key).patch(`/project/${project.id}`, {})); // (any write: the lookup reloads)
    refused(await check(expired.uuid, paidDomain.domain), 403, 'expired');

    // a deleted license's key is counted under its project; a key no license ever had is not counted
    const deleted = await makeLicense(t, owner.key, project.id);
    expectSuccess(await api(owner.key).delete(`/project/${project.id}/licenses/${deleted.id}`));
    refused(await check(deleted.uuid, paidDomain.domain), 403, 'unknown_key');
    expectError(await check(randomUUID(), paidDomain.domain), 403);

    // rate limited: a busy license past THROTTLE_RUNTIME_LIMIT calls in the window
    const busy = await makeLicense(t, owner.key, project.id);
    for (let i = 0; i < THROTTLE + 2; i++) {
      const res = await check(busy.uuid, paidDomain.domain);
      if (res.status === 429) refused(res, 429, 'rate_limited');
      else {
        expectSuccess(res);
        tally('paid');
      }
    }
    // (2 unless the throttle's fixed window ended during the loop)
    expect(made.get('rate_limited')).toBeGreaterThan(0);

    expectSuccess(await api(owner.key).patch(`/project/${project.id}`, { is_active: false }));
    refused(await check(plain.uuid, paidDomain.domain), 403, 'project_inactive');
    expectSuccess(await api(owner.key).patch(`/project/${project.id}`, { is_active: true }));
    expectSuccess(await api(owner.key).post(`/project/${project.id}/lock`, { reason: 'analytics test' }));
    refused(await check(plain.uuid, paidDomain.domain), 403, 'project_locked');
    expectSuccess(await api(owner.key).post(`/project/${project.id}/unlock`));
    await flush();
  });

  afterAll(async () => {
    await t?.close();
  });

  const TODAY = { from: day(START), to: day(START) };

  it('finds every outcome of the calls made, and the totals', async () => {
    const data = await analytics({ ...TODAY, group_by: 'outcome' });
    const refusals = REFUSAL_REASONS.reduce((n, r) => n + (made.get(r) ?? 0), 0);
    expect(byKey(data)).toEqual({ paid: made.get('paid'), unpaid: made.get('unpaid'), refused: refusals });
    expect(data.totals).toEqual({ paid: made.get('paid'), unpaid: made.get('unpaid'), refused: refusals });
    expect(t.config.env.ANALYTICS_ENABLED).toBe(true);
    expect(data).toMatchObject({
      from: isoZ(DAY_START),
      to: isoZ(DAY_START),
      granularity: 'day',
      group_by: 'outcome',
    });
  });

  it('finds every refusal reason, each counted once per refusal', async () => {
    const data = await analytics({ ...TODAY, group_by: 'reason' });
    expect(data.series.map((s: Json) => s.key)).toEqual([...REFUSAL_REASONS]);
    const expected = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, made.get(r) ?? 0]));
    for (const reason of REFUSAL_REASONS) expect(expected[reason]).toBeGreaterThan(0);
    expect(byKey(data)).toEqual(expected);
  });

  it('by hour: a point for every hour of the range, zeros included, the calls in their UTC hour', async () => {
    const data = await analytics({
      from: isoZ(HOUR_START - 2 * HOUR_MS + 1234),
      to: isoZ(HOUR_START + 2 * HOUR_MS - 1000),
      granularity: 'hour',
    });
    expect(data.from).toBe(isoZ(HOUR_START - 2 * HOUR_MS));
    expect(data.to).toBe(isoZ(HOUR_START + HOUR_MS));
    const paid = data.series.find((s: Json) => s.key === 'paid');
    expect(paid.points).toEqual([
      { t: isoZ(HOUR_START - 2 * HOUR_MS), count: 0 },
      { t: isoZ(HOUR_START - HOUR_MS), count: 0 },
      { t: isoZ(HOUR_START), count: made.get('paid') },
      { t: isoZ(HOUR_START + HOUR_MS), count: 0 },
    ]);
  });

  it('by domain and by country', async () => {
    const domains = byKey(await analytics({ ...TODAY, group_by: 'domain' }));
    // every paid answer, and the usage_limit refusal (counted against the domain it was for)
    expect(domains[String(paidDomain.id)]).toBe((made.get('paid') ?? 0) + 1);
    // the unpaid-domain answer, and the domain_limit refusal counted against the domain it asked for
    expect(domains[String(unpaidDomain.id)]).toBe(2);
    const countries = byKey(await analytics({ ...TODAY, group_by: 'country' }));
    expect(countries.DE).toBe(2);
    expect(countries.US).toBe(2); // the stream, and the country refusal
  });

  it('by license, from the per-license daily counts; by hour is refused', async () => {
    const data = await analytics({ ...TODAY, group_by: 'license' });
    expect(data.series.length).toBeGreaterThan(0);
    for (const series of data.series) expect(series.key).toMatch(/^\d+$/);
    const total = (data.series as Json[]).reduce((n, s) => n + s.points[0].count, 0);
    // every has-paid answer that reached the usage count (paid, unpaid-domain and check_project ones)
    expect(total).toBe((made.get('paid') ?? 0) + 2);
    const body = expectError(
      await api(owner.key)
        .get(`/project/${project.id}/analytics`)
        .query({ group_by: 'license', granularity: 'hour' }),
      422,
      ['granularity'],
    );
    expect(body.errors.granularity[0]).toBe(
      'Licenses are counted by UTC day: group_by=license takes granularity=day.',
    );
  });

  it('by license, splits the checks answered into paid and unpaid (count = paid + unpaid); other groupings do not', async () => {
    // Another account: the calls above stay the only ones of `project` and of `owner`.
    const vendor = await makeAccount(t.app);
    const shop = await makeProject(t, vendor.key, { has_paid: false });
    const paying = await makeDomain(t, vendor.key, shop.id, { has_paid: true });
    const notPaying = await makeDomain(t, vendor.key, shop.id, { has_paid: false });
    // Without a daily limit: counted in memory, written by the flush.
    const unlimited = await makeLicense(t, vendor.key, shop.id);
    for (let i = 0; i < 6; i++) expectSuccess(await check(unlimited.uuid, paying.domain));
    for (let i = 0; i < 2; i++) expectSuccess(await check(unlimited.uuid, notPaying.domain));
    // With one: counted by the statement that takes the use; the refused fourth call is not a check answered.
    const limited = await makeLicense(t, vendor.key, shop.id, { max_usage_per_day: 3 });
    expectSuccess(await check(limited.uuid, paying.domain));
    expectSuccess(await check(limited.uuid, notPaying.domain));
    expectSuccess(await check(limited.uuid).query({ action: 'check_project' })); // the project's flag: unpaid
    expectError(await check(limited.uuid, paying.domain), 429);
    await flush();

    const read = (group_by: string) =>
      analytics({ from: day(START - DAY_MS), to: day(START), group_by }, vendor.key, shop.id);
    const byLicense = await read('license');
    const yesterday = { t: isoZ(DAY_START - DAY_MS), count: 0, paid: 0, unpaid: 0 };
    expect(byLicense.series).toEqual([
      {
        key: String(unlimited.id),
        points: [yesterday, { t: isoZ(DAY_START), count: 8, paid: 6, unpaid: 2 }],
      },
      { key: String(limited.id), points: [yesterday, { t: isoZ(DAY_START), count: 3, paid: 1, unpaid: 2 }] },
    ]);
    // The same answers by outcome: 7 paid, 4 unpaid, the usage_limit refusal.
    expect(byLicense.totals).toEqual({ paid: 7, unpaid: 4, refused: 1 });
    for (const group_by of ['outcome', 'reason', 'domain', 'country'])
      for (const series of (await read(group_by)).series as Json[])
        for (const point of series.points as Json[])
          expect(Object.keys(point).sort()).toEqual(['count', 't']);

    // A day counted before paid answers were (paid null, as the upgrade leaves its rows): its split is
    // unknown, and stays so when more checks are added to it, rather than passing them all off as paid.
    await t.dataSource.query('UPDATE license_usage SET paid = NULL WHERE license_id = ?', [unlimited.id]);
    expectSuccess(await check(unlimited.uuid, paying.domain));
    await flush();
    const [split, unknown] = (await read('license')).series as Json[];
    expect(split.key).toBe(String(unlimited.id));
    expect(split.points).toEqual([yesterday, { t: isoZ(DAY_START), count: 9, paid: null, unpaid: null }]);
    expect(unknown.points[1]).toEqual({ t: isoZ(DAY_START), count: 3, paid: 1, unpaid: 2 });
  });

  it('defaults to the last 7 days by day, grouped by outcome', async () => {
    const data = await analytics({});
    expect(data.from).toBe(isoZ(DAY_START - 6 * DAY_MS));
    expect(data.to).toBe(isoZ(DAY_START));
    expect(data.granularity).toBe('day');
    expect(data.group_by).toBe('outcome');
    expect(data.series.map((s: Json) => s.key)).toEqual(['paid', 'unpaid', 'refused']);
    for (const series of data.series) expect(series.points).toHaveLength(7);
    expect(data.series[0].points[6].count).toBe(made.get('paid'));
  });

  describe('ranges', () => {
    const range = (query: Record<string, string>) =>
      api(owner.key).get(`/project/${project.id}/analytics`).query(query);

    it('exactly 31 days by hour is answered however `to` falls within its hour; one hour more is a 422 on to', async () => {
      const data = expectSuccess(
        await range({ from: '2026-01-01T00:00:00Z', to: '2026-01-31T23:00:00Z', granularity: 'hour' }),
      );
      expect(data.series[0].points).toHaveLength(744);
      const onEdge = expectSuccess(
        await range({ from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z', granularity: 'hour' }),
      );
      expect(onEdge.series[0].points).toHaveLength(745);
      const within = expectSuccess(
        await range({ from: '2026-01-01T00:37:00Z', to: '2026-02-01T00:37:00Z', granularity: 'hour' }),
      );
      expect([within.from, within.to]).toEqual(['2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z']);
      const body = expectError(
        await range({ from: '2026-01-01T00:00:00Z', to: '2026-02-01T01:00:00Z', granularity: 'hour' }),
        422,
        ['to'],
      );
      expect(body.errors.to[0]).toBe(
        'The range from 2026-01-01T00:00:00Z to 2026-02-01T01:00:00Z spans 745 hours; at most 31 days (744 hours) by hour: narrow it or use granularity=day.',
      );
    });

    it('exactly 366 days by day is answered; 367 is a 422', async () => {
      const data = expectSuccess(await range({ from: '2025-01-01', to: '2026-01-01' }));
      expect(data.series[0].points).toHaveLength(366);
      const exactly = expectSuccess(await range({ from: '2025-01-01', to: '2026-01-02' }));
      expect(exactly.series[0].points).toHaveLength(367);
      const body = expectError(await range({ from: '2025-01-01', to: '2026-01-03' }), 422, ['to']);
      expect(body.errors.to[0]).toMatch(/spans 367 days; at most 366 days by day/);
    });

    it('buckets a time before 1970 in the hour or day that holds it', async () => {
      const hours = expectSuccess(
        await range({ from: '1969-12-31T22:30:00Z', to: '1969-12-31T23:59:59Z', granularity: 'hour' }),
      );
      expect([hours.from, hours.to]).toEqual(['1969-12-31T22:00:00Z', '1969-12-31T23:00:00Z']);
      expect(hours.series[0].points.map((p: { t: string }) => p.t)).toEqual([
        '1969-12-31T22:00:00Z',
        '1969-12-31T23:00:00Z',
      ]);
      const days = expectSuccess(await range({ from: '1969-12-30T12:00:00Z', to: '1970-01-01T12:00:00Z' }));
      expect([days.from, days.to]).toEqual(['1969-12-30T00:00:00Z', '1970-01-01T00:00:00Z']);
      expect(days.series[0].points).toHaveLength(3);
      // Within one hour before 1970: that hour, not a reversed range.
      const one = expectSuccess(
        await range({ from: '1969-12-31T12:30:00Z', to: '1969-12-31T12:40:00Z', granularity: 'hour' }),
      );
      expect([one.from, one.to]).toEqual(['1969-12-31T12:00:00Z', '1969-12-31T12:00:00Z']);
    });

    it('without to, a range too long is a 422 on from', async () => {
      expectError(await range({ from: '2026-10-01', granularity: 'hour' }), 422, ['from']);
    });

    it.each([
      [{ from: '2026-11-21', to: '2026-11-20' }, 'from', 'The from field must be a time before or at to.'],
      [
        { from: '2999-01-01' },
        'from',
        'The from field must be a time before or at now (to defaults to now).',
      ],
      [{ from: 'yesterday' }, 'from', 'The from field must be an ISO-8601 date or date-time.'],
      [{ to: '2026-02-30' }, 'to', 'The to field must be an ISO-8601 date or date-time.'],
      [{ granularity: 'week' }, 'granularity', 'The selected granularity is invalid: use hour or day.'],
      [
        { group_by: 'planet' },
        'group_by',
        'The selected group by is invalid: use outcome, reason, domain, country, license or project.',
      ],
      [
        { group_by: 'project' },
        'group_by',
        'The group by project is only for GET /analytics, over all your projects.',
      ],
    ])('%j → 422 on %s', async (query, field, message) => {
      const body = expectError(await range(query), 422, [field]);
      expect(body.errors[field][0]).toBe(message);
    });
  });

  describe('open-ended groupings', () => {
    it('answer the 50 busiest keys by default, `limit` (1 to 200) when asked, and say whether keys were left out', async () => {
      // A project's 100 000 licenses by day over 366 days were 36 600 000 points built by one request.
      // Another account: this one's account-wide answers stay those of the calls made above.
      const vendor = await makeAccount(t.app);
      const other = await makeProject(t, vendor.key);
      const ids: number[] = [];
      for (let i = 0; i < 55; i++)
        ids.push((await makeLicense(t, vendor.key, other.id, { title: `busy ${i}` })).id);
      // License i was used i + 1 times today.
      for (const [i, id] of ids.entries())
        await t.dataSource.query('INSERT INTO license_usage (license_id, day, count) VALUES (?, ?, ?)', [
          id,
          day(START),
          i + 1,
        ]);
      const busiest = [...ids].reverse().map(String);
      const read = (query: Record<string, string>) =>
        analytics({ ...TODAY, group_by: 'license', ...query }, vendor.key, other.id);
      const byDefault = await read({});
      expect(byDefault.series.map((s: Json) => s.key)).toEqual(busiest.slice(0, 50));
      expect(byDefault.has_more).toBe(true);
      expect(await read({ limit: '3' })).toMatchObject({
        series: busiest
          .slice(0, 3)
          .map((key, i) => ({ key, points: [{ t: isoZ(DAY_START), count: 55 - i }] })),
        has_more: true,
      });
      const every = await read({ limit: '200' });
      expect(every.series).toHaveLength(55);
      expect(every.has_more).toBe(false);
      // A fixed grouping has every key, whatever the limit.
      const outcomes = await analytics({ ...TODAY, limit: '1' }, vendor.key, other.id);
      expect(outcomes.series.map((s: Json) => s.key)).toEqual(['paid', 'unpaid', 'refused']);
      expect(outcomes.has_more).toBe(false);
      for (const limit of ['0', '201', '1.5', 'ten']) {
        const body = expectError(
          await api(vendor.key).get(`/project/${other.id}/analytics`).query({ limit }),
          422,
          ['limit'],
        );
        expect(body.errors.limit[0]).toBe('The limit field must be an integer between 1 and 200.');
      }
    });
  });

  describe('who may read them', () => {
    it('a read-only key and a key scoped to the project read them; a key scoped elsewhere gets 403', async () => {
      const owned = owner.user;
      const readOnly = await makeApiKey(t.app, owned, { read_only: true });
      expect((await analytics(TODAY, readOnly)).totals.paid).toBe(made.get('paid'));
      const scoped = await makeApiKey(t.app, owned, { project_id: project.id });
      expect((await analytics(TODAY, scoped)).totals.paid).toBe(made.get('paid'));
      const other = await makeProject(t, owner.key);
      const elsewhere = await makeApiKey(t.app, owned, { project_id: other.id });
      expectError(await api(elsewhere).get(`/project/${project.id}/analytics`), 403);
      // GET /analytics takes a global key only
      expectError(await api(scoped).get('/analytics'), 403);
    });

    it("another owner's project → 403, a missing one → 404; their account analytics show none of it", async () => {
      const stranger = await makeAccount(t.app);
      expectError(await api(stranger.key).get(`/project/${project.id}/analytics`), 403);
      expectError(await api(stranger.key).get('/project/999999/analytics'), 404);
      const theirs = expectSuccess(await api(stranger.key).get('/analytics').query(TODAY));
      expect(theirs.totals).toEqual({ paid: 0, unpaid: 0, refused: 0 });
    });

    it('GET /analytics sums the owner’s projects, by project', async () => {
      const data = expectSuccess(
        await api(owner.key)
          .get('/analytics')
          .query({ ...TODAY, group_by: 'project' }),
      );
      expect(byKey(data)[String(project.id)]).toBe(
        (made.get('paid') ?? 0) +
          (made.get('unpaid') ?? 0) +
          REFUSAL_REASONS.reduce((n, r) => n + (made.get(r) ?? 0), 0),
      );
      // and by license, over every project's licenses
      const licenses = expectSuccess(
        await api(owner.key)
          .get('/analytics')
          .query({ ...TODAY, group_by: 'license' }),
      );
      expect(Object.values(byKey(licenses)).reduce((n: number, c) => n + Number(c), 0)).toBe(
        (made.get('paid') ?? 0) + 2,
      );
    });
  });

  it('counts in the hour of the clock, and prunes hours past ANALYTICS_RETENTION_DAYS (90 by default)', async () => {
    expect(t.config.env.ANALYTICS_RETENTION_DAYS).toBe(90);
    const license = await makeLicense(t, owner.key, project.id);
    const later = HOUR_START + 2 * DAY_MS;
    clock.set(new Date(later + 1800_000));
    expectSuccess(await check(license.uuid, paidDomain.domain));
    await flush();
    const hours = await analytics({ from: isoZ(later), to: isoZ(later), granularity: 'hour' });
    expect(byKey(hours).paid).toBe(1);

    // 90 days after the end of the first calls' hour: those go, the later ones stay
    clock.set(new Date(HOUR_START + HOUR_MS + 90 * DAY_MS + 1800_000));
    await t.app.get(AnalyticsCounts).prune();
    const left = await t.dataSource.query(
      'SELECT hour, SUM(count) AS n FROM runtime_answers WHERE project_id = ? GROUP BY hour ORDER BY hour',
      [project.id],
    );
    expect(left.map((row: Json) => [row.hour, Number(row.n)])).toEqual([[hourKey(later), 1]]);
    clock.set(new Date(START));
  });
});

describe('shutdown', () => {
  it('writes what was counted since the last flush', async () => {
    const db = await createTestDatabase();
    const first = await createTestApp({}, { databaseUrl: db.url });
    const { key } = await makeAccount(first.app);
    const project = await makeProject(first, key);
    const license = await makeLicense(first, key, project.id);
    await first.app.get(AnalyticsCounts).flush();
    expectSuccess(
      await first.http().post(RUNTIME).set('X-LICENSE-KEY', license.uuid).query({ action: 'check_project' }),
    );
    await first.close(); // (leaves the database: it is not the app's own)
    const second = await createTestApp({}, { databaseUrl: db.url });
    try {
      const data = expectSuccess(await apiAs(second, key).get(`/project/${project.id}/analytics`));
      expect(data.totals).toEqual({ paid: 0, unpaid: 1, refused: 0 });
    } finally {
      await second.close();
      await db.drop();
    }
  });
});

describe('ANALYTICS_ENABLED', () => {
  it('is true by default; false counts nothing and writes nothing', async () => {
    const t = await createTestApp({ ANALYTICS_ENABLED: 'false' });
    try {
      expect(t.config.env.ANALYTICS_ENABLED).toBe(false);
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key);
      const license = await makeLicense(t, key, project.id);
      expectSuccess(
        await t.http().post(RUNTIME).set('X-LICENSE-KEY', license.uuid).query({ action: 'check_project' }),
      );
      expectError(await t.http().post(RUNTIME).set('X-LICENSE-KEY', license.uuid), 400);
      await t.app.get(AnalyticsCounts).flush();
      expect(await t.dataSource.query('SELECT * FROM runtime_answers')).toEqual([]);
      const data = expectSuccess(await apiAs(t, key).get(`/project/${project.id}/analytics`));
      expect(data.totals).toEqual({ paid: 0, unpaid: 0, refused: 0 });
    } finally {
      await t.close();
    }
  });
});

describe('countries as COUNTRY_HEADER sends them (CF-IPCountry by default)', () => {
  it('counts ISO 3166-1 alpha-2 codes, XX and T1; any other value counts as unknown', async () => {
    const t = await createTestApp();
    try {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { has_paid: true });
      const license = await makeLicense(t, key, project.id);
      const sent = ['us', 'US', 'XX', 'T1', 'ZZ', 'Q1', 'AA', '00', 'U$', 'USA'];
      for (let i = 0; i < 40; i++) sent.push(`${String.fromCharCode(65 + (i % 26))}${i % 10}`);
      for (const country of sent)
        expectSuccess(
          await t
            .http()
            .post(RUNTIME)
            .query({ action: 'check_project' })
            .set('X-LICENSE-KEY', license.uuid)
            .set('CF-IPCountry', country),
        );
      await t.app.get(AnalyticsCounts).flush();
      const data = expectSuccess(
        await apiAs(t, key).get(`/project/${project.id}/analytics`).query({ group_by: 'country' }),
      );
      const counts = Object.fromEntries(
        (data.series as Json[]).map((s) => [s.key, (s.points as Json[]).reduce((n, p) => n + p.count, 0)]),
      );
      expect(counts).toEqual({ US: 2, XX: 1, T1: 1, null: sent.length - 4 });
    } finally {
      await t.close();
    }
  });
});

describe('upgrading to paid answers by license', () => {
  it("leaves the days counted before it unsplit (paid null), adds to them without splitting them, and splits new days' counts", async () => {
    const db = await databaseBefore(LicenseUsagePaid1764750000000, async (before, { user, project }) => {
      await before.query(
        "INSERT INTO licenses (project_id, user_id, uuid, uuid_hash, title) VALUES (?, ?, 'uuid-old', 'hash-old', 'old')",
        [project.id, user.id],
      );
      const [license] = await before.query('SELECT id FROM licenses');
      await before.query(
        "INSERT INTO license_usage (license_id, day, count) VALUES (?, '2026-01-01', 5), (?, '2026-01-02', 2)",
        [license.id, license.id],
      );
    });
    let t: TestApp | undefined;
    try {
      t = await createTestApp({}, { databaseUrl: db.url });
      const [license] = await t.dataSource.query('SELECT id FROM licenses');
      const usage = t.app.get(UsageFlush);
      // The day of the upgrade gets more checks; the next day is counted whole.
      usage.add(Number(license.id), '2026-01-02', true);
      usage.add(Number(license.id), '2026-01-03', true);
      usage.add(Number(license.id), '2026-01-03', false);
      await usage.flush();
      const rows = await t.dataSource.query(
        'SELECT day, count, paid FROM license_usage WHERE license_id = ? ORDER BY day',
        [license.id],
      );
      expect(
        rows.map((r: Json) => [r.day, Number(r.count), r.paid === null ? null : Number(r.paid)]),
      ).toEqual([
        ['2026-01-01', 5, null],
        ['2026-01-02', 3, null],
        ['2026-01-03', 2, 1],
      ]);
    } finally {
      await t?.close();
      await db.drop();
    }
  }, 120_000);
});
