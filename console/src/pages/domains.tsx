import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Project, unwrap } from '../api';
import type { Access } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  Loading,
  show,
  useForm,
  useCursorList,
  MoreButton,
} from '../ui';

export function DomainsTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/domains', { params: { path, query: { per_page: 50, cursor } } }),
      ),
    [project.id],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const form = useForm({ domain: '', has_paid: false, is_primary: false });
  const add = async (v: typeof form.values) => {
    await unwrap(
      api.POST('/api/v1/project/{project}/domains', {
        params: { path },
        body: { domain: v.domain, has_paid: v.has_paid, is_primary: v.is_primary },
      }),
    );
    form.setValues({ domain: '', has_paid: false, is_primary: false });
    list.reload();
  };
  const update = async (
    domain: number,
    body: { has_paid?: boolean; is_active?: boolean; is_primary?: boolean },
  ) => {
    setError(null);
    try {
      await unwrap(
        api.PATCH('/api/v1/project/{project}/domains/{domain}', {
          params: { path: { ...path, domain } },
          body,
        }),
      );
      list.reload();
    } catch (e) {
      setError(e as ApiFailure);
    }
  };
  return (
    <section aria-labelledby="domains-h">
      <h2 id="domains-h">Domains</h2>
      <ErrorMessage error={list.error ?? error} />
      {list.loading && !list.data ? <Loading what="domains" /> : null}
      {list.data && list.data.data.length === 0 ? <p>No domain yet.</p> : null}
      {list.data && list.data.data.length > 0 ? (
        <table>
          <caption>Domains of {project.name}</caption>
          <thead>
            <tr>
              <th scope="col">Domain</th>
              <th scope="col">Paid</th>
              <th scope="col">Active</th>
              <th scope="col">Primary</th>
              {access.canWrite ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((d) => (
              <tr key={d.id}>
                <th scope="row">{d.domain}</th>
                <td>{show(d.has_paid)}</td>
                <td>{show(d.is_active)}</td>
                <td>{show(d.is_primary)}</td>
                {access.canWrite ? (
                  <td class="row-actions">
                    <button type="button" onClick={() => void update(d.id, { has_paid: !d.has_paid })}>
                      {d.has_paid ? `Mark ${d.domain} unpaid` : `Mark ${d.domain} paid`}
                    </button>{' '}
                    <button type="button" onClick={() => void update(d.id, { is_active: !d.is_active })}>
                      {d.is_active ? `Deactivate ${d.domain}` : `Activate ${d.domain}`}
                    </button>{' '}
                    {d.is_primary ? null : (
                      <>
                        <button type="button" onClick={() => void update(d.id, { is_primary: true })}>
                          Make {d.domain} primary
                        </button>{' '}
                      </>
                    )}
                    <ConfirmButton
                      label={`Delete ${d.domain}`}
                      question={`Delete the domain ${d.domain}?`}
                      confirmLabel="Yes, delete"
                      danger
                      onError={setError}
                      onConfirm={async () => {
                        await unwrap(
                          api.DELETE('/api/v1/project/{project}/domains/{domain}', {
                            params: { path: { ...path, domain: d.id } },
                          }),
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
      <MoreButton list={list} what="domains" />
      {access.canWrite ? (
        <FormBox form={form} title="Add a domain" submitLabel="Add domain" onSubmit={add}>
          <Field
            form={form}
            name="domain"
            label="Domain"
            required
            hint="A host name such as shop.example.com."
          />
          <Field form={form} name="has_paid" label="Paid" type="checkbox" />
          <Field form={form} name="is_primary" label="Primary" type="checkbox" />
        </FormBox>
      ) : null}
    </section>
  );
}
