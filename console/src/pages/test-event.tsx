// "Send a test event": the API signs an example event of the connector's provider with the
// connector's own secret and receives it as the connector's endpoint does (docs/payments.md). Either
// one that moves nothing (a vendor's first check after pasting the URL into the provider), or a test
// payment for the project, a domain or a license, applied as a real payment is: a vendor sees the gate
// open without a sale.
import { useEffect, useState } from 'preact/hooks';
import { api, type Schemas, unwrap } from '../api';
import { ErrorMessage, Loading, useForm, useLoad } from '../ui';

type Sent = Schemas['PaymentTestEvent'];
type Kind = 'nothing' | 'project' | 'domain' | 'license';

const KINDS: { value: Kind; label: string }[] = [
  { value: 'nothing', label: 'An event that moves nothing' },
  { value: 'project', label: 'A test payment for: the project' },
  { value: 'domain', label: 'A test payment for: a domain' },
  { value: 'license', label: 'A test payment for: a license' },
];

/** Where the target of a test payment is managed. */
function targetHref(project: number, target: NonNullable<Sent['target']>): string {
  if (target.kind === 'license') return `#/projects/${project}/licenses/${target.id}`;
  if (target.kind === 'domain') return `#/projects/${project}/domains`;
  return `#/projects/${project}/settings`;
}

/**
 * The domain or license a test payment is for, by name; loaded only once that kind is chosen. The
 * first is chosen when none is.
 */
function TargetChoice(props: {
  id: string;
  project: number;
  kind: 'domain' | 'license';
  connectorName: string;
  value: string;
  onChange: (value: string) => void;
}) {
  const domains = useLoad(
    () =>
      props.kind === 'domain'
        ? unwrap(
            api.GET('/api/v1/project/{project}/domains', {
              params: { path: { project: props.project }, query: { per_page: 50 } },
            }),
          ).then((page) => page.data.map((d) => ({ value: String(d.id), label: d.domain })))
        : unwrap(
            api.GET('/api/v1/project/{project}/licenses', {
              params: { path: { project: props.project }, query: { per_page: 50 } },
            }),
          ).then((page) =>
            page.data.map((l) => ({
              value: String(l.id),
              // The API refuses these (its domain's flag answers): said before, not after.
              label:
                l.billing === 'project' && l.domain_id === null
                  ? `${l.title} (billed by its project: pay its domain instead)`
                  : l.title,
            })),
          ),
    [props.project, props.kind],
  );
  const choices = domains.data ?? [];
  useEffect(() => {
    if (choices.length > 0 && !choices.some((c) => c.value === props.value)) props.onChange(choices[0].value);
  }, [choices, props.value]);
  const what = props.kind === 'domain' ? 'Domain' : 'License';
  if (domains.error) return <ErrorMessage error={domains.error} />;
  if (!domains.data) return <Loading what={`${props.kind}s`} />;
  if (choices.length === 0) return <p class="hint">This project has no {props.kind} yet: add one first.</p>;
  return (
    <>
      <label for={props.id}>
        {what}
        <span class="visually-hidden"> to pay through {props.connectorName}</span>
      </label>
      <select id={props.id} value={props.value} onChange={(ev) => props.onChange(ev.currentTarget.value)}>
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </>
  );
}

export function TestEventButton(props: {
  project: number;
  connector: number;
  name: string;
  onSent: () => void;
}) {
  const form = useForm({});
  const [kind, setKind] = useState<Kind>('nothing');
  const [target, setTarget] = useState('');
  const [sent, setSent] = useState<Sent | null>(null);
  const needsTarget = kind === 'domain' || kind === 'license';
  const send = async () => {
    setSent(null);
    const body =
      kind === 'nothing'
        ? { event: 'nothing' as const }
        : kind === 'project'
          ? { event: 'payment' as const }
          : kind === 'domain'
            ? { event: 'payment' as const, domain_id: Number(target) }
            : { event: 'payment' as const, license_id: Number(target) };
    const answer = await unwrap(
      api.POST('/api/v1/project/{project}/payment-connectors/{connector}/test-event', {
        params: { path: { project: props.project, connector: props.connector } },
        body,
      }),
    );
    setSent(answer);
    props.onSent();
  };
  const id = `test-event-${props.connector}`;
  return (
    <div class="test-event">
      <label for={`${id}-kind`}>
        Test event<span class="visually-hidden"> for {props.name}</span>
      </label>
      <select
        id={`${id}-kind`}
        value={kind}
        onChange={(ev) => {
          setKind(ev.currentTarget.value as Kind);
          setTarget('');
          setSent(null);
        }}
      >
        {KINDS.map((k) => (
          <option key={k.value} value={k.value}>
            {k.label}
          </option>
        ))}
      </select>
      {needsTarget ? (
        <TargetChoice
          key={kind}
          id={`${id}-target`}
          project={props.project}
          kind={kind}
          connectorName={props.name}
          value={target}
          onChange={setTarget}
        />
      ) : null}
      {kind === 'nothing' ? (
        <p class="hint">Checks the connector end to end: the event is logged and changes nothing.</p>
      ) : (
        <p class="hint">
          A test payment marks the {kind} paid as a real payment would: checks answer paid and analytics count
          them. To undo it, mark the {kind} unpaid.
        </p>
      )}
      <button
        type="button"
        disabled={form.busy || (needsTarget && target === '')}
        onClick={form.submit(send)}
      >
        Send a test event<span class="visually-hidden"> to {props.name}</span>
      </button>
      <p role="status" aria-live="polite">
        {sent ? (
          <>
            {`Test event ${sent.event_id} (${sent.event_type}): the endpoint answered ${sent.http_status}, ${sent.outcome ?? 'refused'}. ${sent.detail}`}
            {sent.target && sent.outcome === 'applied' ? (
              <>
                {' '}
                <a href={targetHref(props.project, sent.target)}>Open the {sent.target.kind}</a>
              </>
            ) : null}
          </>
        ) : null}
      </p>
      <ErrorMessage error={form.error} />
    </div>
  );
}
