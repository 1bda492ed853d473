import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { AccountEntity } from '../../src/auth/account.entity.js';
import { AuthService } from '../../src/auth/auth.service.js';
import { reaches, requiredRole, ROLES, ROUTE_ROLES, type Role } from '../../src/auth/roles.js';
import { makeApiKey, makeDomain, makeProject, makeUser, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * Roles (docs/security.md#roles): one table of operation → least role (src/auth/roles.ts), which the
 * guard enforces for every member, signed in or through a key they made, and the document publishes.
 */

type Json = Record<string, any>;
const DOC: Json = JSON.parse(readFileSync('openapi.json', 'utf8'));
const PASSWORD = 'correct horse battery';
/** A positive id no row has: an allowed call then answers 404 or 422, never the role's 403. */
const NO_SUCH_ID = 2_147_000_000;

const OPERATIONS = Object.entries(DOC.paths as Json).flatMap(([path, item]) =>
  Object.entries(item as Json)
    .filter(([, op]) => (op.security as Json[] | undefined)?.some((s) => 'api-key' in s))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })),
);

describe('roles', () => {
  let t: TestApp;
  let ownerKey: string;
  let accountId: number;
  let projectA: Json;
  let projectB: Json;

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '1000000' });
    const owner = await makeUser(t.app, { password: PASSWORD });
    ownerKey = await makeApiKey(t.app, owner);
    accountId = (
      await t.dataSource.getRepository(AccountEntity).findOneByOrFail({ holder_user_id: owner.id })
    ).id;
    projectA = await makeProject(t, ownerKey);
    projectB = await makeProject(t, ownerKey);
    await makeDomain(t, ownerKey, projectA.id);
  }, 120_000);
  afterAll(async () => t.close());

  /** A member of the account with a password, signed in: the Cookie and CSRF headers to send. */
  async function member(role: Role, project_ids: number[] | null = null) {
    const email = `${role}-${uniqueToken()}@example.test`;
    const user = await t.app
      .get(AuthService)
      .createUser({ email, password: PASSWORD, joins: { account_id: accountId, role, project_ids } });
    const res = await t.http().post('/api/v1/auth/login').send({ email, password: PASSWORD });
    const data = expectSuccess(res);
    expect(data.account_id).toBe(accountId);
    const cookie = (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    return { user, headers: { Cookie: cookie, 'X-CSRF-Token': data.csrf_token as string } };
  }

  function send(method: string, path: string, headers: Record<string, string>, body: object = {}) {
    let req = t.http()[method.toLowerCase() as 'post'](path);
    for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
    return method === 'GET' ? req : req.send(body);
  }

  it('has one least role for every management operation of the document, and the document says it', () => {
    expect(OPERATIONS.length).toBeGreaterThan(45);
    const documented = OPERATIONS.map(({ method, path }) => `${method} ${path}`).sort();
    expect(Object.keys(ROUTE_ROLES).sort()).toEqual(documented);
    for (const { method, path, op } of OPERATIONS)
      expect({ op: `${method} ${path}`, role: op['x-required-role'] }).toEqual({
        op: `${method} ${path}`,
        role: ROUTE_ROLES[`${method} ${path}`],
      });
    // Reads are for everyone; support revokes, reactivates and frees; keys are for admins.
    expect(requiredRole('GET /api/v1/project/{project}/licenses')).toBe('viewer');
    expect(requiredRole('POST /api/v1/project/{project}/licenses/{license}/revoke')).toBe('support');
    expect(requiredRole('POST /api/v1/project/{project}/domains')).toBe('developer');
    expect(requiredRole('POST /api/v1/api-keys')).toBe('admin');
    expect(requiredRole('GET /api/v1/not-in-the-table')).toBe('owner');
    const security = DOC.components.securitySchemes;
    expect(security.session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'lg_session' });
    expect(security['api-key']).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-KEY' });
  });

  it.each(ROLES.map((role) => [role]))(
    'walks every operation as %s: allowed, or 403 naming the role',
    async (role) => {
      const { headers } = await member(role);
      const outcomes: string[] = [];
      for (const { method, path } of OPERATIONS) {
        const least = ROUTE_ROLES[`${method} ${path}`];
        const url = path.replace(/\{\w+\}/g, String(NO_SUCH_ID));
        const res = await send(method, url, headers);
        const refusal = `This action needs the ${least} role or higher; your role is ${role}.`;
        if (reaches(role, least)) {
          if (res.status === 403 && res.body.message === refusal) outcomes.push(`${method} ${path} refused`);
          expect(res.status).toBeLessThan(500);
        } else {
          expectError(res, 403);
          if (res.body.message !== refusal)
            outcomes.push(`${method} ${path}: ${res.status} ${res.body.message}`);
        }
      }
      expect(outcomes).toEqual([]);
    },
    120_000,
  );

  it('lets each role do its real work on a real project', async () => {
    const viewer = await member('viewer');
    const support = await member('support');
    const developer = await member('developer');
    const license = expectSuccess(
      await send('POST', `/api/v1/project/${projectA.id}/licenses`, developer.headers, { title: 'Roles' }),
      201,
    );
    const base = `/api/v1/project/${projectA.id}/licenses/${license.id}`;
    expectSuccess(await send('GET', base, viewer.headers));
    const refused = expectError(await send('POST', `${base}/revoke`, viewer.headers), 403);
    expect(refused.message).toBe('This action needs the support role or higher; your role is viewer.');
    expect(expectSuccess(await send('POST', `${base}/revoke`, support.headers)).revoked_at).not.toBeNull();
    const edit = expectError(await send('PATCH', base, support.headers, { max_domains: 3 }), 403);
    expect(edit.message).toBe('This action needs the developer role or higher; your role is support.');
    const log = expectSuccess(await send('GET', `/api/v1/project/${projectA.id}/audit-log`, viewer.headers));
    expect(log.data[0]).toMatchObject({
      action: 'license.revoked',
      actor: { type: 'user', user_id: support.user.id },
    });
  });

  it('limits a member to their projects, and a cached read is served only to whom may read it', async () => {
    const limited = await member('developer', [projectB.id]);
    const domains = `/api/v1/project/${projectA.id}/domains`;
    // The owner's read fills the cache; the limited member is refused all the same.
    expectSuccess(await send('GET', domains, { 'X-API-KEY': ownerKey }));
    const refused = expectError(await send('GET', domains, limited.headers), 403);
    expect(refused.message).toBe('Your membership does not include this project.');
    const listed = expectSuccess(await send('GET', '/api/v1/project', limited.headers));
    expect(listed.data.map((p: Json) => p.id)).toEqual([projectB.id]);
    expectSuccess(await send('GET', `/api/v1/project/${projectB.id}/domains`, limited.headers));
    const create = expectError(await send('POST', '/api/v1/project', limited.headers, { name: 'x' }), 403);
    expect(create.message).toBe(
      'Your membership is limited to some projects: this action needs access to the whole account.',
    );
    expectError(await send('GET', '/api/v1/audit-log', limited.headers), 403);
  });

  it("a member's key acts with at most the member's current role, and stops when they leave", async () => {
    const admin = await member('admin');
    const made = expectSuccess(await send('POST', '/api/v1/api-keys', admin.headers, { name: 'mine' }), 201);
    const key = { 'X-API-KEY': made.key as string };
    expectSuccess(await send('POST', '/api/v1/project', key, { name: `by-key-${uniqueToken()}` }), 201);
    expectSuccess(await send('GET', '/api/v1/api-keys', key));
    await t.dataSource.query('UPDATE memberships SET role = ?, version = version + 1 WHERE user_id = ?', [
      'viewer',
      admin.user.id,
    ]);
    const demoted = expectError(await send('POST', '/api/v1/project', key, { name: 'no' }), 403);
    expect(demoted.message).toBe('This action needs the developer role or higher; your role is viewer.');
    expectSuccess(await send('GET', '/api/v1/project', key));
    await t.dataSource.query('DELETE FROM memberships WHERE user_id = ?', [admin.user.id]);
    const gone = expectError(await send('GET', '/api/v1/project', key), 403);
    expect(gone.message).toBe('This API key has been revoked.');
    // Keys made by the CLI or the holder act as owner, as before.
    expectSuccess(await send('GET', '/api/v1/api-keys', { 'X-API-KEY': ownerKey }));
  });
});
