import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { runCli } from '../../src/admin-cli.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** Runs the built CLI against the test app's database. */
function run(t: TestApp, ...args: string[]) {
  return spawnSync(process.execPath, ['dist/src/cli.js', ...args], {
    env: {
      ...process.env,
      DATABASE_URL: t.config.env.DATABASE_URL,
      APP_KEY: t.config.appKey.toString('base64'),
      LOG_LEVEL: 'silent',
    },
    encoding: 'utf8',
  });
}

/**
 * Runs a command in this process (src/admin-cli.ts, what dist/src/cli.js runs: `run` above spawns
 * that for the tests of the process itself); returns its parsed stdout and exit code.
 */
async function cli(
  t: TestApp,
  ...args: string[]
): Promise<{ code: number; out: Record<string, unknown>; lines: number }> {
  let stdout = '';
  const code = await runCli(args, {
    env: {
      ...process.env,
      DATABASE_URL: t.config.env.DATABASE_URL,
      APP_KEY: t.config.appKey.toString('base64'),
      LOG_LEVEL: 'silent',
    },
    out: (text) => (stdout += text),
    err: () => undefined,
  });
  const lines = stdout.trim().split('\n');
  return { code, out: JSON.parse(lines[lines.length - 1]), lines: lines.length };
}

describe('admin CLI', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  }, 120_000);
  afterAll(async () => t.close());

  it('creates a user, a global and a scoped key; each command prints one JSON object', async () => {
    const email = `cli-${randomBytes(3).toString('hex')}@example.test`;
    const user = await cli(
      t,
      'users:create',
      '--email',
      email,
      '--name',
      'Ada',
      '--max-projects',
      '3',
      '--no-webhooks',
    );
    expect(user.code).toBe(0);
    expect(user.lines).toBe(1);
    expect(user.out).toMatchObject({
      email,
      name: 'Ada',
      max_projects: 3,
      webhooks_enabled: false,
      can_create_licenses: true,
    });

    const global = await cli(t, 'keys:create', '--email', email, '--name', 'admin');
    expect(global.code).toBe(0);
    expect(global.out).toMatchObject({ project_id: null, expires_at: null });
    expect(global.out.key).toMatch(/^lg_/);

    const list = expectSuccess(
      await t
        .http()
        .get('/api/v1/api-keys')
        .set('X-API-KEY', global.out.key as string),
    );
    expect(list.map((k: { id: number }) => k.id)).toEqual([global.out.id]);

    const project = expectSuccess(
      await t
        .http()
        .post('/api/v1/project')
        .set('X-API-KEY', global.out.key as string)
        .send({ name: 'CLI project' }),
      201,
    );
    const projectId = project.id;
    const scoped = await cli(
      t,
      'keys:create',
      '--email',
      email,
      '--project',
      String(projectId),
      '--expires-at',
      '2999-01-01T00:00:00Z',
    );
    expect(scoped.code).toBe(0);
    expect(scoped.out).toMatchObject({ project_id: projectId, expires_at: '2999-01-01T00:00:00Z' });
    // A scoped key cannot manage API keys.
    expectError(
      await t
        .http()
        .get('/api/v1/api-keys')
        .set('X-API-KEY', scoped.out.key as string),
      403,
    );

    const keys = await cli(t, 'keys:list', '--email', email);
    expect((keys.out.keys as unknown[]).length).toBe(2);
    expect(JSON.stringify(keys.out)).not.toContain('key_hash');

    const revoked = await cli(t, 'keys:revoke', '--id', String(global.out.id));
    expect(revoked.code).toBe(0);
    expect(revoked.out.revoked_at).toEqual(expect.any(String));
    expectError(
      await t
        .http()
        .get('/api/v1/api-keys')
        .set('X-API-KEY', global.out.key as string),
      403,
    );

    const users = await cli(t, 'users:list');
    expect((users.out.users as { email: string }[]).map((u) => u.email)).toContain(email);
  });

  it('makes read-only keys, rolls keys with a grace, and lists the audit log, its own writes included', async () => {
    const email = `audit-${randomBytes(3).toString('hex')}@example.test`;
    expect((await cli(t, 'users:create', '--email', email)).code).toBe(0);
    const admin = await cli(t, 'keys:create', '--email', email, '--name', 'admin');
    const key = admin.out.key as string;
    const project = expectSuccess(
      await t.http().post('/api/v1/project').set('X-API-KEY', key).send({ name: 'Audited' }),
      201,
    );
    const other = expectSuccess(
      await t.http().post('/api/v1/project').set('X-API-KEY', key).send({ name: 'Other' }),
      201,
    );

    const readOnly = await cli(
      t,
      'keys:create',
      '--email',
      email,
      '--project',
      String(project.id),
      '--read-only',
    );
    expect(readOnly.out).toMatchObject({ project_id: project.id, read_only: true });
    expect(
      expectError(
        await t
          .http()
          .patch(`/api/v1/project/${project.id}`)
          .set('X-API-KEY', readOnly.out.key as string)
          .send({ name: 'x' }),
        403,
      ).message,
    ).toBe('This API key is read-only.');

    const rolled = await cli(t, 'keys:roll', '--id', String(readOnly.out.id), '--grace', '0');
    expect(rolled.code).toBe(0);
    expect(rolled.lines).toBe(1);
    expect(rolled.out).toMatchObject({
      project_id: project.id,
      read_only: true,
      previous_key: { id: readOnly.out.id, rolled_at: expect.any(String) },
    });
    expect(rolled.out.key).toMatch(/^lg_/);
    expectError(
      await t
        .http()
        .get(`/api/v1/project/${project.id}`)
        .set('X-API-KEY', readOnly.out.key as string),
      403,
    );
    expectSuccess(
      await t
        .http()
        .get(`/api/v1/project/${project.id}`)
        .set('X-API-KEY', rolled.out.key as string),
    );
    expect((await cli(t, 'keys:roll', '--id', String(readOnly.out.id))).out).toEqual({
      error: 'This API key has already been rolled: roll its replacement instead.',
    });
    expect((await cli(t, 'keys:roll', '--id', String(rolled.out.id), '--grace', '604801')).out).toEqual({
      error: '--grace must be at most 604800',
    });
    expect((await cli(t, 'keys:roll', '--id', '999999')).out).toEqual({ error: 'no API key with id 999999' });

    const all = await cli(t, 'audit:list', '--email', email);
    expect(all.code).toBe(0);
    expect(all.lines).toBe(1);
    const events = all.out.events as Array<Record<string, any>>;
    expect(events.map((e) => e.action)).toEqual([
      'api_key.rolled',
      'api_key.created',
      'api_key.created',
      'project.created',
      'project.created',
      'api_key.created',
    ]);
    const [rolledRow, createdRow] = events;
    for (const row of [rolledRow, createdRow])
      expect(row.actor).toEqual({ type: 'cli', api_key_id: null, api_key_prefix: null, user_id: null });
    expect(rolledRow).toMatchObject({
      resource_type: 'api_key',
      resource_id: readOnly.out.id,
      project_id: project.id,
      request_id: null,
      ip: null,
      user_agent: null,
    });
    expect(createdRow).toMatchObject({
      resource_id: rolled.out.id,
      changes: { key: [null, '[redacted]'], read_only: [null, true] },
    });
    expect(events[3].actor).toMatchObject({ type: 'api_key', api_key_id: admin.out.id });
    expect(JSON.stringify(all.out)).not.toContain(key);

    const scoped = await cli(
      t,
      'audit:list',
      '--email',
      email,
      '--project',
      String(project.id),
      '--limit',
      '2',
    );
    expect((scoped.out.events as Array<{ project_id: number }>).map((e) => e.project_id)).toEqual([
      project.id,
      project.id,
    ]);
    expect(
      ((await cli(t, 'audit:list', '--email', email, '--project', String(other.id))).out.events as unknown[])
        .length,
    ).toBe(1);
    expect(
      (await cli(t, 'audit:list', '--email', 'stranger@example.test', '--project', String(project.id))).out
        .error,
    ).toMatch(/^no user with email stranger@example.test/);
    await cli(t, 'users:create', '--email', 'stranger@example.test');
    expect(
      (await cli(t, 'audit:list', '--email', 'stranger@example.test', '--project', String(project.id))).out,
    ).toEqual({ error: `no project with id ${project.id} owned by stranger@example.test` });
    expect((await cli(t, 'audit:list', '--email', email, '--limit', '0')).out).toEqual({
      error: '--limit must be at least 1',
    });
    expect((await cli(t, 'audit:list', '--email', email, '--limit', '1001')).out).toEqual({
      error: '--limit must be at most 1000',
    });
  });

  it('exits 1 with a one-line JSON error', async () => {
    const dup = await cli(t, 'users:create', '--email', 'twice@example.test');
    expect(dup.code).toBe(0);
    const again = await cli(t, 'users:create', '--email', 'twice@example.test');
    expect(again.code).toBe(1);
    expect(again.lines).toBe(1);
    expect(again.out).toEqual({
      error: expect.stringMatching(
        /^a user with email twice@example.test already exists \(id \d+\): create a key for it with keys:create --email twice@example.test$/,
      ),
    });
    expect((await cli(t, 'keys:create', '--email', 'nobody@example.test')).out).toEqual({
      error:
        'no user with email nobody@example.test: create it with users:create --email nobody@example.test',
    });
    expect((await cli(t, 'keys:revoke', '--id', 'x')).out).toEqual({
      error: '--id must be a non-negative integer',
    });
    expect((await cli(t, 'nonsense')).out).toEqual({ error: 'unknown command "nonsense": see help' });
    expect((await cli(t)).out).toEqual({ error: 'no command given: see help' });
    const unknownFlag = await cli(t, 'users:list', '--everything');
    expect(unknownFlag.code).toBe(1);
    expect(unknownFlag.out.error).toMatch(/Unknown option '--everything'/);
    expect((await cli(t, 'keys:list', '--email')).out.error).toMatch(/--email/);
    expect((await cli(t, 'users:create', '--email', 'x@example.test', 'stray')).out.error).toMatch(/stray/);
  });

  it('refuses values its columns cannot hold, naming the field, and stores nothing (the same on SQLite and MySQL)', async () => {
    const email = `bounds-${randomBytes(3).toString('hex')}@example.test`;
    const refused = async (args: string[], error: string) => {
      const result = await cli(t, ...args);
      expect({ args, code: result.code, out: result.out }).toEqual({ args, code: 1, out: { error } });
    };
    await refused(
      ['users:create', '--email', email, '--name', 'n'.repeat(256)],
      'The name field must not be greater than 255 characters.',
    );
    await refused(
      ['users:create', '--email', email, '--max-projects', '2147483648'],
      'The max projects field must not be greater than 2147483647.',
    );
    await refused(
      ['users:create', '--email', email, '--max-projects', '99999999999999'],
      'The max projects field must not be greater than 2147483647.',
    );
    const users = (await cli(t, 'users:list')).out.users as Array<{ email: string }>;
    expect(users.map((u) => u.email)).not.toContain(email);

    expect(
      (
        await cli(
          t,
          'users:create',
          '--email',
          email,
          '--name',
          '€'.repeat(255),
          '--max-projects',
          '2147483647',
        )
      ).out,
    ).toMatchObject({ name: '€'.repeat(255), max_projects: 2147483647 });
    await refused(
      ['keys:create', '--email', email, '--name', 'k'.repeat(256)],
      'The name field must not be greater than 255 characters.',
    );
    await refused(
      ['keys:create', '--email', email, '--expires-at', '+010000-01-01T00:00:00Z'],
      'The expires at field must be a date before the year 10000.',
    );
    expect((await cli(t, 'keys:list', '--email', email)).out).toEqual({ keys: [] });
    expect(
      (
        await cli(
          t,
          'keys:create',
          '--email',
          email,
          '--name',
          '€'.repeat(255),
          '--expires-at',
          '9999-12-31T23:59:59Z',
        )
      ).out,
    ).toMatchObject({ name: '€'.repeat(255), expires_at: '9999-12-31T23:59:59Z' });
  });

  it('prints the commands on help, and each command its usage on --help', async () => {
    for (const args of [['help'], ['--help'], ['-h']]) {
      const help = run(t, ...args);
      expect(help.status).toBe(0);
      for (const command of [
        'users:create',
        'users:list',
        'keys:create',
        'keys:list',
        'keys:revoke',
        'keys:roll',
        'audit:list',
      ])
        expect(help.stdout).toContain(command);
    }
    const one = run(t, 'keys:create', '--help');
    expect(one.status).toBe(0);
    expect(one.stdout).toBe(
      'usage: npm run -s cli -- keys:create --email E [--project ID] [--name N] [--expires-at ISO] [--read-only]\n',
    );
  });
});
