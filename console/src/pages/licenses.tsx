import { useState } from 'preact/hooks';
import { api, type Domain, type License, type Project, unwrap } from '../api';
import type { paths } from '../../../generated/openapi';
import { download, toCsv } from '../csv';
import { type Access, go } from '../app';
import {
  ErrorMessage,
  Field,
  type Form,
  FormBox,
  intOrNull,
  isoFromLocal,
  Loading,
  localFromIso,
  show,
  textOrNull,
  useForm,
  useLoad,
  useCursorList,
  MoreButton,
  when,
} from '../ui';

type ListQuery = NonNullable<paths['/api/v1/project/{project}/licenses']['get']['parameters']['query']>;
type Status = NonNullable<ListQuery['status']>;

/** A license's status as the API's `status` filter reads it (docs/api.md#searching-licenses). */
export const licenseStatus = (l: License): Status =>
  l.revoked_at ? 'revoked' : l.expires_at && Date.parse(l.expires_at) <= Date.now() ? 'expired' : 'active';

/**
 * The list's filters besides the search, each a select sent as its query parameter when chosen.
 * A filter the API gains (billing, plan) is one entry here.
 */
const FILTERS: {
  name: Exclude<keyof ListQuery, 'q' | 'per_page' | 'cursor'>;
  label: string;
  options: { value: string; label: string }[];
}[] = [
  {
    name: 'status',
    label: 'Status',
    options: [
      { value: '', label: 'Any status' },
      { value: 'active', label: 'Active' },
      { value: 'revoked', label: 'Revoked' },
      { value: 'expired', label: 'Expired' },
    ],
  },
];
type Filters = Record<string, string>;
const NO_FILTERS: Filters = { q: '', ...Object.fromEntries(FILTERS.map((f) => [f.name, ''])) };

/** The filters as the API takes them: the ones left empty are not sent. */
const listQuery = (f: Filters): ListQuery =>
  // The keys are ListQuery's (NO_FILTERS' and FILTERS'); the values are checked by the API, which says what is wrong.
  Object.fromEntries(Object.entries(f).filter(([, v]) => v.trim() !== ''));

const CSV_COLUMNS = [
  'id',
  'title',
  'key',
  'status',
  'domain_id',
  'expires_at',
  'max_domains',
  'max_subdomains_per_domain',
  'max_usage_per_day',
  'allowed_ips',
  'allowed_countries',
  'is_test_license',
  'allow_configs',
  'revoked_at',
  'payment_provider',
  'payment_reference',
  'grace_until',
  'created_at',
  'updated_at',
];
const csvRow = (l: License) => [
  l.id,
  l.title,
  l.uuid,
  licenseStatus(l),
  l.domain_id,
  l.expires_at,
  l.max_domains,
  l.max_subdomains_per_domain,
  l.max_usage_per_day,
  l.allowed_ips,
  l.allowed_countries,
  l.is_test_license,
  l.allow_configs,
  l.revoked_at,
  l.payment_reference?.provider,
  l.payment_reference?.reference,
  l.grace_until,
  l.created_at,
  l.updated_at,
];

export function LicensesTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const form = useForm<Filters>(NO_FILTERS);
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  const [exported, setExported] = useState('');
  const exportForm = useForm({});
  const page = (query: ListQuery, cursor?: string) =>
    unwrap(
      api.GET('/api/v1/project/{project}/licenses', {
        params: { path, query: { ...query, per_page: 50, cursor } },
      }),
    );
  const list = useCursorList(
    (cursor) => page(listQuery(applied), cursor),
    [project.id, JSON.stringify(applied)],
  );
  const filtered = Object.values(applied).some((v) => v.trim() !== '');
  // Every page of the filtered list, fetched as the list itself is: the API stays the one that filters.
  const exportCsv = async () => {
    setExported('');
    const rows: License[] = [];
    let cursor: string | undefined;
    do {
      const next = await page(listQuery(applied), cursor);
      rows.push(...next.data);
      cursor = next.next_cursor ?? undefined;
    } while (cursor);
    download(`licenses-${project.slug}.csv`, toCsv(CSV_COLUMNS, rows.map(csvRow)));
    setExported(`Exported ${rows.length} ${rows.length === 1 ? 'license' : 'licenses'} as CSV.`);
  };
  return (
    <section aria-labelledby="licenses-h">
      <h2 id="licenses-h">Licenses</h2>
      <form
        class="box filters"
        role="search"
        aria-label="Search the licenses"
        onSubmit={form.submit((v) => Promise.resolve(setApplied({ ...v })))}
        noValidate
      >
        <Field form={form} name="q" label="Search" hint="The start of a key, or part of a title." />
        {FILTERS.map((f) => (
          <Field key={f.name} form={form} name={f.name} label={f.label} options={f.options} />
        ))}
        <button type="submit">Search licenses</button>{' '}
        {filtered ? (
          <button
            type="button"
            onClick={() => {
              form.setValues(NO_FILTERS);
              setApplied(NO_FILTERS);
            }}
          >
            Clear search
          </button>
        ) : null}
      </form>
      <ErrorMessage error={list.error ?? exportForm.error} />
      {list.loading && !list.data ? <Loading what="licenses" /> : null}
      {list.data && list.data.data.length === 0 ? (
        <p>
          {filtered
            ? 'No license matches the search.'
            : 'No license yet. A license is a key your customer’s site sends with each check; create one below, or let a payment connector issue them.'}
        </p>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <>
          <table>
            <caption>
              Licenses of {project.name}
              {filtered ? ' matching the search' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Title</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Expires</th>
                <th scope="col">Test</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((l) => (
                <tr key={l.id}>
                  <th scope="row">
                    <a href={`#/projects/${project.id}/licenses/${l.id}`}>{l.title}</a>
                  </th>
                  <td>
                    <code class="nowrap">{l.uuid}</code>
                  </td>
                  <td>
                    {licenseStatus(l)}
                    {l.revoked_at ? ` (${when(l.revoked_at)})` : ''}
                  </td>
                  <td>{when(l.expires_at)}</td>
                  <td>{show(l.is_test_license)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <button type="button" disabled={exportForm.busy} onClick={exportForm.submit(exportCsv)}>
            Export {filtered ? 'these licenses' : 'all licenses'} as CSV
          </button>{' '}
          <span role="status" aria-live="polite">
            {exported}
          </span>
        </>
      ) : null}
      <MoreButton list={list} what="licenses" />
      {access.canWrite ? <NewLicense project={project} /> : null}
    </section>
  );
}

export type LicenseValues = {
  title: string;
  domain_id: string;
  expires_at: string;
  max_domains: string;
  max_subdomains_per_domain: string;
  max_usage_per_day: string;
  allowed_ips: string;
  allowed_countries: string;
  is_test_license: boolean;
  allow_configs: boolean;
  billing: string;
};

export const licenseValues = (l?: Partial<License>): LicenseValues => ({
  title: l?.title ?? '',
  domain_id: l?.domain_id ? String(l.domain_id) : '',
  expires_at: localFromIso(l?.expires_at),
  max_domains: l?.max_domains === null || l?.max_domains === undefined ? '' : String(l.max_domains),
  max_subdomains_per_domain:
    l?.max_subdomains_per_domain === null || l?.max_subdomains_per_domain === undefined
      ? ''
      : String(l.max_subdomains_per_domain),
  max_usage_per_day:
    l?.max_usage_per_day === null || l?.max_usage_per_day === undefined ? '' : String(l.max_usage_per_day),
  allowed_ips: l?.allowed_ips ?? '',
  allowed_countries: l?.allowed_countries ?? '',
  is_test_license: l?.is_test_license ?? false,
  allow_configs: l?.allow_configs ?? false,
  billing: l?.billing ?? 'project',
});

/** The form's values as the API takes them: empty fields are null (no limit). */
export const licenseBody = (v: LicenseValues) => ({
  title: v.title,
  domain_id: intOrNull(v.domain_id),
  expires_at: isoFromLocal(v.expires_at),
  max_domains: intOrNull(v.max_domains),
  max_subdomains_per_domain: intOrNull(v.max_subdomains_per_domain),
  max_usage_per_day: intOrNull(v.max_usage_per_day),
  allowed_ips: textOrNull(v.allowed_ips),
  allowed_countries: textOrNull(v.allowed_countries),
  is_test_license: v.is_test_license,
  allow_configs: v.allow_configs,
});

/** A license create or edit: its fields and its billing (a connector's template has no billing). */
export const licenseWriteBody = (v: LicenseValues) => ({
  ...licenseBody(v),
  billing: v.billing === 'license' ? ('license' as const) : ('project' as const),
});

/** Every field of a license, for the create and the edit form. */
export function LicenseFields<V extends LicenseValues>({
  form,
  domains,
  template,
  errorPrefix = '',
}: {
  form: Form<V>;
  domains: Domain[];
  /** A payment connector's license template: every field but the title. */
  template?: boolean;
  /** The API's name for the fields' errors, before each field's (`license_template.`). */
  errorPrefix?: string;
}) {
  const e = (name: string) => `${errorPrefix}${name}`;
  return (
    <>
      {template ? null : <Field form={form} name="title" label="Title" required />}
      {template ? null : (
        <Field
          form={form}
          name="billing"
          label="Billing"
          options={[
            { value: 'project', label: 'Project: the project or its domains are paid' },
            { value: 'license', label: 'License: the license carries its own payment' },
          ]}
          hint={
            form.values.billing === 'license'
              ? 'One product sold to many buyers, used from any site: this license’s own paid flag answers.'
              : 'One client: the calling domain’s paid flag answers when the domain is registered, else the project’s.'
          }
        />
      )}
      {/* A connector issues one license per order, for a buyer's sites: not pinned to one of the vendor's domains. */}
      {template ? null : (
        <Field
          form={form}
          name="domain_id"
          errorKey={e('domain_id')}
          label="Pinned to domain"
          options={[
            { value: '', label: 'No domain' },
            ...domains.map((d) => ({ value: String(d.id), label: d.domain })),
          ]}
        />
      )}
      <Field
        form={form}
        name="expires_at"
        errorKey={e('expires_at')}
        label="Expires at (UTC)"
        type="datetime-local"
        hint="Empty: never."
      />
      <Field
        form={form}
        name="max_domains"
        errorKey={e('max_domains')}
        label="Max domains"
        type="number"
        min={0}
        hint="Empty: no limit."
      />
      <Field
        form={form}
        name="max_subdomains_per_domain"
        errorKey={e('max_subdomains_per_domain')}
        label="Max subdomains per domain"
        type="number"
        min={0}
        hint="Empty: no limit."
      />
      <Field
        form={form}
        name="max_usage_per_day"
        errorKey={e('max_usage_per_day')}
        label="Max checks per day"
        type="number"
        min={0}
        hint="Empty: no limit."
      />
      <Field
        form={form}
        name="allowed_ips"
        errorKey={e('allowed_ips')}
        label="Allowed IP addresses"
        hint="Comma-separated; empty: any."
      />
      <Field
        form={form}
        name="allowed_countries"
        errorKey={e('allowed_countries')}
        label="Allowed countries"
        hint="Comma-separated 2-letter codes such as DE,FR; empty: any."
      />
      <Field
        form={form}
        name="is_test_license"
        errorKey={e('is_test_license')}
        label="Test license"
        type="checkbox"
      />
      <Field
        form={form}
        name="allow_configs"
        errorKey={e('allow_configs')}
        label="Allow runtime configuration"
        type="checkbox"
      />
    </>
  );
}

export function useDomains(project: number) {
  return useLoad(
    () =>
      unwrap(
        api.GET('/api/v1/project/{project}/domains', {
          params: { path: { project }, query: { per_page: 50 } },
        }),
      ),
    [project],
  );
}

function NewLicense({ project }: { project: Project }) {
  const form = useForm(licenseValues());
  const domains = useDomains(project.id);
  const create = async (v: LicenseValues) => {
    const license = await unwrap(
      api.POST('/api/v1/project/{project}/licenses', {
        params: { path: { project: project.id } },
        body: licenseWriteBody(v),
      }),
    );
    go(`#/projects/${project.id}/licenses/${license.id}`);
  };
  return (
    <FormBox form={form} title="New license" submitLabel="Create license" onSubmit={create}>
      <LicenseFields form={form} domains={domains.data?.data ?? []} />
    </FormBox>
  );
}
