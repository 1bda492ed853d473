import { useState } from 'preact/hooks';
import { type ApiFailure, api, unwrap } from '../api';
import { type Access, PageHeading } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  intOrNull,
  isoFromLocal,
  Loading,
  show,
  useFocusOnDraw,
  useForm,
  useLoad,
  when,
} from '../ui';

/** A global key's API keys: create, roll, revoke; a new key's plaintext is shown once. */
export function ApiKeysPage({ access }: { access: Access }) {
  const list = useLoad(() => unwrap(api.GET('/api/v1/api-keys')), []);
  const projects = useLoad(
    () => unwrap(api.GET('/api/v1/project', { params: { query: { per_page: 50 } } })),
    [],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const [fresh, setFresh] = useState<{ name: string; key: string } | null>(null);
  const form = useForm({ name: '', project_id: '', read_only: false, expires_at: '' });
  const create = async (v: typeof form.values) => {
    const created = await unwrap(
      api.POST('/api/v1/api-keys', {
        body: {
          name: v.name,
          project_id: intOrNull(v.project_id),
          read_only: v.read_only,
          expires_at: isoFromLocal(v.expires_at),
        },
      }),
    );
    setFresh({ name: created.name, key: created.key });
    form.setValues({ name: '', project_id: '', read_only: false, expires_at: '' });
    list.reload();
  };
  const projectName = (id: number | null) =>
    id === null ? 'all (global)' : (projects.data?.data.find((p) => p.id === id)?.name ?? `project ${id}`);
  return (
    <>
      <PageHeading>API keys</PageHeading>
      {fresh ? <NewKey name={fresh.name} plaintext={fresh.key} onDismiss={() => setFresh(null)} /> : null}
      <ErrorMessage error={list.error ?? error} />
      {list.loading && !list.data ? <Loading what="API keys" /> : null}
      {list.data ? (
        <table>
          <caption>Keys of the account (never the keys themselves)</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Projects</th>
              <th scope="col">Read-only</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              {access.canWrite ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {list.data.map((k) => {
              const live = !k.revoked_at && !k.rolled_at;
              const self = access.session.kind === 'key' && k.id === access.session.me.id;
              return (
                <tr key={k.id}>
                  <th scope="row">
                    {k.name || 'unnamed'}
                    {self ? ' (this session)' : ''}
                  </th>
                  <td>
                    <code class="nowrap">{k.prefix}…</code>
                  </td>
                  <td>{projectName(k.project_id)}</td>
                  <td>{show(k.read_only)}</td>
                  <td>{when(k.expires_at)}</td>
                  <td>{when(k.last_used_at)}</td>
                  <td>{k.revoked_at ? 'revoked' : k.rolled_at ? 'rolled' : 'active'}</td>
                  {access.canWrite ? (
                    <td class="row-actions">
                      {live ? (
                        <>
                          <RollButton
                            id={k.id}
                            prefix={k.prefix}
                            onError={setError}
                            onRolled={(rolled) => {
                              setFresh(rolled);
                              list.reload();
                            }}
                          />{' '}
                          <ConfirmButton
                            label={`Revoke ${k.prefix}`}
                            question={
                              self
                                ? 'Revoke the key of this session? You will be signed out.'
                                : 'Revoke this key?'
                            }
                            confirmLabel="Yes, revoke"
                            danger
                            onError={setError}
                            onConfirm={async () => {
                              await unwrap(
                                api.DELETE('/api/v1/api-keys/{id}', { params: { path: { id: k.id } } }),
                              );
                              if (self) access.signOut();
                              else list.reload();
                            }}
                          />
                        </>
                      ) : (
                        '—'
                      )}
                    </td>
                  ) : null}
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      {access.canWrite ? (
        <FormBox form={form} title="New API key" submitLabel="Create API key" onSubmit={create}>
          <Field form={form} name="name" label="Name" />
          <Field
            form={form}
            name="project_id"
            label="Project"
            options={[
              { value: '', label: 'All projects (global key)' },
              ...(projects.data?.data ?? []).map((p) => ({ value: String(p.id), label: p.name })),
            ]}
          />
          <Field form={form} name="read_only" label="Read-only" type="checkbox" />
          <Field
            form={form}
            name="expires_at"
            label="Expires at (UTC)"
            type="datetime-local"
            hint="Empty: never."
          />
        </FormBox>
      ) : null}
    </>
  );
}

/** The plaintext of a new key: shown here once, never again. */
function NewKey({ name, plaintext, onDismiss }: { name: string; plaintext: string; onDismiss: () => void }) {
  const ref = useFocusOnDraw<HTMLDivElement>([plaintext]);
  const [copied, setCopied] = useState(false);
  return (
    <div class="box fresh" role="region" aria-labelledby="fresh-h" tabIndex={-1} ref={ref}>
      <h2 id="fresh-h">New key {name ? `“${name}”` : ''}: copy it now</h2>
      <p>It is shown this once; the service keeps only its hash.</p>
      <p>
        <code data-testid="new-key">{plaintext}</code>
      </p>
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard?.writeText(plaintext).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        Copy the key
      </button>{' '}
      <button type="button" onClick={onDismiss}>
        I have saved it
      </button>
      {copied ? <span role="status"> Copied.</span> : null}
    </div>
  );
}

/** How long a rolled key keeps working, as offered (the API takes 0 to 604800 seconds). */
const GRACES = [
  { seconds: 0, label: 'stops at once' },
  { seconds: 3600, label: 'works 1 more hour' },
  { seconds: 86400, label: 'works 1 more day' },
  { seconds: 604800, label: 'works 7 more days' },
];

/** Roll a key: asked again, with how long the old key keeps working (a day by default, as the API's). */
function RollButton(props: {
  id: number;
  prefix: string;
  onError: (error: ApiFailure) => void;
  onRolled: (rolled: { name: string; key: string }) => void;
}) {
  const [grace, setGrace] = useState(86400);
  const id = `grace-${props.id}`;
  return (
    <ConfirmButton
      label={`Roll ${props.prefix}`}
      question="Roll this key?"
      confirmLabel="Yes, roll"
      onError={props.onError}
      onConfirm={async () => {
        const rolled = await unwrap(
          api.POST('/api/v1/api-keys/{id}/roll', {
            params: { path: { id: props.id } },
            body: { grace_seconds: grace },
          }),
        );
        props.onRolled({ name: rolled.name, key: rolled.key });
      }}
    >
      <label for={id}>The old key</label>{' '}
      <select id={id} value={grace} onChange={(e) => setGrace(Number(e.currentTarget.value))}>
        {GRACES.map((g) => (
          <option key={g.seconds} value={g.seconds}>
            {g.label}
          </option>
        ))}
      </select>{' '}
    </ConfirmButton>
  );
}
