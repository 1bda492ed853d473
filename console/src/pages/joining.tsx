// The pages of someone not signed in yet: creating the first account, accepting an invitation, asking
// for and using a password reset link. Each answers with the API's own message when the link is used, expired or unknown.
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api';
import { PageHeading } from '../app';
import { type Session, userSession } from '../session';
import { ErrorMessage, Field, type Form, Notice, useForm } from '../ui';

/** The password someone joining chooses: at least 12 characters, as the API asks. */
function NewPassword<V extends { password: string }>(props: { form: Form<V>; hint: string }) {
  return (
    <Field
      form={props.form}
      name="password"
      label="Choose a password"
      type="password"
      required
      minLength={12}
      autoComplete="new-password"
      hint={props.hint}
    />
  );
}

/**
 * The first account of a new service, with the setup link the server printed at start: its owner is
 * made and signed in (docs/security.md#the-first-account).
 */
export function CreateFirstAccount(props: { code: string; onSignedIn: (session: Session) => void }) {
  const form = useForm({ email: '', password: '' });
  const create = async ({ email, password }: { email: string; password: string }) => {
    const made = await unwrap(
      api.POST('/api/v1/auth/setup', { body: { code: props.code, email, password } }),
    );
    props.onSignedIn(userSession(made));
  };
  return (
    <>
      <PageHeading>Create the first account</PageHeading>
      <p>This service has no account yet. You will be its owner: you can invite the others once signed in.</p>
      <form class="box" onSubmit={form.submit(create)} aria-label="Create the first account" noValidate>
        <ErrorMessage error={form.error} />
        <Field form={form} name="email" label="Email" type="email" required autoComplete="username" />
        <NewPassword form={form} hint="At least 12 characters." />
        <button type="submit" disabled={form.busy}>
          Create the account
        </button>
      </form>
      <p>
        <a href="#/">Back to signing in</a>
      </p>
    </>
  );
}

/** Accepting an invitation: a new user chooses a password; a signed-in user accepts as themselves. */
export function AcceptInvitation(props: {
  token: string;
  session: Session | null;
  onSignedIn: (session: Session) => void;
}) {
  const form = useForm({ password: '' });
  const signedInAs = props.session?.kind === 'user' ? props.session.user.email : null;
  const accept = async ({ password }: { password: string }) => {
    const joined = await unwrap(
      api.POST('/api/v1/auth/invitations/{token}/accept', {
        params: { path: { token: props.token } },
        body: signedInAs ? {} : { password },
      }),
    );
    props.onSignedIn(userSession(joined));
  };
  return (
    <>
      <PageHeading>Accept your invitation</PageHeading>
      <form class="box" onSubmit={form.submit(accept)} aria-label="Accept the invitation" noValidate>
        <ErrorMessage error={form.error} />
        {signedInAs ? (
          <p>You are signed in as {signedInAs}: accepting adds this account to your memberships.</p>
        ) : (
          <NewPassword
            form={form}
            hint="At least 12 characters. If your email already has a user, sign in first and open the link again."
          />
        )}
        <button type="submit" disabled={form.busy}>
          Accept the invitation
        </button>
      </form>
      <p>
        <a href="#/">Back to signing in</a>
      </p>
    </>
  );
}

/** Asking for a reset link (only offered when the service can mail it). */
export function ForgotPassword() {
  const form = useForm({ email: '' });
  const [sent, setSent] = useState(false);
  const ask = async ({ email }: { email: string }) => {
    await unwrap(api.POST('/api/v1/auth/password-reset', { body: { email } }));
    setSent(true);
  };
  return (
    <details class="box">
      <summary>Forgot your password?</summary>
      <form onSubmit={form.submit(ask)} aria-label="Password reset" noValidate>
        <ErrorMessage error={form.error} />
        <Field form={form} name="email" label="Your email" type="email" required autoComplete="username" />
        <button type="submit" disabled={form.busy}>
          Mail me a reset link
        </button>
      </form>
      {sent ? (
        <Notice>If the email has a user, a link is on its way: it works once, for an hour.</Notice>
      ) : null}
    </details>
  );
}

/** Setting a new password with a mailed link. */
export function ResetPassword({ token }: { token: string }) {
  const form = useForm({ password: '' });
  const [done, setDone] = useState(false);
  const reset = async ({ password }: { password: string }) => {
    await unwrap(
      api.POST('/api/v1/auth/password-reset/{token}', { params: { path: { token } }, body: { password } }),
    );
    setDone(true);
  };
  return (
    <>
      <PageHeading>Choose a new password</PageHeading>
      {done ? (
        <Notice>
          Your password is set and your other sessions have ended. <a href="#/">Sign in</a> with it.
        </Notice>
      ) : (
        <form class="box" onSubmit={form.submit(reset)} aria-label="New password" noValidate>
          <ErrorMessage error={form.error} />
          <Field
            form={form}
            name="password"
            label="New password"
            type="password"
            required
            minLength={12}
            autoComplete="new-password"
            hint="At least 12 characters."
          />
          <button type="submit" disabled={form.busy}>
            Set the password
          </button>
        </form>
      )}
    </>
  );
}

/** Starts a single sign-on: the service answers the identity provider's address, where the browser goes. */
export async function startSso(): Promise<void> {
  const started = await unwrap(api.POST('/api/v1/auth/sso/start'));
  location.assign(started.authorization_url);
}

/**
 * The identity provider sent the browser back to the console with ?code&state (or ?error): hands
 * that to the service, and takes the query out of the address bar. Null when there is none.
 */
export async function finishSso(): Promise<'signed_in' | 'confirm_password' | null> {
  const query = location.search;
  if (!/[?&](code|error)=/.test(query)) return null;
  history.replaceState(null, '', location.pathname + location.hash);
  const done = await unwrap(api.POST('/api/v1/auth/sso/callback', { body: { query } }));
  return done.outcome;
}

/** A user with a password who signed in with SSO for the first time confirms the password once. */
export function ConfirmSsoLink({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const form = useForm({ password: '' });
  const confirm = async ({ password }: { password: string }) => {
    onSignedIn(userSession(await unwrap(api.POST('/api/v1/auth/sso/link', { body: { password } }))));
  };
  return (
    <>
      <PageHeading>Link single sign-on</PageHeading>
      <p>
        Your email already has a password here. Confirm it once: from then on, single sign-on signs you in
        without it.
      </p>
      <form class="box" onSubmit={form.submit(confirm)} aria-label="Confirm your password" noValidate>
        <ErrorMessage error={form.error} />
        <Field
          form={form}
          name="password"
          label="Your password"
          type="password"
          required
          autoComplete="current-password"
        />
        <button type="submit" disabled={form.busy}>
          Link and continue
        </button>
      </form>
    </>
  );
}
