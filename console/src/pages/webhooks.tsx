import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Project, unwrap } from '../api';
import type { Access } from '../app';
import { ErrorMessage, ListTable, Notice, useCursorList, when } from '../ui';

export function WebhooksTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/webhook-deliveries', {
          params: { path, query: { per_page: 50, cursor } },
        }),
      ),
    [project.id],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const retry = async (delivery: number) => {
    setError(null);
    setDone(null);
    try {
      await unwrap(
        api.POST('/api/v1/project/{project}/webhook-deliveries/{delivery}/retry', {
          params: { path: { ...path, delivery } },
        }),
      );
      setDone(`Delivery ${delivery} is being retried.`);
      list.reload();
    } catch (e) {
      setError(e as ApiFailure);
    }
  };
  return (
    <section aria-labelledby="webhooks-h">
      <h2 id="webhooks-h">Webhook deliveries</h2>
      <p>
        Events sent to{' '}
        {project.webhook_url ? <code>{project.webhook_url}</code> : 'the webhook URL (none set)'}.
      </p>
      <ErrorMessage error={list.error ?? error} />
      {done ? <Notice>{done}</Notice> : null}
      <ListTable
        list={list}
        what="deliveries"
        empty="No delivery yet."
        caption="Webhook deliveries, latest first"
        columns={['Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Created']}
        actions={access.canWrite}
        row={(d) => (
          <tr key={d.id}>
            <th scope="row">{d.type}</th>
            <td>{d.status}</td>
            <td>{d.attempts}</td>
            <td>{d.last_status_code ?? d.last_error ?? '—'}</td>
            <td>{when(d.next_attempt_at)}</td>
            <td>{when(d.created_at)}</td>
            {access.canWrite ? (
              <td>
                <button type="button" onClick={() => void retry(d.id)}>
                  Retry delivery {d.id}
                </button>
              </td>
            ) : null}
          </tr>
        )}
      />
    </section>
  );
}
