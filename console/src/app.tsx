// The shell: sign-in, the header and navigation, and the hash router (the service serves one
// index.html; every page is a #/ address, so a reload or a shared link opens the same page).
import { type ComponentChildren, Fragment, type JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type Role, api, setApiKey, unwrap } from './api';
import { type Session, forget, remember, storedKey, userSession } from './session';
import { ErrorMessage, Field, Loading, Notice, toFailure, useFocusOnDraw, useForm, useLoad } from './ui';
import { MembersPage } from './pages/members';
import {
  AcceptInvitation,
  ConfirmSsoLink,
  CreateFirstAccount,
  finishSso,
  ForgotPassword,
  ResetPassword,
  startSso,
} from './pages/joining';
import { AnalyticsPage } from './pages/analytics';
import { ApiKeysPage } from './pages/api-keys';
import { AuditPage } from './pages/audit';
import { ProjectPage } from './pages/project';
import { ProjectsPage } from './pages/projects';
import { LicensePage } from './pages/license';
import { CustomerPage } from './pages/customers';
import { SubscriptionPage } from './pages/subscriptions';
import { KeyHelp } from './key-help';

/** The roles of a membership, from most to least able (as the API's ROLES). */
const ROLES: Role[] = ['owner', 'admin', 'developer', 'support', 'viewer'];
export const reaches = (role: Role, least: Role) => ROLES.indexOf(role) <= ROLES.indexOf(least);

/** What the signed-in key or person may do, as every page reads it. */
export interface Access {
  session: Session;
  /** false for a read-only key, or a person whose role is below developer: no write control is shown. */
  canWrite: boolean;
  /** Whether the caller may use what needs `least` (a key acts as owner; a read-only one only reads). */
  can: (least: Role) => boolean;
  /** The key's project when it is scoped; null for a global key. */
  scope: number | null;
  /** Forgets the key and shows the sign-in. */
  signOut: () => void;
}

export type Route =
  | { page: 'projects' }
  | { page: 'project'; project: number; tab: ProjectTab }
  | { page: 'license'; project: number; license: number }
  | { page: 'customer'; project: number; customer: number }
  | { page: 'subscription'; project: number; subscription: number }
  | { page: 'top'; path: string }
  | { page: 'not-found' };

export const PROJECT_TABS = [
  'settings',
  'domains',
  'licenses',
  'customers',
  'subscriptions',
  'plans',
  'injectables',
  'connectors',
  'webhooks',
  'analytics',
  'audit',
] as const;
export type ProjectTab = (typeof PROJECT_TABS)[number];

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  const id = (s: string | undefined) => (s && /^\d+$/.test(s) ? Number(s) : NaN);
  if (parts.length === 0 || (parts[0] === 'projects' && parts.length === 1)) return { page: 'projects' };
  if (parts[0] === 'projects' && !Number.isNaN(id(parts[1]))) {
    const project = id(parts[1]);
    if (parts[2] === 'licenses' && !Number.isNaN(id(parts[3])) && parts.length === 4)
      return { page: 'license', project, license: id(parts[3]) };
    if (parts[2] === 'customers' && !Number.isNaN(id(parts[3])) && parts.length === 4)
      return { page: 'customer', project, customer: id(parts[3]) };
    if (parts[2] === 'subscriptions' && !Number.isNaN(id(parts[3])) && parts.length === 4)
      return { page: 'subscription', project, subscription: id(parts[3]) };
    const tab = (parts[2] ?? 'settings') as ProjectTab;
    if (PROJECT_TABS.includes(tab) && parts.length <= 3) return { page: 'project', project, tab };
  }
  if (parts.length === 1 && TOP_PAGES.some((p) => p.path === parts[0]))
    return { page: 'top', path: parts[0] };
  return { page: 'not-found' };
}

/** A page of the main navigation besides the projects, at #/<path>. */
interface TopPage {
  path: string;
  label: string;
  /** Shown to global keys only (a scoped key gets "Page not found"). */
  globalOnly?: boolean;
  /** The least role that may open it (default: every role). */
  least?: Role;
  render: (access: Access) => JSX.Element;
}

/**
 * The main navigation's other pages, in its order (docs/console.md "Adding a page"). Payment
 * connectors belong to one project: they are its tab (PROJECT_TABS), not a page here; analytics are
 * both a project's tab and this page (the account's for a global key, its project's for a scoped one).
 */
export const TOP_PAGES: TopPage[] = [
  { path: 'analytics', label: 'Analytics', render: (access) => <AnalyticsPage access={access} /> },
  { path: 'audit-log', label: 'Audit log', render: (access) => <AuditPage access={access} /> },
  {
    path: 'api-keys',
    label: 'API keys',
    globalOnly: true,
    least: 'admin',
    render: (access) => <ApiKeysPage access={access} />,
  },
  {
    path: 'members',
    label: 'Members',
    globalOnly: true,
    render: (access) => <MembersPage access={access} />,
  },
];

/** Whether a top page is the caller's: a global key's, or a person's whose role reaches the page's. */
const opens = (top: TopPage, access: Access) =>
  !(top.globalOnly && access.scope) && (!top.least || access.session.kind === 'key' || access.can(top.least));

export const go = (hash: string) => {
  location.hash = hash;
};

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    // The effect runs after the first paint: a hash that changed in between fired no event we heard.
    on();
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/** The page's heading takes focus when the page changes, so a screen reader and the keyboard start there. */
export function PageHeading({ children }: { children: ComponentChildren }) {
  const ref = useFocusOnDraw<HTMLHeadingElement>();
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

/** The navigation: a global key's pages; a scoped key sees its project and the audit log. */
function nav(access: Access): { href: string; label: string; match: (r: Route) => boolean }[] {
  const items: { href: string; label: string; match: (r: Route) => boolean }[] = access.scope
    ? [
        {
          href: `#/projects/${access.scope}`,
          label: 'My project',
          match: (r: Route) => ['project', 'license', 'customer', 'subscription'].includes(r.page),
        },
      ]
    : [
        {
          href: '#/projects',
          label: 'Projects',
          match: (r: Route) =>
            ['projects', 'project', 'license', 'customer', 'subscription'].includes(r.page),
        },
      ];
  for (const top of TOP_PAGES)
    if (opens(top, access))
      items.push({
        href: `#/${top.path}`,
        label: top.label,
        match: (r) => r.page === 'top' && r.path === top.path,
      });
  return items;
}

function Page({ route, access }: { route: Route; access: Access }) {
  // A scoped key has one project: the list and other projects are not its pages.
  if (access.scope && route.page === 'projects')
    return <ProjectPage key={access.scope} access={access} project={access.scope} tab="settings" />;
  switch (route.page) {
    case 'projects':
      return <ProjectsPage access={access} />;
    case 'project':
      return <ProjectPage key={route.project} access={access} project={route.project} tab={route.tab} />;
    case 'license':
      return (
        <LicensePage key={route.license} access={access} project={route.project} license={route.license} />
      );
    case 'customer':
      return (
        <CustomerPage
          key={route.customer}
          access={access}
          project={route.project}
          customer={route.customer}
        />
      );
    case 'subscription':
      return (
        <SubscriptionPage
          key={route.subscription}
          access={access}
          project={route.project}
          subscription={route.subscription}
        />
      );
    case 'top': {
      const top = TOP_PAGES.find((p) => p.path === route.path);
      return top && opens(top, access) ? (
        <Fragment key={top.path}>{top.render(access)}</Fragment>
      ) : (
        <NotFound />
      );
    }
    default:
      return <NotFound />;
  }
}

function NotFound() {
  return (
    <>
      <PageHeading>Page not found</PageHeading>
      <p>
        There is no such page. <a href="#/projects">Go to the projects</a>.
      </p>
    </>
  );
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const options = useLoad(() => unwrap(api.GET('/api/v1/auth/config')), []);
  const setup = useLoad(() => unwrap(api.GET('/api/v1/auth/setup')), []);
  const form = useForm({ email: '', password: '' });
  const keyForm = useForm({ key: '' });
  const logIn = async ({ email, password }: { email: string; password: string }) => {
    const signedIn = await unwrap(api.POST('/api/v1/auth/login', { body: { email, password } }));
    onSignedIn(userSession(signedIn));
  };
  const signIn = async ({ key }: { key: string }) => {
    setApiKey(key.trim());
    try {
      const me = await unwrap(api.GET('/api/v1/api-keys/current'));
      remember(key.trim());
      onSignedIn({ kind: 'key', key: key.trim(), me });
    } catch (error) {
      setApiKey(null);
      throw error;
    }
  };
  return (
    <main id="main" class="signin">
      <PageHeading>Sign in to LicenseGate</PageHeading>
      {setup.data?.needed ? (
        <Notice>
          No account exists yet. The link to create the first one is in the server’s output, the line that
          starts with “No account yet: open” (it changes at each start).
        </Notice>
      ) : null}
      <form class="box" onSubmit={form.submit(logIn)} aria-label="Password sign-in" noValidate>
        <ErrorMessage error={form.error} />
        <Field form={form} name="email" label="Email" type="email" required autoComplete="username" />
        <Field
          form={form}
          name="password"
          label="Password"
          type="password"
          required
          autoComplete="current-password"
        />
        <button type="submit" disabled={form.busy}>
          Log in
        </button>
      </form>
      {options.data?.sso ? (
        <p>
          <button type="button" disabled={form.busy} onClick={form.submit(startSso)}>
            Single sign-on (SSO)
          </button>
        </p>
      ) : null}
      {options.data?.password_reset ? <ForgotPassword /> : null}
      {options.data?.api_key === false ? null : (
        <>
          <form class="box" onSubmit={keyForm.submit(signIn)} aria-label="Sign in" noValidate>
            <ErrorMessage error={keyForm.error} />
            <Field
              form={keyForm}
              name="key"
              label="API key"
              type="password"
              required
              autoComplete="off"
              hint="Kept in this tab only (sessionStorage), until you sign out or close it."
            />
            <button type="submit" disabled={keyForm.busy}>
              Sign in
            </button>
          </form>
          <KeyHelp />
        </>
      )}
    </main>
  );
}

/**
 * The pages of someone not signed in (or joining): the first account, an invitation, a reset link, an
 * SSO link to confirm.
 */
function publicPage(hash: string, session: Session | null, onSignedIn: (session: Session) => void) {
  const invitation = /^#\/invitation\/([\w-]+)$/.exec(hash);
  if (invitation)
    return (
      <main id="main" class="signin">
        <AcceptInvitation token={invitation[1]} session={session} onSignedIn={onSignedIn} />
      </main>
    );
  if (session) return null;
  const setup = /^#\/setup\/([\w-]+)$/.exec(hash);
  if (setup)
    return (
      <main id="main" class="signin">
        <CreateFirstAccount code={setup[1]} onSignedIn={onSignedIn} />
      </main>
    );
  if (hash === '#/sso-link')
    return (
      <main id="main" class="signin">
        <ConfirmSsoLink onSignedIn={onSignedIn} />
      </main>
    );
  const reset = /^#\/password-reset\/([\w-]+)$/.exec(hash);
  if (reset)
    return (
      <main id="main" class="signin">
        <ResetPassword token={reset[1]} />
      </main>
    );
  return null;
}

export function App() {
  const hash = useHash();
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  const [restoreError, setRestoreError] = useState<string | null>(null);

  useEffect(() => {
    const key = storedKey();
    if (!key) {
      // Back from the identity provider: finish the sign-on first, then ask for the session.
      const checked = finishSso().then(
        (outcome) => {
          if (outcome === 'confirm_password') go('#/sso-link');
        },
        (error: unknown) => setRestoreError(toFailure(error).message),
      );
      // A person's session lives in its HttpOnly cookie: ask whether there is one, while the
      // sign-in page shows (unless someone signed in meanwhile).
      void checked
        .then(() => unwrap(api.GET('/api/v1/auth/me')))
        .then(
          (me) => setSession((current) => current ?? userSession(me)),
          () => undefined,
        );
      return;
    }
    setApiKey(key);
    unwrap(api.GET('/api/v1/api-keys/current')).then(
      (me) => {
        setSession({ kind: 'key', key, me });
        setRestoring(false);
      },
      (error: unknown) => {
        forget();
        setRestoreError(toFailure(error).message);
        setRestoring(false);
      },
    );
  }, []);

  if (restoring) return <Loading what="the console" />;
  const signedIn = (next: Session) => {
    setSession(next);
    if (/^#\/(setup|invitation|password-reset|sso)/.test(location.hash)) go('#/');
  };
  const joining = publicPage(hash, session, signedIn);
  if (joining) return joining;
  if (!session)
    return (
      <>
        {restoreError ? (
          <p class="error" role="alert">
            {restoreError}
          </p>
        ) : null}
        <SignIn onSignedIn={signedIn} />
      </>
    );

  const signOut = () => {
    if (session.kind === 'user') void api.POST('/api/v1/auth/logout').catch(() => undefined);
    forget();
    setSession(null);
    go('#/');
  };
  const access: Access =
    session.kind === 'key'
      ? {
          session,
          canWrite: !session.me.read_only,
          can: (least) => !session.me.read_only || least === 'viewer',
          scope: session.me.project_id ?? null,
          signOut,
        }
      : {
          session,
          canWrite: reaches(session.role, 'developer'),
          can: (least) => reaches(session.role, least),
          scope: null,
          signOut,
        };
  const route = parseRoute(hash);
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">LicenseGate</span>
        <nav aria-label="Main">
          <ul>
            {nav(access).map((item) => (
              <li key={item.href}>
                <a href={item.href} aria-current={item.match(route) ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {session.kind === 'key' ? (
            <span>
              Key <code>{session.me.prefix}…</code> ({session.me.name || 'unnamed'}
              {access.scope ? `, project ${access.scope}` : ', global'}
              {access.canWrite ? '' : ', read-only'})
            </span>
          ) : (
            <span>
              {session.user.email} ({session.role})
            </span>
          )}{' '}
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} access={access} />
      </main>
    </>
  );
}
