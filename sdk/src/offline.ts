/**
 * Where the client keeps offline tokens: one per license, project and domain. Each method may answer
 * at once or with a promise. Tokens are verified again every time they are read, so a store only
 * needs to keep strings.
 */
export interface TokenStore {
  get(key: string): string | null | undefined | Promise<string | null | undefined>;
  set(key: string, token: string): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

/** In memory, for the life of the process or page (the default). */
export function memoryStore(): TokenStore {
  const tokens = new Map<string, string>();
  return {
    get: (key) => tokens.get(key) ?? null,
    set: (key, token) => void tokens.set(key, token),
    delete: (key) => void tokens.delete(key),
  };
}

interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** In `localStorage` (or any Storage passed in), under keys starting with `prefix`. Survives reloads. */
export function localStorageStore(storage?: StorageLike, prefix = 'licensegate:token:'): TokenStore {
  const target = storage ?? (globalThis as unknown as { localStorage?: StorageLike }).localStorage;
  if (!target) throw new TypeError('localStorageStore: no localStorage here; pass a Storage.');
  return {
    get: (key) => target.getItem(prefix + key),
    set: (key, token) => target.setItem(prefix + key, token),
    delete: (key) => target.removeItem(prefix + key),
  };
}

type Fs = {
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  writeFile(path: string, data: string, options: { mode: number }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
};

/**
 * In a JSON file (Node), so that a server restarted during an outage still has its tokens. Written
 * whole to a temporary file and renamed over the old one, so a crash never leaves half a file.
 */
export function fileStore(path: string): TokenStore {
  if (typeof path !== 'string' || path === '') throw new TypeError('fileStore: a file path is required');
  // Loaded only when a file store is used, and named through a variable so that browser bundlers leave it out.
  const specifier = 'node:fs/promises';
  const fs = (): Promise<Fs> => import(specifier) as Promise<Fs>;
  let queue: Promise<unknown> = Promise.resolve();
  const read = async (): Promise<Record<string, string>> => {
    try {
      const parsed: unknown = JSON.parse(await (await fs()).readFile(path, 'utf8'));
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, string>)
        : {};
    } catch {
      return {};
    }
  };
  // One change at a time, each reading what the last one wrote.
  const change = (apply: (all: Record<string, string>) => void): Promise<void> => {
    const next = queue.then(async () => {
      const all = await read();
      apply(all);
      const io = await fs();
      const tmp = `${path}.${Date.now()}.tmp`;
      await io.writeFile(tmp, JSON.stringify(all), { mode: 0o600 });
      await io.rename(tmp, path);
    });
    queue = next.catch(() => undefined);
    return next;
  };
  return {
    get: async (key) => {
      await queue;
      return (await read())[key] ?? null;
    },
    set: (key, token) => change((all) => void (all[key] = token)),
    delete: (key) => change((all) => void delete all[key]),
  };
}
