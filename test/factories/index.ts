import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { CLI_CONTEXT, inAuditContext } from '../../src/audit/audit-context.js';
import { AuthService, NewUser } from '../../src/auth/auth.service.js';
import type { UserEntity } from '../../src/auth/user.entity.js';

let seq = 0;
const unique = () => `${Date.now().toString(36)}${(seq++).toString(36)}${randomBytes(2).toString('hex')}`;

export async function makeUser(app: INestApplication, overrides: Partial<NewUser> = {}): Promise<UserEntity> {
  return app.get(AuthService).createUser({ email: `user-${unique()}@example.test`, ...overrides });
}

/** An API key for `user`, made as the admin CLI makes it; returns the plaintext to send as X-API-KEY. */
export async function makeApiKey(
  app: INestApplication,
  user: UserEntity,
  options: { project_id?: number | null; expires_at?: Date | null; name?: string; read_only?: boolean } = {},
): Promise<string> {
  const { plaintext } = await inAuditContext(CLI_CONTEXT, () =>
    app.get(AuthService).createKey(user, options),
  );
  return plaintext;
}

/** A user with a global key, the usual caller of management endpoints. */
export async function makeAccount(app: INestApplication, overrides: Partial<NewUser> = {}) {
  const user = await makeUser(app, overrides);
  return { user, key: await makeApiKey(app, user) };
}

/** The bits of a TestApp the HTTP factories need (kept structural to avoid an import cycle). */
interface HttpTestApp {
  http: () => ReturnType<typeof import('supertest')>;
}

function failFactory(what: string, res: { status: number; body: unknown }): never {
  throw new Error(`${what} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
}

/** A unique, lowercase, alpha_dash token for names and slugs that must not collide between tests. */
export const uniqueToken = () => unique().toLowerCase();

/** POSTs `body` to /api/v1`path` with `key` and returns `data`; anything but a 201 success fails `what`. */
async function create(
  t: HttpTestApp,
  key: string,
  what: string,
  path: string,
  body: Record<string, unknown>,
): Promise<Record<string, any>> {
  const res = await t
    .http()
    .post(`/api/v1${path}`)
    .set('X-API-KEY', key)
    .set('Accept', 'application/json')
    .send(body);
  if (res.status !== 201 || res.body?.status !== 'success') failFactory(what, res);
  return res.body.data;
}

/**
 * POST /api/v1/project with `key` (a global key) and returns `data`. `name` defaults to a unique
 * name; `overrides` are sent as they are.
 */
export const makeProject = (t: HttpTestApp, key: string, overrides: Record<string, unknown> = {}) =>
  create(t, key, 'makeProject', '/project', { name: `Project ${uniqueToken()}`, ...overrides });

/** POST /api/v1/project/{projectId}/domains and returns `data`. `domain` defaults to a unique host. */
export const makeDomain = (
  t: HttpTestApp,
  key: string,
  projectId: number,
  overrides: Record<string, unknown> = {},
) =>
  create(t, key, 'makeDomain', `/project/${projectId}/domains`, {
    domain: `d-${uniqueToken()}.example.com`,
    ...overrides,
  });

/**
 * POST /api/v1/project/{projectId}/licenses and returns `data`. `title` defaults to a unique title;
 * `overrides` are sent as they are.
 */
export const makeLicense = (
  t: HttpTestApp,
  key: string,
  projectId: number,
  overrides: Record<string, unknown> = {},
) =>
  create(t, key, 'makeLicense', `/project/${projectId}/licenses`, {
    title: `License ${uniqueToken()}`,
    ...overrides,
  });

/** POST /api/v1/project/{projectId}/plans and returns `data`. `code` defaults to a unique code, `name` to "Plan". */
export const makePlan = (
  t: HttpTestApp,
  key: string,
  projectId: number,
  overrides: Record<string, unknown> = {},
) =>
  create(t, key, 'makePlan', `/project/${projectId}/plans`, {
    code: `p-${uniqueToken()}`,
    name: 'Plan',
    ...overrides,
  });

/** POST /api/v1/project/{projectId}/customers and returns `data`. `email` defaults to a unique address. */
export const makeCustomer = (
  t: HttpTestApp,
  key: string,
  projectId: number,
  overrides: Record<string, unknown> = {},
) =>
  create(t, key, 'makeCustomer', `/project/${projectId}/customers`, {
    email: `buyer-${uniqueToken()}@example.test`,
    ...overrides,
  });
