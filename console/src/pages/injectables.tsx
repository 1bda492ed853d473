import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Injectable, type Project, unwrap } from '../api';
import type { Access } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  ListTable,
  Notice,
  show,
  textOrNull,
  useForm,
  useCursorList,
} from '../ui';

const TYPES = ['snippet', 'html', 'script', 'style', 'file'] as const;
const MODES = ['inject', 'write', 'replace', 'append', 'prepend'] as const;

export function InjectablesTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/injectables', {
          params: { path, query: { per_page: 50, cursor } },
        }),
      ),
    [project.id],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const [editing, setEditing] = useState<Injectable | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [round, setRound] = useState(0);
  return (
    <section aria-labelledby="injectables-h">
      <h2 id="injectables-h">Injectables</h2>
      <p>Payloads stored encrypted; the service never shows them decrypted.</p>
      <ErrorMessage error={list.error ?? error} />
      {done ? <Notice>{done}</Notice> : null}
      <ListTable
        list={list}
        what="injectables"
        empty="No injectable yet."
        caption={<>Injectables of {project.name}</>}
        columns={['Slug', 'Title', 'Type', 'Mode', 'Size', 'Active', 'Paid only']}
        actions={access.canWrite}
        row={(i) => (
          <tr key={i.id}>
            <th scope="row">{i.slug}</th>
            <td>{show(i.title)}</td>
            <td>{i.type}</td>
            <td>{i.mode}</td>
            <td>{i.content_size} bytes</td>
            <td>{show(i.is_active)}</td>
            <td>{show(i.only_if_paid)}</td>
            {access.canWrite ? (
              <td class="row-actions">
                <button type="button" onClick={() => setEditing(i)}>
                  Edit {i.slug}
                </button>{' '}
                <ConfirmButton
                  label={`Delete ${i.slug}`}
                  question={`Delete the injectable ${i.slug} for good?`}
                  confirmLabel="Yes, delete"
                  danger
                  onError={setError}
                  onConfirm={async () => {
                    await unwrap(
                      api.DELETE('/api/v1/project/{project}/injectables/{injectable}', {
                        params: { path: { ...path, injectable: i.id } },
                      }),
                    );
                    if (editing?.id === i.id) setEditing(null);
                    list.reload();
                  }}
                />
              </td>
            ) : null}
          </tr>
        )}
      />
      {access.canWrite ? (
        <InjectableForm
          key={`${editing?.id ?? 'new'}-${round}`}
          project={project.id}
          injectable={editing}
          onDone={(message) => {
            // A fresh form: the secret and payload just sent do not stay on the page.
            setRound((r) => r + 1);
            setDone(message);
            setEditing(null);
            list.reload();
          }}
          onCancel={() => setEditing(null)}
        />
      ) : null}
    </section>
  );
}

type Values = {
  slug: string;
  title: string;
  type: string;
  mode: string;
  target_path: string;
  validate_endpoint: string;
  content: string;
  file: File | null;
  secret: string;
  is_active: boolean;
  only_if_paid: boolean;
};

/**
 * Create, or update (only what is filled in is sent: a new payload, as text or a file, goes with the
 * secret it is encrypted under).
 */
function InjectableForm(props: {
  project: number;
  injectable: Injectable | null;
  onDone: (message: string) => void;
  onCancel: () => void;
}) {
  const i = props.injectable;
  const form = useForm<Values>({
    slug: i?.slug ?? '',
    title: i?.title ?? '',
    type: i?.type ?? 'snippet',
    mode: i?.mode ?? 'inject',
    target_path: i?.target_path ?? '',
    validate_endpoint: i?.validate_endpoint ?? '',
    content: '',
    file: null,
    secret: '',
    is_active: i?.is_active ?? true,
    only_if_paid: i?.only_if_paid ?? false,
  });
  const submit = async (v: Values) => {
    const fields = {
      slug: v.slug,
      title: textOrNull(v.title),
      // A file is the payload of a type=file injectable.
      type: (v.file ? 'file' : v.type) as (typeof TYPES)[number],
      mode: v.mode as (typeof MODES)[number],
      target_path: textOrNull(v.target_path),
      validate_endpoint: textOrNull(v.validate_endpoint),
      is_active: v.is_active,
      only_if_paid: v.only_if_paid,
      ...(v.content !== '' || !i ? { content: v.content } : {}),
      ...(v.secret !== '' || !i ? { secret: v.secret } : {}),
    };
    // A file goes as multipart/form-data (the same fields, as text); the rest as JSON.
    const file = v.file;
    const bodySerializer = file
      ? () => {
          const data = new FormData();
          for (const [name, value] of Object.entries(fields)) {
            if (name === 'content' && value === '') continue;
            if (value !== null && value !== undefined) data.append(name, String(value));
          }
          data.append('file', file);
          return data;
        }
      : undefined;
    if (i) {
      await unwrap(
        api.PUT('/api/v1/project/{project}/injectables/{injectable}', {
          params: { path: { project: props.project, injectable: i.id } },
          body: fields,
          bodySerializer,
        }),
      );
      props.onDone(`Injectable ${v.slug} saved.`);
    } else {
      await unwrap(
        api.POST('/api/v1/project/{project}/injectables', {
          params: { path: { project: props.project } },
          body: { ...fields, content: fields.content ?? '', secret: fields.secret ?? '' },
          bodySerializer,
        }),
      );
      props.onDone(`Injectable ${v.slug} created.`);
    }
  };
  return (
    <FormBox
      form={form}
      title={i ? `Edit injectable ${i.slug}` : 'New injectable'}
      submitLabel={i ? 'Save injectable' : 'Create injectable'}
      onSubmit={submit}
    >
      <Field form={form} name="slug" label="Slug" required />
      <Field form={form} name="title" label="Title" />
      <Field form={form} name="type" label="Type" options={TYPES.map((t) => ({ value: t, label: t }))} />
      <Field form={form} name="mode" label="Mode" options={MODES.map((m) => ({ value: m, label: m }))} />
      <Field form={form} name="target_path" label="Target path" />
      <Field form={form} name="validate_endpoint" label="Validate endpoint" type="url" />
      <Field
        form={form}
        name="content"
        label={i ? 'New content' : 'Content'}
        multiline
        hint={i ? 'Leave empty to keep the current payload.' : 'Or choose a file below.'}
      />
      <Field
        form={form}
        name="file"
        label={i ? 'New file' : 'File'}
        type="file"
        hint="A file makes it a type=file injectable."
      />
      <Field
        form={form}
        name="secret"
        label="Secret"
        type="password"
        minLength={12}
        required={!i}
        hint={
          i
            ? 'Needed with new content or a new file: the payload is encrypted under it (12 characters or more).'
            : 'The payload is encrypted under it (12 characters or more).'
        }
      />
      <Field form={form} name="is_active" label="Active" type="checkbox" />
      <Field form={form} name="only_if_paid" label="Only when paid" type="checkbox" />
      {i ? (
        <button type="button" onClick={props.onCancel}>
          Cancel editing
        </button>
      ) : null}
    </FormBox>
  );
}
