// A project's payment connectors (docs/payments.md): list, create, edit, delete, the
// endpoint URL to paste into the provider's dashboard, and each connector's event log.
import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Project, type Schemas, unwrap } from '../api';
import type { Access } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  intOrNull,
  Loading,
  MoreButton,
  Notice,
  ReadOnlyField,
  show,
  textOrNull,
  useCursorList,
  useFocusOnDraw,
  useForm,
  when,
} from '../ui';
import { LicenseFields, licenseBody, type LicenseValues, licenseValues, useDomains } from './licenses';
import { CopyField } from '../copy';
import { TestEventButton } from './test-event';
import { ResourceName, useNames } from '../names';
import { PublicUrlWarning } from './public-url';

type Connector = Schemas['PaymentConnector'];
type Provider = Connector['provider'];

// Keyed by the API's provider enum (the server's provider registry, through openapi.json): a provider
// added there without a label here fails the console's type check.
const LABELS: Record<Provider, string> = {
  stripe: 'Stripe',
  paddle: 'Paddle',
  lemonsqueezy: 'Lemon Squeezy',
  polar: 'Polar',
  standard: 'Standard Webhooks',
};
const PROVIDERS = (Object.keys(LABELS) as Provider[]).map((value) => ({ value, label: LABELS[value] }));
const providerLabel = (p: Provider) => LABELS[p] ?? p;
const connectorName = (c: Connector) => c.name ?? `${providerLabel(c.provider)} connector ${c.id}`;

/** A product as the API takes it: the provider's id, or the id with the code of its plan. */
type Product = string | { id: string; plan: string };

/** A connector's products as the form edits them: one a line, the id, then its plan code after a space. */
const productsText = (products: Connector['products'] = []) =>
  products.map((p) => (typeof p === 'string' ? p : `${p.id} ${p.plan}`)).join('\n');

/** The lines of the products field as the API takes them (blank lines dropped; the API checks the rest). */
function productsBody(text: string): Product[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [id, ...plan] = line.split(/\s+/);
      return plan.length > 0 ? { id, plan: plan.join(' ') } : id;
    });
}

const EVERY_PRODUCT =
  'Every product of this provider account is accepted: list your products to accept only them.';

/** Providers whose checkout custom data (where an event says what it pays for) is written by the buyer. */
const BUYER_CUSTOM_DATA: Partial<Record<Provider, true>> = { paddle: true, lemonsqueezy: true };

/** What the connector's products mean, under the products field and in the list of connectors. */
function ProductsNote({ provider, empty }: { provider: string; empty: boolean }) {
  if (!empty) return null;
  return (
    <p class="hint">
      {EVERY_PRODUCT}
      {BUYER_CUSTOM_DATA[provider as Provider] ? (
        <>
          {' '}
          <strong>
            {providerLabel(provider as Provider)} checkout custom data is written by the buyer: without a
            list, a buyer of any of your products can name what they pay for.
          </strong>
        </>
      ) : null}
    </p>
  );
}

type ConnectorValues = LicenseValues & {
  provider: string;
  signing_secret: string;
  name: string;
  grace_days: string;
  issue_licenses: boolean;
  is_active: boolean;
  products: string;
  match_customers_by_email: boolean;
};

const connectorValues = (c?: Connector): ConnectorValues => ({
  ...licenseValues(c?.license_template ?? undefined),
  provider: c?.provider ?? 'stripe',
  signing_secret: '',
  name: c?.name ?? '',
  grace_days: c ? String(c.grace_days) : '3',
  issue_licenses: c?.issue_licenses ?? false,
  is_active: c?.is_active ?? true,
  products: productsText(c?.products),
  match_customers_by_email: c?.match_customers_by_email ?? false,
});

/** The template as the API takes it: null when licenses are not issued and no field is filled. */
function templateBody(v: ConnectorValues): Schemas['LicenseTemplateDto'] | null {
  // A template has no title.
  const { title: _title, ...template } = licenseBody(v);
  const filled = Object.values(template).some((x) => x !== null && x !== false);
  return v.issue_licenses || filled ? template : null;
}

export function ConnectorsTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/payment-connectors', {
          params: { path, query: { per_page: 50, cursor } },
        }),
      ),
    [project.id],
  );
  const domains = useDomains(project.id);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [editing, setEditing] = useState<Connector | null>(null);
  const [events, setEvents] = useState<Connector | null>(null);
  const [sent, setSent] = useState(0);
  const form = useForm(connectorValues());
  const create = async (v: ConnectorValues) => {
    setDone(null);
    try {
      const made = await unwrap(
        api.POST('/api/v1/project/{project}/payment-connectors', {
          params: { path },
          body: {
            provider: v.provider as Provider,
            signing_secret: v.signing_secret,
            name: textOrNull(v.name),
            grace_days: intOrNull(v.grace_days) ?? undefined,
            issue_licenses: v.issue_licenses,
            license_template: templateBody(v),
            products: productsBody(v.products),
            match_customers_by_email: v.match_customers_by_email,
          },
        }),
      );
      form.setValues(connectorValues());
      setDone(
        `Connector ${connectorName(made)} created: paste its endpoint URL into ${providerLabel(made.provider)}.`,
      );
      list.reload();
    } finally {
      // The secret just sent does not stay on the page, whatever the answer.
      form.set('signing_secret', '');
    }
  };
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="connectors-h">
      <h2 id="connectors-h">Payment connectors</h2>
      <p>
        A connector receives a payment provider's signed events at its endpoint URL and marks this project, a
        domain or a license paid or unpaid.
      </p>
      <PublicUrlWarning />
      <ErrorMessage error={list.error ?? error} />
      {done ? <Notice>{done}</Notice> : null}
      {list.loading && !list.data ? <Loading what="connectors" /> : null}
      {list.data && rows.length === 0 ? <p>No connector yet.</p> : null}
      {rows.length > 0 ? (
        <table>
          <caption>Payment connectors of {project.name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Provider</th>
              <th scope="col">Active</th>
              <th scope="col">Grace (days)</th>
              <th scope="col">Issues licenses</th>
              <th scope="col">Products</th>
              <th scope="col">Last event</th>
              <th scope="col">Endpoint URL</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.id}>
                <th scope="row">{connectorName(c)}</th>
                <td>{providerLabel(c.provider)}</td>
                <td>{show(c.is_active)}</td>
                <td>{c.grace_days}</td>
                <td>{show(c.issue_licenses)}</td>
                <td class="products">
                  {c.products.length > 0 ? (
                    <ul>
                      {c.products.map((p, i) =>
                        typeof p === 'string' ? (
                          <li key={i}>
                            <code>{p}</code>
                          </li>
                        ) : (
                          <li key={i}>
                            <code>{p.id}</code> (plan <code>{p.plan}</code>)
                          </li>
                        ),
                      )}
                    </ul>
                  ) : (
                    <ProductsNote provider={c.provider} empty />
                  )}
                  {c.match_customers_by_email ? <p class="hint">Matches customers by email.</p> : null}
                </td>
                <td>{when(c.last_event_at)}</td>
                <td class="endpoint">
                  <CopyField
                    value={c.endpoint_url}
                    label={`Endpoint URL of ${connectorName(c)}`}
                    what="endpoint URL"
                    of={connectorName(c)}
                  />
                  {access.canWrite ? (
                    <TestEventButton
                      project={project.id}
                      connector={c.id}
                      name={connectorName(c)}
                      onSent={() => {
                        // The event log below shows what the event did, fresh.
                        setEvents(c);
                        setSent((n) => n + 1);
                        list.reload();
                      }}
                    />
                  ) : null}
                </td>
                <td class="row-actions">
                  <button type="button" onClick={() => setEvents(c)} aria-pressed={events?.id === c.id}>
                    Events of {connectorName(c)}
                  </button>{' '}
                  {access.canWrite ? (
                    <>
                      <button type="button" onClick={() => setEditing(c)}>
                        Edit {connectorName(c)}
                      </button>{' '}
                      <ConfirmButton
                        label={`Delete ${connectorName(c)}`}
                        question={`Delete the connector ${connectorName(c)}? Its endpoint stops answering.`}
                        confirmLabel="Yes, delete"
                        danger
                        onError={setError}
                        onConfirm={async () => {
                          await unwrap(
                            api.DELETE('/api/v1/project/{project}/payment-connectors/{connector}', {
                              params: { path: { ...path, connector: c.id } },
                            }),
                          );
                          if (editing?.id === c.id) setEditing(null);
                          if (events?.id === c.id) setEvents(null);
                          list.reload();
                        }}
                      />
                    </>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <MoreButton list={list} what="connectors" />
      {events ? <EventLog key={`${events.id}:${sent}`} project={project} connector={events} /> : null}
      {access.canWrite && editing ? (
        <EditConnector
          key={editing.id}
          project={project}
          connector={editing}
          domains={domains.data?.data ?? []}
          onDone={(message) => {
            setEditing(null);
            setDone(message);
            list.reload();
          }}
        />
      ) : null}
      {access.canWrite ? (
        <FormBox form={form} title="Add a payment connector" submitLabel="Create connector" onSubmit={create}>
          <ConnectorFields form={form} domains={domains.data?.data ?? []} />
        </FormBox>
      ) : null}
    </section>
  );
}

function ConnectorFields({
  form,
  domains,
  edit,
}: {
  form: ReturnType<typeof useForm<ConnectorValues>>;
  domains: Schemas['Domain'][];
  edit?: boolean;
}) {
  return (
    <>
      {edit ? (
        <ReadOnlyField
          label="Provider"
          value={providerLabel(form.values.provider as Provider)}
          hint="A connector keeps its provider: for another one, add a connector."
        />
      ) : (
        <Field form={form} name="provider" label="Provider" required options={PROVIDERS} />
      )}
      <Field
        form={form}
        name="signing_secret"
        label={edit ? 'New signing secret' : 'Signing secret'}
        type="password"
        required={!edit}
        hint={
          edit
            ? 'Leave empty to keep the current one.'
            : "The provider's webhook signing secret (Standard Webhooks: whsec_…). Stored encrypted, never shown again."
        }
      />
      <Field form={form} name="name" label="Name" hint="Optional, such as Stripe live." />
      <Field
        form={form}
        name="grace_days"
        label="Grace days"
        type="number"
        min={0}
        hint="Days an unpaid event leaves the gate open (0: it closes at once)."
      />
      {edit ? <Field form={form} name="is_active" label="Active" type="checkbox" /> : null}
      <Field
        form={form}
        name="issue_licenses"
        label="Issue licenses"
        type="checkbox"
        hint="A license for each order or subscription, on its first paid event; unticked, events mark this project or its domains paid."
      />
      <Field
        form={form}
        name="products"
        label="Products"
        multiline
        hint="One a line: the provider's product id (Stripe price or product, Paddle price or product, Lemon Squeezy variant or product, Polar product), or the id, a space and the code of the plan its licenses get. Events of other products are ignored."
      />
      <ProductsNote provider={form.values.provider} empty={productsBody(form.values.products).length === 0} />
      <Field
        form={form}
        name="match_customers_by_email"
        label="Match customers by email"
        type="checkbox"
        hint="An event's buyer is found by email when no customer has this provider's id for them. Off by default: an email is typed by the buyer."
      />
      {/* The template applies only to licenses the connector issues: hidden while it issues none. */}
      {form.values.issue_licenses ? (
        <fieldset class="template">
          <legend>License template: the licenses issued on a first paid event</legend>
          <LicenseFields form={form} domains={domains} template errorPrefix="license_template." />
        </fieldset>
      ) : null}
    </>
  );
}

function EditConnector({
  project,
  connector: c,
  domains,
  onDone,
}: {
  project: Project;
  connector: Connector;
  domains: Schemas['Domain'][];
  onDone: (message: string) => void;
}) {
  const form = useForm(connectorValues(c));
  const save = async (v: ConnectorValues) => {
    try {
      const saved = await unwrap(
        api.PATCH('/api/v1/project/{project}/payment-connectors/{connector}', {
          params: { path: { project: project.id, connector: c.id } },
          body: {
            ...(textOrNull(v.signing_secret) ? { signing_secret: v.signing_secret } : {}),
            name: textOrNull(v.name),
            grace_days: intOrNull(v.grace_days) ?? undefined,
            is_active: v.is_active,
            issue_licenses: v.issue_licenses,
            license_template: templateBody(v),
            products: productsBody(v.products),
            match_customers_by_email: v.match_customers_by_email,
          },
        }),
      );
      onDone(`Connector ${connectorName(saved)} saved.`);
    } finally {
      form.set('signing_secret', '');
    }
  };
  // The form opens below the list: the keyboard goes to its first field.
  const box = useFocusOnDraw<HTMLDivElement>([], 'select, input');
  return (
    <div ref={box}>
      <FormBox
        form={form}
        title={`Edit connector ${connectorName(c)}`}
        submitLabel="Save connector"
        onSubmit={save}
      >
        <ConnectorFields form={form} domains={domains} edit />
      </FormBox>
    </div>
  );
}

type Outcome = Schemas['PaymentEvent']['outcome'];

// Keyed by the API's outcome enum: an outcome added there without a label here fails the type check.
const OUTCOMES: Record<Outcome, string> = {
  applied: 'applied',
  ignored: 'ignored',
  stale: 'stale: older than an event already applied',
};

/**
 * An event's payload as the connector stored it (personal data redacted), loaded the first time its
 * disclosure is opened.
 */
function EventPayload({
  project,
  connector,
  event,
}: {
  project: number;
  connector: number;
  event: Schemas['PaymentEvent'];
}) {
  const [payload, setPayload] = useState<string | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const load = (open: boolean) => {
    if (!open || payload !== null) return;
    setError(null);
    unwrap(
      api.GET('/api/v1/project/{project}/payment-connectors/{connector}/events/{event}', {
        params: { path: { project, connector, event: event.id } },
      }),
    ).then(
      (item) =>
        setPayload(
          item.payload === null
            ? 'No payload: this event was received before payloads were kept.'
            : JSON.stringify(item.payload, null, 2),
        ),
      (failure: unknown) => setError(failure as ApiFailure),
    );
  };
  return (
    <details class="payload" onToggle={(ev) => load(ev.currentTarget.open)}>
      <summary>
        Show payload<span class="visually-hidden"> of {event.provider_event_id}</span>
      </summary>
      <ErrorMessage error={error} />
      {payload === null && !error ? <Loading what="payload" /> : null}
      {payload !== null ? <pre>{payload}</pre> : null}
    </details>
  );
}

function EventLog({ project, connector: c }: { project: Project; connector: Connector }) {
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/payment-connectors/{connector}/events', {
          params: { path: { project: project.id, connector: c.id }, query: { per_page: 50, cursor } },
        }),
      ),
    [project.id, c.id],
  );
  const rows = list.data?.data ?? [];
  const known = useNames(
    rows.flatMap((e) => (e.target ? [{ kind: e.target.kind, id: e.target.id, project: project.id }] : [])),
  );
  return (
    <section aria-labelledby="events-h" class="box">
      <h3 id="events-h">Events of {connectorName(c)}</h3>
      <button type="button" onClick={list.reload}>
        Refresh events
      </button>
      <ErrorMessage error={list.error} />
      {list.loading && !list.data ? <Loading what="events" /> : null}
      {list.data && rows.length === 0 ? <p>No event received yet.</p> : null}
      {rows.length > 0 ? (
        <div class="table-scroll">
          <table class="events">
            <caption>Events received by {connectorName(c)}, latest first</caption>
            <thead>
              <tr>
                <th scope="col">Provider event id</th>
                <th scope="col">Type</th>
                <th scope="col">Outcome</th>
                <th scope="col">Target</th>
                <th scope="col">Purchase</th>
                <th scope="col">Detail</th>
                <th scope="col">Received</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id}>
                  <th scope="row">
                    <code class="nowrap">{e.provider_event_id}</code>
                  </th>
                  <td class="nowrap">{e.type}</td>
                  <td>{OUTCOMES[e.outcome] ?? e.outcome}</td>
                  <td>
                    {e.target ? (
                      <>
                        {e.target.kind}{' '}
                        <ResourceName
                          known={known}
                          of={{ kind: e.target.kind, id: e.target.id, project: project.id }}
                        />
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td class="nowrap">
                    {e.subscription_id === null ? (
                      '—'
                    ) : (
                      <a href={`#/projects/${project.id}/subscriptions/${e.subscription_id}`}>
                        purchase #{e.subscription_id}
                      </a>
                    )}
                  </td>
                  <td class="detail">
                    {e.detail}
                    <EventPayload project={project.id} connector={c.id} event={e} />
                  </td>
                  <td class="nowrap">{when(e.received_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <MoreButton list={list} what="events" />
    </section>
  );
}
