import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { fieldError, REFUSAL_REASONS } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { hourKey } from './analytics-counts.service.js';
import {
  DEFAULT_SERIES,
  type AnalyticsQueryDto,
  type Granularity,
  type Grouping,
} from './dto/analytics-query.dto.js';
import type { AnalyticsResponse, AnalyticsSeriesResponse } from './dto/analytics.response.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest range, in buckets: 31 days by hour, 366 by day. */
const MAX_SPAN: Record<Granularity, number> = { hour: 31 * 24, day: 366 };
const OUTCOMES = ['paid', 'unpaid', 'refused'] as const;

/** Whose answers: one project, or every live project of an account. */
export type AnalyticsScope = { project_id: number } | { owner_id: number };

/** The column a grouping reads in runtime_answers (license reads license_usage). */
const COLUMN: Record<Exclude<Grouping, 'license'>, string> = {
  outcome: 'outcome',
  reason: 'reason',
  domain: 'domain_id',
  country: 'country',
  project: 'project_id',
};

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/**
 * Reads the runtime answers' analytics (docs/analytics.md): the counts of runtime_answers (or of
 * license_usage, by license, split into paid and unpaid) in UTC buckets, one series per key with a
 * point for every bucket.
 */
@Injectable()
export class AnalyticsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  async read(scope: AnalyticsScope, query: AnalyticsQueryDto): Promise<AnalyticsResponse> {
    const granularity = query.granularity ?? 'day';
    const groupBy = query.group_by ?? 'outcome';
    if (groupBy === 'project' && 'project_id' in scope)
      throw fieldError(
        'group_by',
        'The group by project is only for GET /analytics, over all your projects.',
      );
    if (groupBy === 'license' && granularity === 'hour')
      throw fieldError(
        'granularity',
        'Licenses are counted by UTC day: group_by=license takes granularity=day.',
      );
    const size = granularity === 'hour' ? HOUR_MS : DAY_MS;
    // Math.floor, not ms - ms % size: the remainder of a time before 1970 is negative, and would round it up.
    const floor = (ms: number) => Math.floor(ms / size) * size;
    const end = (query.to ?? this.clock.now()).getTime();
    if (query.from && query.from.getTime() > end)
      throw fieldError(
        'from',
        query.to
          ? 'The from field must be a time before or at to.'
          : 'The from field must be a time before or at now (to defaults to now).',
      );
    const last = floor(end);
    const first = query.from ? floor(query.from.getTime()) : last - 7 * DAY_MS + size;
    // The limit is on the range sent, not on its buckets: exactly 31 days by hour (366 by day) spans
    // one bucket more whenever `to` is not on a bucket's edge.
    const span = Math.ceil((end - (query.from?.getTime() ?? first)) / size);
    if (span > MAX_SPAN[granularity]) {
      const limit = granularity === 'hour' ? '31 days (744 hours) by hour' : '366 days by day';
      throw fieldError(
        query.to ? 'to' : 'from',
        `The range from ${iso(query.from?.getTime() ?? first)} to ${iso(end)} spans ${span} ${granularity}s; at most ${limit}: narrow it${granularity === 'hour' ? ' or use granularity=day' : ''}.`,
      );
    }

    const buckets = (last - first) / size + 1;

    // Bucket keys as the database spells them: runtime_answers.hour 'YYYY-MM-DD HH', license_usage.day 'YYYY-MM-DD'.
    const width = granularity === 'hour' ? 13 : 10;
    const bucketKey = (ms: number) => new Date(ms).toISOString().slice(0, width).replace('T', ' ');
    const hourFrom = hourKey(first);
    const hourTo = hourKey(last + size - HOUR_MS);
    const [scopeSql, scopeParam] =
      'project_id' in scope
        ? ['project_id = ?', scope.project_id]
        : [
            'project_id IN (SELECT id FROM projects WHERE user_id = ? AND deleted_at IS NULL)',
            scope.owner_id,
          ];

    // Per bucket and key, in one of two tables: the filter that scopes and dates the rows, and its parameters.
    const table =
      groupBy === 'license'
        ? {
            bucket: 'u.day',
            key: 'u.license_id',
            from: `license_usage u WHERE u.license_id IN (SELECT id FROM licenses WHERE ${scopeSql}) AND u.day >= ? AND u.day <= ?`,
            params: [scopeParam, bucketKey(first), bucketKey(last)],
          }
        : {
            bucket: `SUBSTR(hour, 1, ${width})`,
            key: COLUMN[groupBy],
            from: `runtime_answers WHERE ${scopeSql} AND hour >= ? AND hour <= ?${groupBy === 'reason' ? " AND outcome = 'refused'" : ''}`,
            params: [scopeParam, hourFrom, hourTo],
          };
    // Open-ended keys (a project's 100 000 licenses, 10 000 domains) answer only the `limit` busiest:
    // every key's every bucket would be millions of points, read and built in memory by one request.
    const open = groupBy !== 'outcome' && groupBy !== 'reason';
    const limit = query.limit ?? DEFAULT_SERIES;
    let keys: unknown[] = [];
    if (open) {
      keys = (
        await this.dataSource.query<Array<{ k: unknown }>>(
          `SELECT ${table.key} AS k FROM ${table.from} GROUP BY ${table.key} ORDER BY SUM(count) DESC, ${table.key} LIMIT ?`,
          [...table.params, limit + 1],
        )
      ).map((row) => row.k);
    }
    const hasMore = keys.length > limit;
    keys = keys.slice(0, limit);
    // By license, the paid answers too, and how many rows predate their counting (paid null: unknown).
    const split = groupBy === 'license' ? ', SUM(paid) AS p, COUNT(*) - COUNT(paid) AS unknown' : '';
    const rows: Array<{ t: string; k: unknown; n: unknown; p?: unknown; unknown?: unknown }> =
      open && keys.length === 0
        ? []
        : await this.dataSource.query(
            `SELECT ${table.bucket} AS t, ${table.key} AS k, SUM(count) AS n${split} FROM ${table.from}${open ? ` AND ${table.key} IN (${keys.map(() => '?').join(', ')})` : ''}
             GROUP BY ${table.bucket}, ${table.key}`,
            open ? [...table.params, ...keys] : table.params,
          );
    const totalsRows: Array<{ outcome: string; n: unknown }> = await this.dataSource.query(
      `SELECT outcome, SUM(count) AS n FROM runtime_answers WHERE ${scopeSql} AND hour >= ? AND hour <= ? GROUP BY outcome`,
      [scopeParam, hourFrom, hourTo],
    );

    const index = new Map<string, number>();
    for (let i = 0; i < buckets; i++) index.set(bucketKey(first + i * size), i);
    const counts = new Map<string | null, number[]>();
    /** By license: the paid answers per bucket, null where some of the bucket's were not split. */
    const paid = new Map<string | null, Array<number | null>>();
    const fixed: readonly string[] =
      groupBy === 'outcome' ? OUTCOMES : groupBy === 'reason' ? REFUSAL_REASONS : [];
    for (const key of fixed) counts.set(key, new Array<number>(buckets).fill(0));
    for (const row of rows) {
      const at = index.get(String(row.t));
      if (at === undefined) continue;
      const key = seriesKey(groupBy, row.k);
      let points = counts.get(key);
      if (!points) {
        points = new Array<number>(buckets).fill(0);
        counts.set(key, points);
        if (split) paid.set(key, new Array<number | null>(buckets).fill(0));
      }
      points[at] += Number(row.n);
      const paidPoints = paid.get(key);
      if (paidPoints) paidPoints[at] = Number(row.unknown) > 0 ? null : Number(row.p ?? 0);
    }
    const sum = (points: number[]) => points.reduce((a, b) => a + b, 0);
    let entries = [...counts];
    // Open-ended keys: the busiest first.
    if (fixed.length === 0)
      entries = entries.sort(([ka, a], [kb, b]) => sum(b) - sum(a) || String(ka).localeCompare(String(kb)));
    const series: AnalyticsSeriesResponse[] = entries.map(([key, points]) => {
      const paidPoints = paid.get(key);
      return {
        key,
        points: points.map((count, i) => {
          const t = iso(first + i * size);
          if (!paidPoints) return { t, count };
          const p = paidPoints[i];
          return p === null
            ? { t, count, paid: null, unpaid: null }
            : { t, count, paid: p, unpaid: count - p };
        }),
      };
    });
    const totals = { paid: 0, unpaid: 0, refused: 0 };
    for (const row of totalsRows)
      if (row.outcome in totals) totals[row.outcome as keyof typeof totals] = Number(row.n);
    return {
      from: iso(first),
      to: iso(last),
      granularity,
      group_by: groupBy,
      series,
      has_more: hasMore,
      totals,
    };
  }
}

/** A row's key as the answer names it: ids as strings, no domain (0) and no country ('') as null. */
function seriesKey(groupBy: Grouping, value: unknown): string | null {
  if (groupBy === 'domain') return Number(value) === 0 ? null : String(Number(value));
  if (groupBy === 'license' || groupBy === 'project') return String(Number(value));
  // outcome, reason, country: strings ('' for no country).
  return typeof value === 'string' && value !== '' ? value : null;
}
