// What the payment providers sold (docs/payments.md#subscriptions): one row per purchase, written by
// the connectors' events. Read-only here as in the API: the list by status, one with its events.
import { useState } from 'preact/hooks';
import { api, type Project, type Subscription, unwrap } from '../api';
import type { paths } from '../../../generated/openapi';
import { type Access, PageHeading } from '../app';
import { type Ref, ResourceName, useNames } from '../names';
import { ErrorMessage, Field, Loading, MoreButton, show, useCursorList, useForm, useLoad, when } from '../ui';
import { ProjectTabs } from './project';

type ListQuery = NonNullable<paths['/api/v1/project/{project}/subscriptions']['get']['parameters']['query']>;
type Status = NonNullable<ListQuery['status']>;

// A Record over the API's statuses: a status the API adds fails the typecheck until it is labelled here.
const STATUS_LABELS: Record<Status, string> = {
  active: 'Active',
  trialing: 'Trialing',
  past_due: 'Past due',
  paused: 'Paused',
  canceled: 'Canceled',
  expired: 'Expired',
  refunded: 'Refunded',
  disputed: 'Disputed',
  paid: 'Paid (one-time order)',
};
const STATUS_OPTIONS = [
  { value: '', label: 'Any status' },
  ...(Object.keys(STATUS_LABELS) as Status[]).map((s) => ({ value: s, label: STATUS_LABELS[s] })),
];

/** The status for people: a cancellation at the period's end is still paid until then. */
const statusText = (s: Subscription) =>
  s.cancel_at_period_end && !['canceled', 'expired', 'refunded'].includes(s.status)
    ? `${s.status}, ends ${s.current_period_end ? when(s.current_period_end) : 'at the period’s end'}`
    : s.status;

/** The customers, licenses and connectors the rows name, to show by name. */
const refsOf = (project: number, rows: Subscription[]): Ref[] =>
  rows.flatMap((s) => [
    { kind: 'payment_connector' as const, id: s.connector_id, project },
    ...(s.customer_id === null ? [] : [{ kind: 'customer' as const, id: s.customer_id, project }]),
    ...(s.license_id === null || s.license_deleted_at
      ? []
      : [{ kind: 'license' as const, id: s.license_id, project }]),
  ]);

/** Purchases as a table: each reference links to its page, its customer and license by name. */
export function SubscriptionsTable({
  project,
  rows,
  caption,
}: {
  project: number;
  rows: Subscription[];
  caption: string;
}) {
  const known = useNames(refsOf(project, rows));
  return (
    <div class="table-scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Reference</th>
            <th scope="col">Status</th>
            <th scope="col">Customer</th>
            <th scope="col">License</th>
            <th scope="col">Connector</th>
            <th scope="col">Last event</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <tr key={s.id}>
              <th scope="row">
                <a class="name" href={`#/projects/${project}/subscriptions/${s.id}`} title={s.reference}>
                  {s.reference}
                </a>{' '}
                <span class="sub">({s.kind})</span>
              </th>
              <td>{statusText(s)}</td>
              <td>
                {s.customer_id === null ? (
                  '—'
                ) : (
                  <ResourceName known={known} of={{ kind: 'customer', id: s.customer_id, project }} />
                )}
              </td>
              <td>
                {s.license_id === null ? (
                  '—'
                ) : s.license_deleted_at ? (
                  `#${s.license_id} (deleted)`
                ) : (
                  <ResourceName known={known} of={{ kind: 'license', id: s.license_id, project }} />
                )}
              </td>
              <td>
                <ResourceName known={known} of={{ kind: 'payment_connector', id: s.connector_id, project }} />
              </td>
              <td class="nowrap">
                {s.last_event_type ? `${s.last_event_type}, ${when(s.last_event_at)}` : '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function SubscriptionsTab({ project }: { access: Access; project: Project }) {
  const form = useForm({ status: '' });
  const [status, setStatus] = useState('');
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/subscriptions', {
          params: {
            path: { project: project.id },
            query: { status: (status || undefined) as Status | undefined, per_page: 50, cursor },
          },
        }),
      ),
    [project.id, status],
  );
  return (
    <section aria-labelledby="subscriptions-h">
      <h2 id="subscriptions-h">Subscriptions</h2>
      <p>
        One row for each subscription or one-time order a payment connector has seen, with what its latest
        event did. They are written by the connectors&apos; events only.
      </p>
      <form
        class="box filters"
        role="search"
        aria-label="Filter the subscriptions"
        onSubmit={form.submit((v) => Promise.resolve(setStatus(v.status)))}
        noValidate
      >
        <Field form={form} name="status" label="Status" options={STATUS_OPTIONS} />
        <button type="submit">Filter subscriptions</button>
      </form>
      <ErrorMessage error={list.error} />
      {list.loading && !list.data ? <Loading what="subscriptions" /> : null}
      {list.data && list.data.data.length === 0 ? (
        <p>
          {status
            ? 'No subscription has this status.'
            : 'No subscription yet. Connect a payment provider (the Payment connectors tab): each purchase it reports shows here.'}
        </p>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <SubscriptionsTable
          project={project.id}
          rows={list.data.data}
          caption={`Subscriptions of ${project.name}${status ? `, ${STATUS_LABELS[status as Status].toLowerCase()}` : ''}, newest first`}
        />
      ) : null}
      <MoreButton list={list} what="subscriptions" />
    </section>
  );
}

/** One purchase: its fields, and the connector's events of it, latest first. */
export function SubscriptionPage({
  project,
  subscription,
}: {
  access: Access;
  project: number;
  subscription: number;
}) {
  const loaded = useLoad(
    () =>
      unwrap(
        api.GET('/api/v1/project/{project}/subscriptions/{subscription}', {
          params: { path: { project, subscription } },
        }),
      ),
    [project, subscription],
  );
  const owner = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project } } })),
    [project],
  );
  const s = loaded.data;
  const known = useNames(
    s
      ? [
          ...refsOf(project, [s]),
          ...(s.target && s.target.kind !== 'license'
            ? [{ kind: s.target.kind, id: s.target.id, project }]
            : []),
        ]
      : [],
  );
  if (loaded.loading && !s) return <Loading what="the subscription" />;
  if (!s)
    return (
      <>
        <PageHeading>Subscription {subscription}</PageHeading>
        <ErrorMessage error={loaded.error} />
      </>
    );
  return (
    <>
      <PageHeading>
        {s.kind === 'order' ? 'Order' : 'Subscription'} {s.reference}
        {owner.data ? <span class="sub"> · {owner.data.name}</span> : null}
      </PageHeading>
      <ProjectTabs project={project} tab="subscriptions" current="location" />
      <p>
        <a href={`#/projects/${project}/subscriptions`}>
          Back to the subscriptions of {owner.data ? owner.data.name : 'the project'}
        </a>
      </p>
      <section aria-labelledby="fields-h">
        <h2 id="fields-h">Fields</h2>
        <dl class="facts">
          <dt>Id</dt>
          <dd>{s.id}</dd>
          <dt>Provider</dt>
          <dd>{s.provider}</dd>
          <dt>Reference</dt>
          <dd>
            <code>{s.reference}</code> ({s.kind})
          </dd>
          <dt>Status</dt>
          <dd>{s.status}</dd>
          <dt>Cancelled at the period’s end</dt>
          <dd>{show(s.cancel_at_period_end)}</dd>
          <dt>Current period ends</dt>
          <dd>{when(s.current_period_end)}</dd>
          <dt>Customer</dt>
          <dd>
            {s.customer_id === null ? (
              'none'
            ) : (
              <ResourceName known={known} of={{ kind: 'customer', id: s.customer_id, project }} />
            )}
          </dd>
          <dt>License</dt>
          <dd>
            {s.license_id === null ? (
              'none'
            ) : s.license_deleted_at ? (
              `#${s.license_id}, deleted ${when(s.license_deleted_at)}`
            ) : (
              <ResourceName known={known} of={{ kind: 'license', id: s.license_id, project }} />
            )}
          </dd>
          <dt>What its events move</dt>
          <dd>
            {s.target ? (
              <>
                {s.target.kind}{' '}
                <ResourceName known={known} of={{ kind: s.target.kind, id: s.target.id, project }} />
              </>
            ) : (
              'nothing yet'
            )}
          </dd>
          <dt>Products</dt>
          <dd>{s.product_ids.length ? s.product_ids.join(', ') : '—'}</dd>
          <dt>Connector</dt>
          <dd>
            <ResourceName known={known} of={{ kind: 'payment_connector', id: s.connector_id, project }} />
          </dd>
          <dt>Last event</dt>
          <dd>
            {s.last_event_type ? `${s.last_event_type}, ${when(s.last_event_at)} (the provider’s time)` : '—'}
          </dd>
          <dt>Created</dt>
          <dd>{when(s.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{when(s.updated_at)}</dd>
        </dl>
      </section>
      <section aria-labelledby="history-h">
        <h2 id="history-h">Event history</h2>
        <button type="button" onClick={loaded.reload}>
          Refresh events
        </button>
        {s.events.length === 0 ? (
          <p>No event of this purchase is in the connector’s log.</p>
        ) : (
          <div class="table-scroll">
            <table class="events">
              <caption>
                Events of {s.reference}, latest first{s.events.length === 50 ? ' (the latest 50)' : ''}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Provider event id</th>
                  <th scope="col">Type</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Detail</th>
                  <th scope="col">Received</th>
                </tr>
              </thead>
              <tbody>
                {s.events.map((e) => (
                  <tr key={e.id}>
                    <th scope="row">
                      <code class="nowrap">{e.provider_event_id}</code>
                    </th>
                    <td class="nowrap">{e.type}</td>
                    <td>{e.outcome}</td>
                    <td class="detail">{e.detail}</td>
                    <td class="nowrap">{when(e.received_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
