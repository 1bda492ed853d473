import { api, type Domain, type License, type Project, unwrap } from '../api';
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

export function LicensesTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/licenses', { params: { path, query: { per_page: 50, cursor } } }),
      ),
    [project.id],
  );
  return (
    <section aria-labelledby="licenses-h">
      <h2 id="licenses-h">Licenses</h2>
      <ErrorMessage error={list.error} />
      {list.loading && !list.data ? <Loading what="licenses" /> : null}
      {list.data && list.data.data.length === 0 ? <p>No license yet.</p> : null}
      {list.data && list.data.data.length > 0 ? (
        <table>
          <caption>Licenses of {project.name}</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Key</th>
              <th scope="col">Expires</th>
              <th scope="col">Test</th>
              <th scope="col">Revoked</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((l) => (
              <tr key={l.id}>
                <th scope="row">
                  <a href={`#/projects/${project.id}/licenses/${l.id}`}>{l.title}</a>
                </th>
                <td>
                  <code>{l.uuid}</code>
                </td>
                <td>{when(l.expires_at)}</td>
                <td>{show(l.is_test_license)}</td>
                <td>{l.revoked_at ? when(l.revoked_at) : 'no'}</td>
              </tr>
            ))}
          </tbody>
        </table>
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
        body: licenseBody(v),
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
