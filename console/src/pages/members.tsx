import { useState } from 'preact/hooks';
import { type ApiFailure, type Member, type Role, api, unwrap } from '../api';
import { type Access, PageHeading } from '../app';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  FormBox,
  Loading,
  useFocusOnDraw,
  useForm,
  useLoad,
  when,
} from '../ui';

const ROLES: Role[] = ['owner', 'admin', 'developer', 'support', 'viewer'];

/**
 * The people of the account: who has which role, the open invitations, and for admins and owners
 * inviting, changing a role and removing (only an owner touches the owner role; nobody their own).
 */
export function MembersPage({ access }: { access: Access }) {
  const members = useLoad(() => unwrap(api.GET('/api/v1/members')), []);
  const invitations = useLoad(() => unwrap(api.GET('/api/v1/members/invitations')), []);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [fresh, setFresh] = useState<{ email: string; url: string; mailed: boolean } | null>(null);
  const manages = access.can('admin');
  const isOwner = access.can('owner');
  const me = access.session.kind === 'user' ? access.session.user.id : null;
  const grantable = ROLES.filter((role) => isOwner || role !== 'owner');
  const form = useForm({ email: '', role: 'viewer' });
  const invite = async (v: typeof form.values) => {
    const created = await unwrap(
      api.POST('/api/v1/members/invitations', { body: { email: v.email, role: v.role as Role } }),
    );
    setFresh({ email: created.email, url: created.invitation_url, mailed: created.mailed });
    form.setValues({ email: '', role: 'viewer' });
    invitations.reload();
  };
  /** Whether the caller may change or remove this member. */
  const mayTouch = (m: Member) => manages && m.user_id !== me && (isOwner || m.role !== 'owner');
  return (
    <>
      <PageHeading>Members</PageHeading>
      {fresh ? <NewInvitation {...fresh} onDismiss={() => setFresh(null)} /> : null}
      <ErrorMessage error={members.error ?? invitations.error ?? error} />
      {members.loading && !members.data ? <Loading what="members" /> : null}
      {members.data ? (
        <table>
          <caption>People of the account and their roles</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Projects</th>
              <th scope="col">Signs in with</th>
              {manages ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {members.data.map((m) => (
              <tr key={m.id}>
                <th scope="row">
                  {m.email}
                  {m.user_id === me ? ' (you)' : ''}
                </th>
                <td>{m.role}</td>
                <td>{m.project_ids ? m.project_ids.join(', ') : 'all'}</td>
                <td>
                  {[m.has_password ? 'password' : '', m.has_sso ? 'SSO' : ''].filter(Boolean).join(', ') ||
                    '—'}
                </td>
                {manages ? (
                  <td class="row-actions">
                    {mayTouch(m) ? (
                      <>
                        <RoleChange
                          member={m}
                          roles={grantable}
                          onError={setError}
                          onChanged={() => members.reload()}
                        />{' '}
                        <ConfirmButton
                          label="Remove"
                          object={m.email}
                          question={`Remove ${m.email}? Their sessions end and the API keys they made are revoked.`}
                          confirmLabel="Yes, remove"
                          danger
                          onError={setError}
                          onConfirm={async () => {
                            await unwrap(
                              api.DELETE('/api/v1/members/{id}', { params: { path: { id: m.id } } }),
                            );
                            members.reload();
                          }}
                        />
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {invitations.data && invitations.data.length > 0 ? (
        <table>
          <caption>Open invitations</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Expires</th>
              {manages ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {invitations.data.map((i) => (
              <tr key={i.id}>
                <th scope="row">{i.email}</th>
                <td>{i.role}</td>
                <td>{when(i.expires_at)}</td>
                {manages ? (
                  <td class="row-actions">
                    {isOwner || i.role !== 'owner' ? (
                      <ConfirmButton
                        label="Revoke"
                        object={`the invitation of ${i.email}`}
                        question={`Revoke the invitation of ${i.email}? Its link stops working.`}
                        confirmLabel="Yes, revoke"
                        danger
                        onError={setError}
                        onConfirm={async () => {
                          await unwrap(
                            api.DELETE('/api/v1/members/invitations/{id}', {
                              params: { path: { id: i.id } },
                            }),
                          );
                          invitations.reload();
                        }}
                      />
                    ) : (
                      '—'
                    )}
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {manages ? (
        <FormBox form={form} title="Invite a person" submitLabel="Create invitation" onSubmit={invite}>
          <Field form={form} name="email" label="Email" type="email" required />
          <Field
            form={form}
            name="role"
            label="Role"
            options={grantable.map((role) => ({ value: role, label: role }))}
          />
        </FormBox>
      ) : null}
    </>
  );
}

/** A member's role, changed in place: the select and its Save. */
function RoleChange(props: {
  member: Member;
  roles: Role[];
  onError: (error: ApiFailure) => void;
  onChanged: () => void;
}) {
  const [role, setRole] = useState<Role>(props.member.role);
  const [busy, setBusy] = useState(false);
  const id = `role-${props.member.id}`;
  const save = async () => {
    setBusy(true);
    try {
      await unwrap(
        api.PATCH('/api/v1/members/{id}', { params: { path: { id: props.member.id } }, body: { role } }),
      );
      props.onChanged();
    } catch (failure) {
      props.onError(failure as ApiFailure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <label class="visually-hidden" for={id}>
        Role of {props.member.email}
      </label>
      <select id={id} value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}>
        {props.roles.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>{' '}
      <button type="button" disabled={busy || role === props.member.role} onClick={() => void save()}>
        Save role<span class="visually-hidden"> of {props.member.email}</span>
      </button>
    </>
  );
}

/** The invitation URL: shown here once, never again (the service keeps only its hash). */
function NewInvitation(props: { email: string; url: string; mailed: boolean; onDismiss: () => void }) {
  const ref = useFocusOnDraw<HTMLDivElement>([props.url]);
  const [copied, setCopied] = useState(false);
  return (
    <div class="box fresh" role="region" aria-labelledby="invitation-h" tabIndex={-1} ref={ref}>
      <h2 id="invitation-h">Invitation for {props.email}: copy the link now</h2>
      <p>
        It is shown this once and works once, for 72 hours.
        {props.mailed ? ' It has also been mailed.' : ' Send it to them yourself.'}
      </p>
      <p>
        <code data-testid="invitation-url">{props.url}</code>
      </p>
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard?.writeText(props.url).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        Copy the link
      </button>{' '}
      <button type="button" onClick={props.onDismiss}>
        I have sent it
      </button>
      {copied ? <span role="status"> Copied.</span> : null}
    </div>
  );
}
