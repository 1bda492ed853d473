// The signed-in key lives in sessionStorage only (this tab, until it closes or the user signs out);
// a person signed in with email and password or SSO holds the HttpOnly lg_session cookie instead,
// which no script reads, and its CSRF token in memory.
import { type ApiKey, type Role, type SignedInUser, setApiKey, setCsrfToken } from './api';

const STORAGE = 'licensegate.console.key';

/** Signed in with an API key. */
export interface KeySession {
  kind: 'key';
  key: string;
  /** What the key may do: its scope (project_id) and read_only shape the pages. */
  me: Pick<ApiKey, 'id' | 'name' | 'prefix' | 'project_id' | 'read_only' | 'expires_at'>;
}

/** A person signed in (password or SSO): their role in the account shapes the pages. */
export interface UserSession {
  kind: 'user';
  user: SignedInUser['user'];
  role: Role;
  projectIds: number[] | null;
}

export type Session = KeySession | UserSession;

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE);
  } catch {
    return null;
  }
}

export function remember(key: string): void {
  sessionStorage.setItem(STORAGE, key);
  setApiKey(key);
}

export function forget(): void {
  sessionStorage.removeItem(STORAGE);
  setApiKey(null);
  setCsrfToken(null);
}

/** The session of a signed-in person, from POST /auth/login or GET /auth/me; its CSRF token is kept for writes. */
export function userSession(signedIn: SignedInUser): UserSession {
  setCsrfToken(signedIn.csrf_token);
  const membership =
    signedIn.memberships.find((m) => m.account_id === signedIn.account_id) ?? signedIn.memberships[0];
  return {
    kind: 'user',
    user: signedIn.user,
    role: membership.role,
    projectIds: membership.project_ids ?? null,
  };
}
