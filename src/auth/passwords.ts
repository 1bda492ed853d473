import type * as Argon2 from '@node-rs/argon2';
import { fieldError } from '../common/http/errors.js';
import { loadedWhenUsed } from '../common/lazy-module.js';

/**
 * Passwords, stored as Argon2id PHC strings (docs/security.md#sessions). The parameters are OWASP's
 * first choice for Argon2id (19 MiB, 2 passes, 1 lane); verify reads them from the stored string, so
 * raising them later leaves older hashes working.
 */
const OPTIONS = { algorithm: 2 /* Argon2id */, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/**
 * The Argon2 addon, loaded with the first password hashed or checked: a service whose people sign in
 * with API keys or SSO only never loads it (docs/benchmarks.md#the-soak-back-under-250-mb-2026-11-28).
 */
const library = loadedWhenUsed((): Promise<typeof Argon2> => import('@node-rs/argon2'));

export const MIN_PASSWORD = 12;
/** Bounded so that one request cannot make the hash work on megabytes. */
export const MAX_PASSWORD = 1024;

export function assertPasswordShape(password: string, field = 'password'): void {
  if (password.length < MIN_PASSWORD)
    throw fieldError(field, `The ${field.replace(/_/g, ' ')} must be at least ${MIN_PASSWORD} characters.`);
  if (password.length > MAX_PASSWORD)
    throw fieldError(
      field,
      `The ${field.replace(/_/g, ' ')} must not be greater than ${MAX_PASSWORD} characters.`,
    );
}

export async function hashPassword(password: string): Promise<string> {
  return (await library()).hash(password, OPTIONS);
}

/**
 * A hash of a password nobody knows, verified against when the email is unknown or has no password,
 * so that such an attempt costs the same time as a wrong password (no user enumeration by timing).
 */
let decoy: Promise<string> | undefined;

/** True when `password` matches `stored`; a missing or unreadable hash never matches, in the same time. */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  const { verify } = await library();
  if (!stored) {
    decoy ??= hashPassword(`decoy-${Math.random()}-${Date.now()}`);
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
