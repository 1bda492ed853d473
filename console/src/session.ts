// The signed-in key lives in sessionStorage only (this tab, until it closes or the user signs out).
import { type ApiKey, setApiKey } from './api';

const STORAGE = 'licensegate.console.key';

export interface Session {
  key: string;
  /** What the key may do: its scope (project_id) and read_only shape the pages. */
  me: Pick<ApiKey, 'id' | 'name' | 'prefix' | 'project_id' | 'read_only' | 'expires_at'>;
}

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
}
