import { useEffect, useState } from 'preact/hooks';
import { api, type AuditEvent, type Page, unwrap } from '../api';
import { type Access, PageHeading } from '../app';
import { ErrorMessage, Field, isoFromLocal, Loading, useForm, when } from '../ui';
import type { paths } from '../../../generated/openapi';
import { AUDIT_ACTIONS, RESOURCE_TYPES } from '../events';
import { type Ref, ResourceName, useNames } from '../names';

type Query = NonNullable<paths['/api/v1/audit-log']['get']['parameters']['query']>;

/** The account's audit log (a scoped key's: its project's), with filters. */
export function AuditPage({ access }: { access: Access }) {
  return (
    <>
      <PageHeading>Audit log</PageHeading>
      <AuditLog project={access.scope ?? undefined} />
    </>
  );
}

/** The audit log of the account, or of one project; the filters narrow it, "Show more" pages on. */
export function AuditLog({ project }: { project?: number }) {
  const form = useForm({ action: '', resource_type: '', resource_id: '', since: '', until: '' });
  const [rows, setRows] = useState<Page<AuditEvent> | null>(null);
  const [loading, setLoading] = useState(false);
  const load = async (v: typeof form.values, cursor?: string) => {
    const query: Query = {
      per_page: 50,
      ...(v.action ? { action: v.action as Query['action'] } : {}),
      ...(v.resource_type ? { resource_type: v.resource_type as Query['resource_type'] } : {}),
      ...(v.resource_id ? { resource_id: Number(v.resource_id) } : {}),
      ...(v.since ? { since: isoFromLocal(v.since) ?? undefined } : {}),
      ...(v.until ? { until: isoFromLocal(v.until) ?? undefined } : {}),
      ...(cursor ? { cursor } : {}),
    };
    setLoading(true);
    try {
      const page = await unwrap(
        project === undefined
          ? api.GET('/api/v1/audit-log', { params: { query } })
          : api.GET('/api/v1/project/{project}/audit-log', { params: { path: { project }, query } }),
      );
      setRows((old) =>
        cursor && old ? { data: [...old.data, ...page.data], next_cursor: page.next_cursor } : page,
      );
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    form.submit((v) => load(v))(new Event('submit'));
  }, [project]);
  const refOf = (e: AuditEvent): Ref | null =>
    e.resource_id === null ? null : { kind: e.resource_type, id: e.resource_id, project: e.project_id };
  const known = useNames(
    (rows?.data ?? []).flatMap((e) => [
      ...(refOf(e) ? [refOf(e) as Ref] : []),
      ...(e.project_id === null ? [] : [{ kind: 'project' as const, id: e.project_id }]),
    ]),
  );
  return (
    <section aria-labelledby="audit-h">
      <h2 id="audit-h">
        {project === undefined ? 'Every change of the account' : 'Changes to this project'}
      </h2>
      <form
        class="box filters"
        aria-label="Filter the audit log"
        onSubmit={form.submit((v) => load(v))}
        noValidate
      >
        <Field
          form={form}
          name="action"
          label="Action"
          options={[
            { value: '', label: 'Any action' },
            ...AUDIT_ACTIONS.map((a) => ({ value: a, label: a })),
          ]}
        />
        <Field
          form={form}
          name="resource_type"
          label="Resource type"
          options={[{ value: '', label: 'Any type' }, ...RESOURCE_TYPES.map((t) => ({ value: t, label: t }))]}
        />
        <Field form={form} name="resource_id" label="Resource id" type="number" min={1} />
        <Field form={form} name="since" label="Since (UTC)" type="datetime-local" />
        <Field form={form} name="until" label="Until (UTC)" type="datetime-local" />
        <button type="submit" disabled={form.busy}>
          Apply filters
        </button>
      </form>
      <ErrorMessage error={form.error} />
      {loading && !rows ? <Loading what="the audit log" /> : null}
      {rows && rows.data.length === 0 ? <p>No change matches.</p> : null}
      {rows && rows.data.length > 0 ? (
        <table>
          <caption>Changes, latest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">Resource</th>
              <th scope="col">Project</th>
              <th scope="col">By</th>
              <th scope="col">Changes</th>
            </tr>
          </thead>
          <tbody>
            {rows.data.map((e) => (
              <tr key={e.id}>
                <td>{when(e.created_at)}</td>
                <th scope="row">{e.action}</th>
                <td>
                  {e.resource_type.replace('_', ' ')}{' '}
                  {refOf(e) ? <ResourceName known={known} of={refOf(e) as Ref} /> : null}
                </td>
                <td>
                  {e.project_id === null ? (
                    '—'
                  ) : (
                    <ResourceName known={known} of={{ kind: 'project', id: e.project_id }} />
                  )}
                </td>
                <td>
                  {e.actor.type}
                  {e.actor.api_key_prefix ? ` ${e.actor.api_key_prefix}…` : ''}
                  {e.actor.customer_id ? ` (customer ${e.actor.customer_id})` : ''}
                </td>
                <td class="changes">
                  {e.changes && Object.keys(e.changes).length ? (
                    <details>
                      <summary>{Object.keys(e.changes).join(', ')}</summary>
                      <pre>{JSON.stringify(e.changes, null, 1)}</pre>
                    </details>
                  ) : (
                    '—'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {rows?.next_cursor ? (
        <button
          type="button"
          disabled={loading}
          onClick={(e) => form.submit((v) => load(v, rows.next_cursor ?? undefined))(e)}
        >
          Show more
        </button>
      ) : null}
    </section>
  );
}
