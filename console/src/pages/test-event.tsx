// "Send a test event": the API signs a sample event of the connector's provider with the
// connector's own secret and posts it to the connector's own endpoint (docs/payments.md), as a
// vendor's first check after pasting the URL into the provider. The sample moves nothing (ignored).
import { useState } from 'preact/hooks';
import { api, type Schemas, unwrap } from '../api';
import { ErrorMessage, useForm } from '../ui';

type Sent = Schemas['PaymentTestEvent'];

export function TestEventButton(props: {
  project: number;
  connector: number;
  name: string;
  onSent: () => void;
}) {
  const form = useForm({});
  const [sent, setSent] = useState<Sent | null>(null);
  const send = async () => {
    setSent(null);
    const answer = await unwrap(
      api.POST('/api/v1/project/{project}/payment-connectors/{connector}/test-event', {
        params: { path: { project: props.project, connector: props.connector } },
      }),
    );
    setSent(answer);
    props.onSent();
  };
  return (
    <div class="test-event">
      <button type="button" disabled={form.busy} onClick={form.submit(send)}>
        Send a test event<span class="visually-hidden"> to {props.name}</span>
      </button>{' '}
      <span role="status" aria-live="polite">
        {sent
          ? `Test event ${sent.event_id} (${sent.event_type}): the endpoint answered ${sent.http_status}, ${sent.outcome ?? 'refused'}. ${sent.detail}`
          : ''}
      </span>
      <ErrorMessage error={form.error} />
    </div>
  );
}
