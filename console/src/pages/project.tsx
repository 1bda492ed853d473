import { useId, useState } from 'preact/hooks';
import { type ApiFailure, api, type Project, unwrap } from '../api';
import { type Access, go, PageHeading, type ProjectTab } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  intOrNull,
  Loading,
  Notice,
  paid,
  show,
  textOrNull,
  useForm,
  useLoad,
  when,
} from '../ui';
import { EVENT_TYPES, type EventType } from '../events';
import { AnalyticsView } from './analytics';
import { AuditLog } from './audit';
import { ConnectorsTab } from './connectors';
import { DomainsTab } from './domains';
import { InjectablesTab } from './injectables';
import { LicensesTab } from './licenses';
import { CustomersTab } from './customers';
import { SubscriptionsTab } from './subscriptions';
import { PlansTab } from './plans';
import { WebhooksTab } from './webhooks';

const TAB_LABELS: Record<ProjectTab, string> = {
  settings: 'Settings',
  domains: 'Domains',
  licenses: 'Licenses',
  customers: 'Customers',
  subscriptions: 'Subscriptions',
  plans: 'Plans',
  injectables: 'Injectables',
  connectors: 'Payment connectors',
  webhooks: 'Webhook deliveries',
  analytics: 'Analytics',
  audit: 'Audit log',
};

/**
 * One project: its tabs (settings, domains, licenses, injectables, payment connectors, webhook
 * deliveries, analytics, audit log).
 */
export function ProjectPage({ access, project, tab }: { access: Access; project: number; tab: ProjectTab }) {
  const loaded = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project } } })),
    [project],
  );
  if (loaded.loading && !loaded.data) return <Loading what="the project" />;
  if (!loaded.data)
    return (
      <>
        <PageHeading>Project {project}</PageHeading>
        <ErrorMessage error={loaded.error} />
      </>
    );
  const p = loaded.data;
  return (
    <>
      <PageHeading>
        {p.name} <span class="sub">· {TAB_LABELS[tab]}</span>
      </PageHeading>
      {p.locked_at ? (
        <Notice>This project is locked since {when(p.locked_at)}: it cannot be changed.</Notice>
      ) : null}
      {p.has_paid && p.grace_until ? (
        <Notice>
          A payment of this project stopped: it stays paid until {when(p.grace_until)}, then its gate closes
          unless it is paid again.
        </Notice>
      ) : null}
      <ProjectTabs project={project} tab={tab} />
      {tab === 'settings' ? <Settings access={access} project={p} reload={loaded.reload} /> : null}
      {tab === 'domains' ? <DomainsTab access={access} project={p} /> : null}
      {tab === 'licenses' ? <LicensesTab access={access} project={p} /> : null}
      {tab === 'customers' ? <CustomersTab access={access} project={p} /> : null}
      {tab === 'subscriptions' ? <SubscriptionsTab access={access} project={p} /> : null}
      {tab === 'plans' ? <PlansTab access={access} project={p} /> : null}
      {tab === 'injectables' ? <InjectablesTab access={access} project={p} /> : null}
      {tab === 'connectors' ? <ConnectorsTab access={access} project={p} /> : null}
      {tab === 'webhooks' ? <WebhooksTab access={access} project={p} /> : null}
      {tab === 'analytics' ? <AnalyticsView project={p} /> : null}
      {tab === 'audit' ? <AuditLog project={p.id} /> : null}
    </>
  );
}

/** A project's tabs; `current` says which page is one of them (a license is under Licenses). */
export function ProjectTabs({
  project,
  tab,
  current = 'page',
}: {
  project: number;
  tab: ProjectTab;
  current?: 'page' | 'location';
}) {
  return (
    <nav aria-label="Project" class="tabs">
      <ul>
        {(Object.keys(TAB_LABELS) as ProjectTab[]).map((t) => (
          <li key={t}>
            <a href={`#/projects/${project}/${t}`} aria-current={t === tab ? current : undefined}>
              {TAB_LABELS[t]}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** `webhook_events` as the form holds it: every event, or a chosen list. */
type Subscription = '*' | EventType[];
const subscription = (events: string[] | null): Subscription =>
  !events || events.includes('*') ? '*' : EVENT_TYPES.filter((e) => events.includes(e));
const subscriptionText = (p: Project) => {
  const s = subscription(p.webhook_events);
  const which = s === '*' ? 'every event' : s.length ? s.join(', ') : 'none';
  return p.webhook_enabled ? which : `paused (${which})`;
};
/** `meta` as the form shows it: JSON, or empty for no metadata. */
const metaText = (meta: Record<string, unknown> | null) =>
  meta && Object.keys(meta).length ? JSON.stringify(meta, null, 2) : '';

function Settings({ access, project: p, reload }: { access: Access; project: Project; reload: () => void }) {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [saved, setSaved] = useState(false);
  const form = useForm({
    name: p.name,
    slug: p.slug,
    description: p.description ?? '',
    default_redirect_url: p.default_redirect_url ?? '',
    webhook_url: p.webhook_url ?? '',
    webhook_secret: '',
    webhook_enabled: p.webhook_enabled,
    logo_url: p.logo_url ?? '',
    offline_grace_hours: p.offline_grace_hours === null ? '' : String(p.offline_grace_hours),
    meta: metaText(p.meta),
    has_paid: p.has_paid,
    is_active: p.is_active,
  });
  const [events, setEvents] = useState<Subscription>(() => subscription(p.webhook_events));
  const lockForm = useForm({ reason: '' });
  const save = async (v: typeof form.values) => {
    setSaved(false);
    const eventsChanged = JSON.stringify(events) !== JSON.stringify(subscription(p.webhook_events));
    await unwrap(
      api.PATCH('/api/v1/project/{project}', {
        params: { path: { project: p.id } },
        body: {
          name: v.name,
          slug: v.slug,
          description: textOrNull(v.description),
          default_redirect_url: textOrNull(v.default_redirect_url),
          webhook_url: textOrNull(v.webhook_url),
          ...(textOrNull(v.webhook_secret) ? { webhook_secret: v.webhook_secret } : {}),
          webhook_enabled: v.webhook_enabled,
          ...(eventsChanged ? { webhook_events: events === '*' ? ['*'] : events } : {}),
          logo_url: textOrNull(v.logo_url),
          offline_grace_hours: intOrNull(v.offline_grace_hours) ?? undefined,
          // Sent as typed: the API decodes a JSON string and says beside the field what is wrong with it.
          ...(v.meta !== metaText(p.meta)
            ? { meta: (textOrNull(v.meta) ?? null) as Record<string, unknown> | null }
            : {}),
          // Sent only when changed: any has_paid ends a payment grace (docs/payments.md).
          ...(v.has_paid !== p.has_paid ? { has_paid: v.has_paid } : {}),
          is_active: v.is_active,
        },
      }),
    );
    // The secret just sent does not stay on the page.
    form.set('webhook_secret', '');
    setSaved(true);
    reload();
  };
  const global = access.scope === null;
  return (
    <section aria-labelledby="settings-h">
      <h2 id="settings-h">Settings</h2>
      <dl class="facts">
        <dt>Id</dt>
        <dd>{p.id}</dd>
        <dt>Slug</dt>
        <dd>{p.slug}</dd>
        <dt>Paid</dt>
        <dd>{paid(p)}</dd>
        <dt>Active</dt>
        <dd>{show(p.is_active)}</dd>
        <dt>Locked</dt>
        <dd>{p.locked_at ? when(p.locked_at) : 'no'}</dd>
        <dt>Webhook URL</dt>
        <dd>{show(p.webhook_url)}</dd>
        <dt>Webhook events</dt>
        <dd>{subscriptionText(p)}</dd>
        <dt>Default redirect URL</dt>
        <dd>{show(p.default_redirect_url)}</dd>
        <dt>Created</dt>
        <dd>{when(p.created_at)}</dd>
      </dl>
      <ErrorMessage error={error} />
      {saved ? <Notice>Saved.</Notice> : null}
      {access.canWrite ? (
        <FormBox form={form} title="Edit project" submitLabel="Save project" onSubmit={save}>
          <Field form={form} name="name" label="Name" required />
          <Field form={form} name="slug" label="Slug" />
          <Field form={form} name="description" label="Description" multiline />
          <Field form={form} name="default_redirect_url" label="Default redirect URL" type="url" />
          <Field form={form} name="webhook_url" label="Webhook URL" type="url" />
          <Field
            form={form}
            name="webhook_secret"
            label="New webhook secret"
            type="password"
            hint="Leave empty to keep the current one."
          />
          <Field form={form} name="webhook_enabled" label="Send webhook events" type="checkbox" />
          <WebhookEvents value={events} onChange={setEvents} errors={form.fields.webhook_events ?? []} />
          <Field form={form} name="logo_url" label="Logo URL" type="url" />
          <Field form={form} name="offline_grace_hours" label="Offline grace (hours)" type="number" min={0} />
          <Field
            form={form}
            name="meta"
            label="Metadata (JSON)"
            multiline
            hint='A JSON object such as {"plan": "pro"}; empty: none.'
          />
          <Field form={form} name="has_paid" label="Paid" type="checkbox" />
          <Field form={form} name="is_active" label="Active" type="checkbox" />
        </FormBox>
      ) : null}
      {access.canWrite && global ? (
        <div class="box actions">
          <h3>Lock, unlock, delete</h3>
          {p.locked_at ? (
            <ConfirmButton
              label="Unlock project"
              question="Unlock this project?"
              onError={setError}
              onConfirm={async () => {
                await unwrap(
                  api.POST('/api/v1/project/{project}/unlock', { params: { path: { project: p.id } } }),
                );
                reload();
              }}
            />
          ) : (
            <form
              class="inline"
              aria-label="Lock project"
              onSubmit={lockForm.submit(async (v) => {
                await unwrap(
                  api.POST('/api/v1/project/{project}/lock', {
                    params: { path: { project: p.id } },
                    body: textOrNull(v.reason) ? { reason: v.reason } : {},
                  }),
                );
                reload();
              })}
            >
              <ErrorMessage error={lockForm.error} />
              <Field form={lockForm} name="reason" label="Reason for locking" />
              <button type="submit" disabled={lockForm.busy}>
                Lock project
              </button>
            </form>
          )}{' '}
          <ConfirmButton
            label="Delete project"
            question={`Delete the project ${p.name}?`}
            danger
            onError={setError}
            onConfirm={async () => {
              await unwrap(api.DELETE('/api/v1/project/{project}', { params: { path: { project: p.id } } }));
              go('#/projects');
            }}
          />
        </div>
      ) : null}
    </section>
  );
}

/**
 * The events the project's webhook is sent: every one, or those ticked (listed once "Every event" is
 * unticked, none ticked at first: one picks the few wanted, as in a payment provider's dashboard).
 */
function WebhookEvents(props: {
  value: Subscription;
  onChange: (value: Subscription) => void;
  errors: string[];
}) {
  const id = `f-${useId()}`;
  const { value, onChange } = props;
  const toggle = (event: EventType, on: boolean) => {
    const chosen = new Set(value === '*' ? [] : value);
    if (on) chosen.add(event);
    else chosen.delete(event);
    onChange(EVENT_TYPES.filter((e) => chosen.has(e)));
  };
  return (
    <fieldset class="events" aria-describedby={props.errors.length ? `${id}-error` : undefined}>
      <legend>Webhook events</legend>
      <div class="field check">
        <input
          id={`${id}-all`}
          type="checkbox"
          checked={value === '*'}
          onChange={(e) => onChange(e.currentTarget.checked ? '*' : [])}
        />
        <label for={`${id}-all`}>Every event</label>
      </div>
      {value === '*' ? null : (
        <ul class="event-list">
          {EVENT_TYPES.map((event) => (
            <li key={event} class="field check">
              <input
                id={`${id}-${event}`}
                type="checkbox"
                checked={value.includes(event)}
                onChange={(e) => toggle(event, e.currentTarget.checked)}
              />
              <label for={`${id}-${event}`}>{event}</label>
            </li>
          ))}
        </ul>
      )}
      {props.errors.length ? (
        <span id={`${id}-error`} class="field-error">
          {props.errors.join(' ')}
        </span>
      ) : null}
    </fieldset>
  );
}
