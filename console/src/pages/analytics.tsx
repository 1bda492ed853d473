// What the gate answered (docs/analytics.md): answers by outcome over time, refusals by
// reason, the top domains and countries (or projects, account-wide), each a chart with its table.
import { useState } from 'preact/hooks';
import { api, type Project, type Schemas, unwrap } from '../api';
import { type Access, PageHeading } from '../app';
import { type Bar, type Part, RankChart, StackedBarChart } from '../chart';
import { ErrorMessage, Loading, useLoad } from '../ui';
import { nameOf, type Ref, useNames } from '../names';

type Analytics = Schemas['Analytics'];
type GroupBy = Analytics['group_by'];

const RANGES = {
  week: { label: 'Last 7 days, by day', granularity: 'day' as const },
  day: { label: 'Last 24 hours, by hour', granularity: 'hour' as const },
};
type Range = keyof typeof RANGES;
const OUTCOMES = [
  { key: 'paid', label: 'Paid' },
  { key: 'unpaid', label: 'Unpaid' },
  { key: 'refused', label: 'Refused' },
];
/** How many keys a ranking shows. */
const TOP = 10;
/** What a license's checks answered are split into; "not split": days counted before paid answers were. */
const LICENSE_PARTS: Part[] = [
  { name: 'Paid', tone: 's0' },
  { name: 'Unpaid', tone: 's1' },
  { name: 'Not split', tone: 's3' },
];

/** Account-wide analytics for a global key; a scoped key's are its project's. */
export function AnalyticsPage({ access }: { access: Access }) {
  return (
    <>
      <PageHeading>Analytics</PageHeading>
      {access.scope ? (
        <ScopedAnalytics project={access.scope} />
      ) : (
        <>
          <p>Every project of the account. A project's own analytics are on its Analytics tab.</p>
          <AnalyticsView />
        </>
      )}
    </>
  );
}

function ScopedAnalytics({ project }: { project: number }) {
  const loaded = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project } } })),
    [project],
  );
  if (!loaded.data)
    return loaded.error ? <ErrorMessage error={loaded.error} /> : <Loading what="the project" />;
  return (
    <>
      <p>
        The analytics of <a href={`#/projects/${project}/analytics`}>{loaded.data.name}</a>.
      </p>
      <AnalyticsView project={loaded.data} />
    </>
  );
}

/** Sums a series' points. */
const total = (s: Analytics['series'][number]) => s.points.reduce((sum, p) => sum + p.count, 0);

/** The keys of a grouping ranked by their total, largest first, zeros left out. */
function ranked(a: Analytics, name: (key: string | null) => string): (Bar & { key: string | null })[] {
  return a.series
    .map((s) => ({ key: s.key, label: name(s.key), value: total(s) }))
    .filter((b) => b.value > 0)
    .sort((x, y) => y.value - x.value)
    .slice(0, TOP);
}

/**
 * A license's checks answered over the range, as [paid, unpaid, not split]: a day the API cannot split
 * (paid null, counted before paid answers were) counts whole as not split.
 */
function answeredParts(s: Analytics['series'][number]): number[] {
  const parts = [0, 0, 0];
  for (const p of s.points) {
    if (p.paid === null || p.paid === undefined) parts[2] += p.count;
    else {
      parts[0] += p.paid;
      parts[1] += p.unpaid ?? p.count - p.paid;
    }
  }
  return parts;
}

/** The split in words, as the ranking's table says it: "6 paid + 2 unpaid = 8 answered". */
function answeredText([paid, unpaid, unsplit]: number[]): string {
  const more = unsplit ? ` + ${unsplit} not split` : '';
  return `${paid} paid + ${unpaid} unpaid${more} = ${paid + unpaid + unsplit} answered`;
}

/** The bucket's start as people read it: the day, or the day and hour (UTC). */
const bucketLabel = (iso: string, hourly: boolean) =>
  hourly ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);

/** A project's analytics, or the account's (no project: GET /analytics, global keys only). */
export function AnalyticsView({ project }: { project?: Project }) {
  const [range, setRange] = useState<Range>('week');
  const hourly = range === 'day';
  const loaded = useLoad(async () => {
    const query = hourly
      ? {
          granularity: 'hour' as const,
          from: new Date(Date.now() - 23 * 3600_000).toISOString(),
          to: new Date().toISOString(),
        }
      : { granularity: 'day' as const };
    const get = (group_by: GroupBy) =>
      unwrap(
        project
          ? api.GET('/api/v1/project/{project}/analytics', {
              params: { path: { project: project.id }, query: { ...query, group_by } },
            })
          : api.GET('/api/v1/analytics', { params: { query: { ...query, group_by } } }),
      );
    const [outcome, reason, where, country, licenses] = await Promise.all([
      get('outcome'),
      get('reason'),
      get(project ? 'domain' : 'project'),
      get('country'),
      // A project's licenses are counted by day only (docs/analytics.md): not asked by the hour.
      project && !hourly ? get('license') : null,
    ]);
    // Domains, projects and licenses are counted by id: their names come from their lists (first page).
    const names = new Map<string, string>();
    const titles = new Map<string, string>();
    if (project) {
      const path = { project: project.id };
      const [domains, licensePage] = await Promise.all([
        unwrap(api.GET('/api/v1/project/{project}/domains', { params: { path, query: { per_page: 50 } } })),
        licenses
          ? unwrap(
              api.GET('/api/v1/project/{project}/licenses', { params: { path, query: { per_page: 50 } } }),
            )
          : null,
      ]);
      for (const d of domains.data) names.set(String(d.id), d.domain);
      for (const l of licensePage?.data ?? []) titles.set(String(l.id), l.title);
    } else {
      const projects = await unwrap(api.GET('/api/v1/project', { params: { query: { per_page: 50 } } }));
      for (const p of projects.data) names.set(String(p.id), p.name);
    }
    return { outcome, reason, where, country, licenses, names, titles };
  }, [project?.id, range]);

  const id = `range-${project?.id ?? 'all'}`;
  const data = loaded.data;
  // Ranked ids beyond the lists' first page are asked for one by one.
  const missing: Ref[] = [];
  if (data) {
    const where = project ? 'domain' : 'project';
    for (const s of data.where.series)
      if (s.key !== null && !data.names.has(s.key))
        missing.push({ kind: where, id: Number(s.key), project: project?.id });
    for (const s of data.licenses?.series ?? [])
      if (s.key !== null && !data.titles.has(s.key))
        missing.push({ kind: 'license', id: Number(s.key), project: project?.id });
  }
  const known = useNames(missing);
  const named = (kind: Ref['kind'], key: string, listed: string | undefined) => {
    if (listed !== undefined) return listed;
    const n = nameOf(known, { kind, id: Number(key), project: project?.id });
    // A name found has a page; an id alone ("#7", "#7 (deleted)") says what it is the id of.
    return n.href ? n.label : `${kind} ${n.label}`;
  };
  const scope = project ? project.name : 'all projects';
  return (
    <section aria-labelledby="analytics-h">
      <h2 id="analytics-h">Answers of the gate{project ? '' : ': every project'}</h2>
      <div class="field range">
        <label for={id}>Range</label>
        <select id={id} value={range} onChange={(e) => setRange(e.currentTarget.value as Range)}>
          {(Object.keys(RANGES) as Range[]).map((r) => (
            <option key={r} value={r}>
              {RANGES[r].label}
            </option>
          ))}
        </select>
      </div>
      <button type="button" onClick={loaded.reload}>
        Refresh analytics
      </button>
      <ErrorMessage error={loaded.error} />
      {loaded.loading && !data ? <Loading what="the analytics" /> : null}
      {data ? (
        <div aria-busy={loaded.loading}>
          <ul class="totals" aria-label="Totals of the range">
            {OUTCOMES.map((o) => (
              <li key={o.key}>
                <strong data-testid={`total-${o.key}`}>
                  {data.outcome.totals[o.key as keyof Analytics['totals']]}
                </strong>{' '}
                {o.label}
              </li>
            ))}
          </ul>
          <StackedBarChart
            title={`Answers per ${hourly ? 'hour' : 'day'} by outcome, ${RANGES[range].label.toLowerCase()}`}
            description={`Paid, unpaid and refused answers of ${scope}, stacked per ${hourly ? 'hour' : 'day'} (UTC), from ${bucketLabel(data.outcome.from, hourly)} to ${bucketLabel(data.outcome.to, hourly)}.`}
            bucketHeading={hourly ? 'Hour (UTC)' : 'Day (UTC)'}
            buckets={(data.outcome.series[0]?.points ?? []).map((p) => bucketLabel(p.t, hourly))}
            series={OUTCOMES.map((o) => ({
              key: o.key,
              label: o.label,
              values:
                data.outcome.series.find((s) => s.key === o.key)?.points.map((p) => p.count) ??
                (data.outcome.series[0]?.points ?? []).map(() => 0),
            }))}
          />
          <div class="charts">
            <Ranking
              title="Refusals by reason"
              heading="Reason"
              empty="No refusal in this range."
              scope={scope}
              bars={ranked(data.reason, (k) => k ?? 'unknown')}
            />
            {project ? (
              <Ranking
                title="Top domains"
                heading="Domain"
                empty="No answer counted against a domain in this range."
                scope={scope}
                bars={ranked(data.where, (k) =>
                  k === null ? 'no registered domain' : named('domain', k, data.names.get(k)),
                ).map((b) => (b.key === null ? b : { ...b, href: `#/projects/${project.id}/domains` }))}
              />
            ) : (
              <Ranking
                title="Top projects"
                heading="Project"
                empty="No answer in this range."
                scope={scope}
                bars={ranked(data.where, (k) =>
                  k === null ? 'none' : named('project', k, data.names.get(k)),
                ).map((b) => (b.key === null ? b : { ...b, href: `#/projects/${b.key}/analytics` }))}
              />
            )}
            <Ranking
              title="Top countries"
              heading="Country"
              empty="No answer in this range."
              scope={scope}
              bars={ranked(data.country, (k) => k ?? 'unknown country')}
            />
            {project ? (
              <LicenseRanking
                project={project}
                scope={scope}
                licenses={data.licenses}
                name={(k) => named('license', k, data.titles.get(k))}
              />
            ) : null}
          </div>
        </div>
      ) : null}
    </section>
  );
}

/**
 * The licenses whose has-paid checks were answered most (docs/analytics.md), each bar split into the
 * paid and the unpaid answers; by day only, so nothing when the range is by the hour.
 */
function LicenseRanking(props: {
  project: Project;
  scope: string;
  licenses: Analytics | null;
  name: (key: string) => string;
}) {
  const bars = props.licenses ? ranked(props.licenses, (k) => props.name(k ?? '')) : [];
  const withParts = bars.map((b) => {
    const series = props.licenses?.series.find((s) => s.key === b.key);
    const parts = series ? answeredParts(series) : [0, 0, b.value];
    return {
      ...b,
      parts,
      text: answeredText(parts),
      href: `#/projects/${props.project.id}/licenses/${b.key}`,
    };
  });
  // "Not split" is named only when some license has such days (an upgrade in the range).
  const parts = withParts.some((b) => b.parts[2] > 0) ? LICENSE_PARTS : LICENSE_PARTS.slice(0, 2);
  return (
    <Ranking
      title="Top licenses: checks answered, paid and unpaid"
      heading="License"
      valueHeading="Checks answered"
      parts={parts}
      note="The has-paid checks of each license that passed every refusal, by UTC day: each bar split into the checks answered paid and those answered unpaid. Refused checks are not counted here. Days counted before LicenseGate counted paid answers are not split."
      empty={
        props.licenses
          ? 'No license was answered in this range: the first check of a license key shows here.'
          : 'Licenses are counted by day: choose the last 7 days to see them.'
      }
      scope={props.scope}
      bars={withParts}
    />
  );
}

function Ranking(props: {
  title: string;
  heading: string;
  empty: string;
  scope: string;
  bars: Bar[];
  /** What is counted, when it is not every answer. */
  note?: string;
  /** The heading of the table's count column (Count unless sent). */
  valueHeading?: string;
  /** What each bar is split into, when it is. */
  parts?: Part[];
}) {
  const split = props.parts
    ? ` Each bar is split into ${props.parts.map((p) => p.name.toLowerCase()).join(', ')}; the table says each in words.`
    : '';
  return (
    <div>
      <h3>{props.title}</h3>
      {props.note ? <p class="hint">{props.note}</p> : null}
      {props.bars.length === 0 ? (
        <p>{props.empty}</p>
      ) : (
        <RankChart
          title={props.title}
          description={`${props.title} of ${props.scope}, largest first (at most ${TOP}).${split}`}
          labelHeading={props.heading}
          valueHeading={props.valueHeading}
          parts={props.parts}
          bars={props.bars}
        />
      )}
    </div>
  );
}
