// A project's customers (docs/payments.md#customers): the list searched by email, one customer with
// their licenses and subscriptions, and the vendor's edits (the connectors make most customers).
import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Customer, type Project, unwrap } from '../api';
import { type Access, go, PageHeading } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  ListTable,
  Loading,
  Notice,
  show,
  textOrNull,
  useCursorList,
  useForm,
  useLoad,
  when,
} from '../ui';
import { ProjectTabs } from './project';
import { licenseStatus } from './licenses';
import { SubscriptionsTable } from './subscriptions';

/** A customer in one line: their name and email, or the email alone. */
export const customerLabel = (c: Pick<Customer, 'email' | 'name'>) =>
  c.name ? `${c.name} <${c.email}>` : c.email;

const NO_SEARCH = { email: '', q: '' };

export function CustomersTab({ access, project }: { access: Access; project: Project }) {
  const form = useForm(NO_SEARCH);
  const [applied, setApplied] = useState(NO_SEARCH);
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/customers', {
          params: {
            path: { project: project.id },
            query: {
              email: applied.email.trim() || undefined,
              q: applied.q.trim() || undefined,
              per_page: 50,
              cursor,
            },
          },
        }),
      ),
    [project.id, applied.email, applied.q],
  );
  const searched = applied.email.trim() !== '' || applied.q.trim() !== '';
  return (
    <section aria-labelledby="customers-h">
      <h2 id="customers-h">Customers</h2>
      <form
        class="box filters"
        role="search"
        aria-label="Search the customers"
        onSubmit={form.submit((v) => Promise.resolve(setApplied({ ...v })))}
        noValidate
      >
        <Field form={form} name="email" label="Email" type="email" hint="The whole address, in any case." />
        <Field form={form} name="q" label="Search" hint="The start of an email or a name." />
        <button type="submit">Search customers</button>{' '}
        {searched ? (
          <button
            type="button"
            onClick={() => {
              form.setValues(NO_SEARCH);
              setApplied(NO_SEARCH);
            }}
          >
            Clear search
          </button>
        ) : null}
      </form>
      <ErrorMessage error={list.error} />
      <ListTable
        list={list}
        what="customers"
        empty={
          searched
            ? 'No customer matches the search.'
            : 'No customer yet. A payment connector adds each buyer it sees; you can add one below.'
        }
        caption={
          <>
            Customers of {project.name}
            {searched ? ' matching the search' : ''}
          </>
        }
        columns={['Email', 'Name', 'Provider ids', 'Created']}
        row={(c) => (
          <tr key={c.id}>
            <th scope="row">
              <a class="name" href={`#/projects/${project.id}/customers/${c.id}`} title={c.email}>
                {c.email}
              </a>
            </th>
            <td>{show(c.name)}</td>
            <td>
              {c.external_ids.length ? c.external_ids.map((e) => `${e.provider} ${e.id}`).join(', ') : '—'}
            </td>
            <td>{when(c.created_at)}</td>
          </tr>
        )}
      />
      {access.canWrite ? <NewCustomer project={project} /> : null}
    </section>
  );
}

type CustomerValues = { email: string; name: string };
const customerBody = (v: CustomerValues) => ({ email: v.email.trim(), name: textOrNull(v.name) });

function NewCustomer({ project }: { project: Project }) {
  const form = useForm<CustomerValues>({ email: '', name: '' });
  const create = async (v: CustomerValues) => {
    const customer = await unwrap(
      api.POST('/api/v1/project/{project}/customers', {
        params: { path: { project: project.id } },
        body: customerBody(v),
      }),
    );
    go(`#/projects/${project.id}/customers/${customer.id}`);
  };
  return (
    <FormBox form={form} title="New customer" submitLabel="Create customer" onSubmit={create}>
      <Field form={form} name="email" label="Email" type="email" required />
      <Field form={form} name="name" label="Name" />
    </FormBox>
  );
}

/** One customer: their fields, their licenses and subscriptions, edit and delete. */
export function CustomerPage({
  access,
  project,
  customer,
}: {
  access: Access;
  project: number;
  customer: number;
}) {
  const path = { project, customer };
  const loaded = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}/customers/{customer}', { params: { path } })),
    [project, customer],
  );
  const owner = useLoad(
    () => unwrap(api.GET('/api/v1/project/{project}', { params: { path: { project } } })),
    [project],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  if (loaded.loading && !loaded.data) return <Loading what="the customer" />;
  if (!loaded.data)
    return (
      <>
        <PageHeading>Customer {customer}</PageHeading>
        <ErrorMessage error={loaded.error} />
      </>
    );
  const c = loaded.data;
  return (
    <>
      <PageHeading>
        Customer {customerLabel(c)}
        {owner.data ? <span class="sub"> · {owner.data.name}</span> : null}
      </PageHeading>
      <ProjectTabs project={project} tab="customers" current="location" />
      <p>
        <a href={`#/projects/${project}/customers`}>
          Back to the customers of {owner.data ? owner.data.name : 'the project'}
        </a>
      </p>
      <ErrorMessage error={error} />
      <section aria-labelledby="fields-h">
        <h2 id="fields-h">Fields</h2>
        <dl class="facts">
          <dt>Id</dt>
          <dd>{c.id}</dd>
          <dt>Email</dt>
          <dd>{c.email}</dd>
          <dt>Name</dt>
          <dd>{show(c.name)}</dd>
          <dt>Provider ids</dt>
          <dd>
            {c.external_ids.length ? c.external_ids.map((e) => `${e.provider} ${e.id}`).join(', ') : 'none'}
          </dd>
          <dt>Created</dt>
          <dd>{when(c.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{when(c.updated_at)}</dd>
        </dl>
        {access.canWrite ? (
          <div class="actions">
            <ConfirmButton
              label="Delete customer"
              question={`Delete the customer ${c.email}? Their subscriptions stay.`}
              danger
              onError={setError}
              onConfirm={async () => {
                await unwrap(
                  api.DELETE('/api/v1/project/{project}/customers/{customer}', { params: { path } }),
                );
                go(`#/projects/${project}/customers`);
              }}
            />
          </div>
        ) : null}
      </section>
      <section aria-labelledby="licenses-h">
        <h2 id="licenses-h">Licenses</h2>
        {c.licenses.length === 0 ? (
          <p>No license of this customer.</p>
        ) : (
          <table>
            <caption>
              Licenses of {c.email}, newest first{c.licenses.length === 50 ? ' (the latest 50)' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Title</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Expires</th>
              </tr>
            </thead>
            <tbody>
              {c.licenses.map((l) => (
                <tr key={l.id}>
                  <th scope="row">
                    <a class="name" href={`#/projects/${project}/licenses/${l.id}`} title={l.title}>
                      {l.title}
                    </a>
                  </th>
                  <td>
                    <code class="nowrap">{l.uuid}</code>
                  </td>
                  <td>{licenseStatus(l)}</td>
                  <td>{when(l.expires_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="subscriptions-h">
        <h2 id="subscriptions-h">Subscriptions</h2>
        {c.subscriptions.length === 0 ? (
          <p>No subscription or order of this customer.</p>
        ) : (
          <SubscriptionsTable
            project={project}
            rows={c.subscriptions}
            caption={`Subscriptions of ${c.email}, newest first${c.subscriptions.length === 50 ? ' (the latest 50)' : ''}`}
          />
        )}
      </section>
      {access.canWrite ? <EditCustomer customer={c} project={project} reload={loaded.reload} /> : null}
    </>
  );
}

function EditCustomer({
  customer,
  project,
  reload,
}: {
  customer: Customer;
  project: number;
  reload: () => void;
}) {
  const form = useForm<CustomerValues>({ email: customer.email, name: customer.name ?? '' });
  const [saved, setSaved] = useState(false);
  return (
    <>
      {saved ? <Notice>Saved.</Notice> : null}
      <FormBox
        form={form}
        title="Edit customer"
        submitLabel="Save customer"
        onSubmit={async (v) => {
          setSaved(false);
          await unwrap(
            api.PATCH('/api/v1/project/{project}/customers/{customer}', {
              params: { path: { project, customer: customer.id } },
              body: customerBody(v),
            }),
          );
          setSaved(true);
          reload();
        }}
      >
        <Field form={form} name="email" label="Email" type="email" required />
        <Field form={form} name="name" label="Name" />
      </FormBox>
    </>
  );
}
