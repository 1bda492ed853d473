import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Domain, type Project, unwrap } from '../api';
import type { Access } from '../app';
import {
  ConfirmButton,
  EditBox,
  ErrorMessage,
  Hidden,
  Field,
  type Form,
  FormBox,
  ListTable,
  Notice,
  paid,
  show,
  useForm,
  useCursorList,
} from '../ui';

type DomainValues = { domain: string; has_paid: boolean; is_active: boolean; is_primary: boolean };
const NEW_DOMAIN: DomainValues = { domain: '', has_paid: false, is_active: true, is_primary: false };

/** A domain's fields, to add one or to edit one (its name labelled apart: both forms may be open). */
function DomainFields({ form, edit }: { form: Form<DomainValues>; edit?: boolean }) {
  return (
    <>
      <Field
        form={form}
        name="domain"
        label={edit ? 'Domain name' : 'Domain'}
        required
        hint={
          edit
            ? "Renaming frees every license's activations of the old name."
            : 'A host name such as shop.example.com.'
        }
      />
      <Field form={form} name="has_paid" label="Paid" type="checkbox" />
      <Field form={form} name="is_active" label="Active" type="checkbox" />
      <Field form={form} name="is_primary" label="Primary" type="checkbox" />
    </>
  );
}

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
  const [done, setDone] = useState<string | null>(null);
  const [editing, setEditing] = useState<Domain | null>(null);
  const form = useForm<DomainValues>(NEW_DOMAIN);
  const add = async (v: DomainValues) => {
    setDone(null);
    await unwrap(api.POST('/api/v1/project/{project}/domains', { params: { path }, body: v }));
    form.setValues(NEW_DOMAIN);
    list.reload();
  };
  const update = async (
    domain: number,
    body: { has_paid?: boolean; is_active?: boolean; is_primary?: boolean },
  ) => {
    setError(null);
    setDone(null);
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
      {done ? <Notice>{done}</Notice> : null}
      <ListTable
        list={list}
        what="domains"
        empty="No domain yet."
        caption={<>Domains of {project.name}</>}
        columns={['Domain', 'Paid', 'Active', 'Primary']}
        actions={access.canWrite}
        row={(d) => (
          <tr key={d.id}>
            <th scope="row">{d.domain}</th>
            <td>{paid(d)}</td>
            <td>{show(d.is_active)}</td>
            <td>{show(d.is_primary)}</td>
            {access.canWrite ? (
              <td class="row-actions">
                <button type="button" onClick={() => setEditing(d)}>
                  Edit<Hidden> {d.domain}</Hidden>
                </button>{' '}
                <button type="button" onClick={() => void update(d.id, { has_paid: !d.has_paid })}>
                  Mark<Hidden> {d.domain}</Hidden> {d.has_paid ? 'unpaid' : 'paid'}
                </button>{' '}
                <button type="button" onClick={() => void update(d.id, { is_active: !d.is_active })}>
                  {d.is_active ? 'Deactivate' : 'Activate'}
                  <Hidden> {d.domain}</Hidden>
                </button>{' '}
                {d.is_primary ? null : (
                  <>
                    <button type="button" onClick={() => void update(d.id, { is_primary: true })}>
                      Make<Hidden> {d.domain}</Hidden> primary
                    </button>{' '}
                  </>
                )}
                <ConfirmButton
                  label="Delete"
                  object={d.domain}
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
                    if (editing?.id === d.id) setEditing(null);
                    list.reload();
                  }}
                />
              </td>
            ) : null}
          </tr>
        )}
      />
      {access.canWrite && editing ? (
        <EditDomain
          key={editing.id}
          project={project.id}
          domain={editing}
          onDone={(message) => {
            setEditing(null);
            setDone(message);
            list.reload();
          }}
          onCancel={() => setEditing(null)}
        />
      ) : null}
      {access.canWrite ? (
        <FormBox form={form} title="Add a domain" submitLabel="Add domain" onSubmit={add}>
          <DomainFields form={form} />
        </FormBox>
      ) : null}
    </section>
  );
}

/**
 * Rename a domain or change its flags. Only what changed is sent: a has_paid sent unchanged would
 * still end a payment grace (docs/payments.md).
 */
function EditDomain(props: {
  project: number;
  domain: Domain;
  onDone: (message: string) => void;
  onCancel: () => void;
}) {
  const d = props.domain;
  const form = useForm<DomainValues>({
    domain: d.domain,
    has_paid: d.has_paid,
    is_active: d.is_active,
    is_primary: d.is_primary,
  });
  const save = async (v: DomainValues) => {
    const saved = await unwrap(
      api.PATCH('/api/v1/project/{project}/domains/{domain}', {
        params: { path: { project: props.project, domain: d.id } },
        body: {
          domain: v.domain,
          ...(v.has_paid !== d.has_paid ? { has_paid: v.has_paid } : {}),
          ...(v.is_active !== d.is_active ? { is_active: v.is_active } : {}),
          ...(v.is_primary !== d.is_primary ? { is_primary: v.is_primary } : {}),
        },
      }),
    );
    props.onDone(`Domain ${saved.domain} saved.`);
  };
  return (
    <EditBox
      form={form}
      title={`Edit domain ${d.domain}`}
      submitLabel="Save domain"
      onSubmit={save}
      onCancel={props.onCancel}
    >
      <DomainFields form={form} edit />
    </EditBox>
  );
}
