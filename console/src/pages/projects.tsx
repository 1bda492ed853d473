import { api, type Page, type Project, unwrap } from '../api';
import { type Access, go, PageHeading } from '../app';
import { Onboarding } from './onboarding';
import {
  ErrorMessage,
  Field,
  FormBox,
  Loading,
  show,
  textOrNull,
  useForm,
  useCursorList,
  MoreButton,
} from '../ui';

/** The projects of a global key: the list and, for a key that may write, a new project. */
export function ProjectsPage({ access }: { access: Access }) {
  const list = useCursorList(
    (cursor) => unwrap(api.GET('/api/v1/project', { params: { query: { per_page: 50, cursor } } })),
    [],
  );
  return (
    <>
      <PageHeading>Projects</PageHeading>
      <ErrorMessage error={list.error} />
      {list.loading && !list.data ? <Loading what="projects" /> : null}
      {list.data && access.canWrite && access.scope === null ? (
        <Onboarding access={access} newest={list.data.data[0] ?? null} />
      ) : null}
      {list.data ? <ProjectTable page={list.data} /> : null}
      <MoreButton list={list} what="projects" />
      {access.canWrite ? <NewProject /> : null}
    </>
  );
}

function ProjectTable({ page }: { page: Page<Project> }) {
  if (page.data.length === 0) return <p>No project yet: create one with New project below.</p>;
  return (
    <table>
      <caption>Your projects</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Slug</th>
          <th scope="col">Paid</th>
          <th scope="col">Active</th>
          <th scope="col">Locked</th>
        </tr>
      </thead>
      <tbody>
        {page.data.map((p) => (
          <tr key={p.id}>
            <th scope="row">
              <a href={`#/projects/${p.id}`}>{p.name}</a>
            </th>
            <td>{p.slug}</td>
            <td>{show(p.has_paid)}</td>
            <td>{show(p.is_active)}</td>
            <td>{p.locked_at ? 'locked' : 'no'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function NewProject() {
  const form = useForm({
    name: '',
    slug: '',
    description: '',
    default_redirect_url: '',
    webhook_url: '',
    has_paid: false,
  });
  const create = async (v: typeof form.values) => {
    const project = await unwrap(
      api.POST('/api/v1/project', {
        body: {
          name: v.name,
          slug: textOrNull(v.slug) ?? undefined,
          description: textOrNull(v.description),
          default_redirect_url: textOrNull(v.default_redirect_url),
          webhook_url: textOrNull(v.webhook_url),
          has_paid: v.has_paid,
        },
      }),
    );
    go(`#/projects/${project.id}`);
  };
  return (
    <FormBox form={form} title="New project" submitLabel="Create project" onSubmit={create}>
      <Field form={form} name="name" label="Name" required />
      <Field
        form={form}
        name="slug"
        label="Slug"
        hint="Letters, digits, - and _; made from the name when empty."
      />
      <Field form={form} name="description" label="Description" multiline />
      <Field form={form} name="default_redirect_url" label="Default redirect URL" type="url" />
      <Field form={form} name="webhook_url" label="Webhook URL" type="url" />
      <Field form={form} name="has_paid" label="Paid" type="checkbox" />
    </FormBox>
  );
}
