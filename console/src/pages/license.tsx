import { useState } from 'preact/hooks';
import { type ApiFailure, api, type License, type Schemas, unwrap, type Usage } from '../api';
import { type Access, go, PageHeading } from '../app';
import { BarChart } from '../chart';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  intOrNull,
  Loading,
  MoreButton,
  Notice,
  show,
  useCursorList,
  useForm,
  useLoad,
  when,
} from '../ui';
import { LicenseFields, licenseValues, licenseWriteBody, useDomains } from './licenses';
import { CopyField } from '../copy';
import { formatEntitlements, parseEntitlements } from '../entitlements';
import { entitlementsText } from './plans';
import { ProjectTabs } from './project';

/** A host for the example check when no domain of the project fits: a reserved name (RFC 2606). */
const ANY_SITE = 'your-site.example';

/**
 * The runtime check a site makes with this license, ready to copy: the route, the key and a calling
 * domain (the pinned one; else, billed by its project, one of the project's domains, whose flag then
 * answers), with one sentence on what answers for the license's billing.
 */
function ExampleCheck({ license: l, domains }: { license: License; domains: Schemas['Domain'][] }) {
  const pinned = l.domain_id === null ? undefined : domains.find((d) => d.id === l.domain_id);
  const example = l.billing === 'license' ? undefined : (pinned ?? domains[0]);
  const host = example?.domain ?? ANY_SITE;
  const command = `curl -X POST ${location.origin}/api/v1/project/has-paid -H 'X-LICENSE-KEY: ${l.uuid}' -H 'X-Service-Domain: ${host}'`;
  const answers =
    l.billing === 'license'
      ? `Billed on its own: its own paid flag answers (now ${l.has_paid ? 'paid' : 'unpaid'}), from any site.`
      : example
        ? `Billed by its project: the calling domain's paid flag answers, as the domain is registered (${host} is now ${example.has_paid ? 'paid' : 'unpaid'}); a domain not registered under the project is refused.`
        : `Billed by its project: the calling domain's paid flag answers, and this project has no domain yet: register the site's host under Domains (a domain not registered is refused).`;
  return (
    <section aria-labelledby="example-h" class="example-check">
      <h3 id="example-h">Try it: the check a site makes</h3>
      <CopyField value={command} label="Example check" what="example" />
      <p class="hint">{answers}</p>
    </section>
  );
}

/** One license: every field, edit, revoke or reactivate, delete, its usage and its activations. */
export function LicensePage({
  access,
  project,
  license,
}: {
  access: Access;
  project: number;
  license: number;
}) {
  const path = { project, license };
  const loaded = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}/licenses/{license}', { params: { path } })),
    [project, license],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const domains = useDomains(project);
  const owner = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project } } })),
    [project],
  );
  /** Bumped by "Refresh usage": the usage and the activations load again. */
  const [round, setRound] = useState(0);
  if (loaded.loading && !loaded.data) return <Loading what="the license" />;
  if (!loaded.data)
    return (
      <>
        <PageHeading>License {license}</PageHeading>
        <ErrorMessage error={loaded.error} />
      </>
    );
  const l = loaded.data;
  return (
    <>
      <PageHeading>
        License {l.title}
        {owner.data ? <span class="sub"> · {owner.data.name}</span> : null}
      </PageHeading>
      <ProjectTabs project={project} tab="licenses" current="location" />
      <p>
        <a href={`#/projects/${project}/licenses`}>
          Back to the licenses of {owner.data ? owner.data.name : 'the project'}
        </a>
      </p>
      {l.revoked_at ? <Notice>This license is revoked since {when(l.revoked_at)}.</Notice> : null}
      {l.grace_until && !l.revoked_at ? (
        <Notice>
          {l.billing === 'license'
            ? `The payment of this license stopped: it answers paid until ${when(l.grace_until)}, then unpaid unless paid again.`
            : `The payment of this license stopped: it is revoked at ${when(l.grace_until)} unless paid again.`}
        </Notice>
      ) : null}
      <ErrorMessage error={error} />
      <section aria-labelledby="fields-h">
        <h2 id="fields-h">Fields</h2>
        <dl class="facts">
          <dt>Key (X-LICENSE-KEY)</dt>
          <dd>
            <CopyField value={l.uuid} label="License key" what="key" />
          </dd>
          <dt>Id</dt>
          <dd>{l.id}</dd>
          <dt>Pinned to domain</dt>
          <dd>
            {l.domain_id === null
              ? 'no'
              : (domains.data?.data.find((d) => d.id === l.domain_id)?.domain ?? `domain ${l.domain_id}`)}
          </dd>
          <dt>Expires</dt>
          <dd>{when(l.expires_at)}</dd>
          <dt>Max domains</dt>
          <dd>{show(l.max_domains)}</dd>
          <dt>Max subdomains per domain</dt>
          <dd>{show(l.max_subdomains_per_domain)}</dd>
          <dt>Max checks per day</dt>
          <dd>{show(l.max_usage_per_day)}</dd>
          <dt>Allowed IP addresses</dt>
          <dd>{show(l.allowed_ips)}</dd>
          <dt>Allowed countries</dt>
          <dd>{show(l.allowed_countries)}</dd>
          <dt>Test license</dt>
          <dd>{show(l.is_test_license)}</dd>
          <dt>Allow runtime configuration</dt>
          <dd>{show(l.allow_configs)}</dd>
          <dt>Billing</dt>
          <dd>
            {l.billing === 'license'
              ? 'license: it carries its own payment, used from any site'
              : 'project: the project or its domains are paid'}
          </dd>
          <dt>Paid (its own flag)</dt>
          <dd>
            {l.has_paid ? 'yes' : 'no'}
            {l.billing === 'license' ? '' : ' (not what it answers: the project or its domains are)'}
          </dd>
          <dt>Customer</dt>
          <dd>
            {l.customer_id === null ? (
              'none'
            ) : (
              <a href={`#/projects/${project}/customers/${l.customer_id}`}>Customer {l.customer_id}</a>
            )}
          </dd>
          <dt>Revoked</dt>
          <dd>{l.revoked_at ? when(l.revoked_at) : 'no'}</dd>
          <dt>Revoked by</dt>
          <dd>
            {l.revoked_by === 'vendor'
              ? 'the vendor (no payment reactivates it)'
              : l.revoked_by === 'payment'
                ? 'a payment (a paid event reactivates it)'
                : 'nobody'}
          </dd>
          <dt>From a payment</dt>
          <dd>
            {l.payment_reference
              ? `${l.payment_reference.provider} order or subscription ${l.payment_reference.reference}`
              : 'no'}
          </dd>
          <dt>Payment grace</dt>
          <dd>
            {!l.grace_until
              ? 'none'
              : l.billing === 'license'
                ? `paid until ${when(l.grace_until)}, then unpaid unless paid again`
                : `unpaid: revoked at ${when(l.grace_until)} unless paid again`}
          </dd>
          <dt>Created</dt>
          <dd>{when(l.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{when(l.updated_at)}</dd>
        </dl>
        <ExampleCheck license={l} domains={domains.data?.data ?? []} />
        {access.canWrite ? (
          <div class="actions">
            {l.revoked_at ? (
              <ConfirmButton
                label="Reactivate license"
                question="Reactivate this license?"
                onError={setError}
                onConfirm={async () => {
                  await unwrap(
                    api.POST('/api/v1/project/{project}/licenses/{license}/reactivate', { params: { path } }),
                  );
                  loaded.reload();
                }}
              />
            ) : (
              <ConfirmButton
                label="Revoke license"
                question="Revoke this license? Its checks will be refused."
                danger
                onError={setError}
                onConfirm={async () => {
                  await unwrap(
                    api.POST('/api/v1/project/{project}/licenses/{license}/revoke', { params: { path } }),
                  );
                  loaded.reload();
                }}
              />
            )}{' '}
            {l.billing === 'license' ? (
              <>
                <ConfirmButton
                  label={l.has_paid ? 'Mark unpaid' : 'Mark paid'}
                  question={
                    l.has_paid
                      ? 'Mark this license unpaid? Its checks will answer has_paid false.'
                      : 'Mark this license paid? Its checks will answer has_paid true.'
                  }
                  danger={l.has_paid}
                  onError={setError}
                  onConfirm={async () => {
                    await unwrap(
                      api.PATCH('/api/v1/project/{project}/licenses/{license}', {
                        params: { path },
                        body: { has_paid: !l.has_paid },
                      }),
                    );
                    loaded.reload();
                  }}
                />{' '}
              </>
            ) : null}
            <ConfirmButton
              label="Delete license"
              question={`Delete the license ${l.title}?`}
              danger
              onError={setError}
              onConfirm={async () => {
                await unwrap(
                  api.DELETE('/api/v1/project/{project}/licenses/{license}', { params: { path } }),
                );
                go(`#/projects/${project}/licenses`);
              }}
            />
          </div>
        ) : null}
      </section>
      <PlanSection access={access} project={project} license={l} reload={loaded.reload} />
      <UsageSection project={project} license={l} round={round} onRefresh={() => setRound((r) => r + 1)} />
      <Activations access={access} project={project} license={l.id} round={round} />
      {access.canWrite ? <EditLicense license={l} project={project} reload={loaded.reload} /> : null}
    </>
  );
}

function EditLicense({
  license,
  project,
  reload,
}: {
  license: License;
  project: number;
  reload: () => void;
}) {
  const form = useForm(licenseValues(license));
  const domains = useDomains(project);
  const [saved, setSaved] = useState(false);
  return (
    <>
      {saved ? <Notice>Saved.</Notice> : null}
      <FormBox
        form={form}
        title="Edit license"
        submitLabel="Save license"
        onSubmit={async (v) => {
          setSaved(false);
          await unwrap(
            api.PATCH('/api/v1/project/{project}/licenses/{license}', {
              params: { path: { project, license: license.id } },
              body: licenseWriteBody(v),
            }),
          );
          setSaved(true);
          reload();
        }}
      >
        <LicenseFields form={form} domains={domains.data?.data ?? []} />
      </FormBox>
    </>
  );
}

type PlanValues = { plan_id: string; entitlements: string };

/** The license's plan, its own entitlements and what they come to; a plan picked and overrides edited. */
function PlanSection(props: { access: Access; project: number; license: License; reload: () => void }) {
  const { project, license: l } = props;
  const plans = useLoad(
    () =>
      unwrap(
        api.GET('/api/v1/project/{project}/plans', {
          params: { path: { project }, query: { per_page: 50 } },
        }),
      ),
    [project],
  );
  const form = useForm<PlanValues>({
    plan_id: l.plan_id === null ? '' : String(l.plan_id),
    entitlements: formatEntitlements(l.entitlements),
  });
  const [saved, setSaved] = useState(false);
  return (
    <section aria-labelledby="plan-h">
      <h2 id="plan-h">Plan and entitlements</h2>
      <dl class="facts">
        <dt>Plan</dt>
        <dd>{l.plan ? `${l.plan.name} (${l.plan.code})` : 'none'}</dd>
        <dt>Effective entitlements</dt>
        <dd data-testid="effective-entitlements">{entitlementsText(l.effective_entitlements)}</dd>
      </dl>
      {saved ? <Notice>Plan saved.</Notice> : null}
      {props.access.canWrite ? (
        <FormBox
          form={form}
          title="Change plan or entitlements"
          submitLabel="Save plan and entitlements"
          onSubmit={async (v) => {
            setSaved(false);
            const own = parseEntitlements(v.entitlements);
            await unwrap(
              api.PATCH('/api/v1/project/{project}/licenses/{license}', {
                params: { path: { project, license: l.id } },
                body: {
                  plan_id: intOrNull(v.plan_id),
                  entitlements: Object.keys(own).length === 0 ? null : own,
                },
              }),
            );
            setSaved(true);
            props.reload();
          }}
        >
          <Field
            form={form}
            name="plan_id"
            label="Plan"
            options={[
              { value: '', label: 'No plan' },
              ...(plans.data?.data ?? []).map((p) => ({
                value: String(p.id),
                label: `${p.name} (${p.code})`,
              })),
            ]}
            hint="Its entitlements, and its limits where this license leaves its own empty."
          />
          <Field
            form={form}
            name="entitlements"
            label="Entitlement overrides"
            multiline
            hint="One &quot;code = value&quot; a line, over the plan's: e.g. seats = 10. Empty: the plan's as they are."
          />
        </FormBox>
      ) : null}
    </section>
  );
}

function UsageSection(props: { project: number; license: License; round: number; onRefresh: () => void }) {
  const { project, license } = props;
  const usage = useLoad(
    () =>
      unwrap(
        api.GET('/api/v1/project/{project}/licenses/{license}/usage', {
          params: { path: { project, license: license.id } },
        }),
      ),
    [project, license.id, license.updated_at, props.round],
  );
  return (
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage</h2>
      <button type="button" onClick={props.onRefresh}>
        Refresh usage
      </button>
      <ErrorMessage error={usage.error} />
      {usage.data ? <UsageView usage={usage.data} /> : usage.loading ? <Loading what="usage" /> : null}
    </section>
  );
}

function UsageView({ usage }: { usage: Usage }) {
  const days = [...usage.last_30_days].sort((a, b) => a.date.localeCompare(b.date));
  return (
    <>
      <p class="today">
        Checks today ({usage.today.date}): <strong data-testid="usage-today">{usage.today.count}</strong>
        {usage.max_usage_per_day === null ? ' (no daily limit)' : ` of ${usage.max_usage_per_day} a day`}
      </p>
      {days.some((d) => d.count > 0) ? (
        <BarChart
          title="Checks per day, last 30 days"
          description={`Runtime checks of this license per UTC day; ${days.reduce((n, d) => n + d.count, 0)} in all.`}
          bars={days.map((d) => ({ label: d.date, value: d.count }))}
        />
      ) : (
        <p class="empty">
          No check in the last 30 days. Each time a site sends this license&apos;s key (the{' '}
          <code>X-LICENSE-KEY</code> header, or the SDK&apos;s <code>licenseKey</code>) and is answered paid
          or unpaid, that day&apos;s bar shows here.
        </p>
      )}
      {Object.keys(usage.meters).length > 0 ? (
        <table>
          <caption>Meters this month (UTC)</caption>
          <thead>
            <tr>
              <th scope="col">Meter</th>
              <th scope="col">Used</th>
              <th scope="col">Limit</th>
              <th scope="col">Starts again</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(usage.meters).map(([code, m]) => (
              <tr key={code}>
                <th scope="row">{code}</th>
                <td>{m.used}</td>
                <td>{m.limit}</td>
                <td>{when(m.resets_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <h3>Domains</h3>
      {usage.domains.length === 0 ? (
        <p>No domain activated yet{usage.max_domains === null ? '' : ` (up to ${usage.max_domains})`}.</p>
      ) : (
        <table>
          <caption>
            Activated domains
            {usage.max_domains === null ? '' : `: ${usage.domains.length} of ${usage.max_domains}`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Domain</th>
              <th scope="col">Activated</th>
              <th scope="col">Subdomains</th>
            </tr>
          </thead>
          <tbody>
            {usage.domains.map((d) => (
              <tr key={d.domain}>
                <th scope="row">{d.domain}</th>
                <td>{when(d.activated_at)}</td>
                <td>{d.subdomains.length ? d.subdomains.join(', ') : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Activations(props: { access: Access; project: number; license: number; round: number }) {
  const { access, project, license } = props;
  const path = { project, license };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/licenses/{license}/activations', {
          params: { path, query: { per_page: 50, cursor } },
        }),
      ),
    [project, license, props.round],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  return (
    <section aria-labelledby="activations-h">
      <h2 id="activations-h">Activations</h2>
      <ErrorMessage error={list.error ?? error} />
      {list.data && list.data.data.length === 0 ? <p>No activation yet.</p> : null}
      {list.data && list.data.data.length > 0 ? (
        <table>
          <caption>Hosts that activated this license</caption>
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Domain</th>
              <th scope="col">First seen</th>
              <th scope="col">Last seen</th>
              {access.canWrite ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((a) => (
              <tr key={a.id}>
                <th scope="row">{a.host || `${a.domain} (the domain itself)`}</th>
                <td>{a.domain}</td>
                <td>{when(a.first_seen_at)}</td>
                <td>{when(a.last_seen_at)}</td>
                {access.canWrite ? (
                  <td>
                    <ConfirmButton
                      label={`Free the slot of ${a.host || a.domain}`}
                      question={`Free the slot of ${a.host || a.domain}?`}
                      confirmLabel="Yes, free it"
                      onError={setError}
                      onConfirm={async () => {
                        await unwrap(
                          api.DELETE(
                            '/api/v1/project/{project}/licenses/{license}/activations/{activation}',
                            {
                              params: { path: { ...path, activation: a.id } },
                            },
                          ),
                        );
                        list.reload();
                      }}
                    />
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <MoreButton list={list} what="activations" />
    </section>
  );
}
