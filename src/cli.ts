import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ApiKeyEntity } from './auth/api-key.entity.js';
import { AuthService } from './auth/auth.service.js';
import { UserEntity } from './auth/user.entity.js';
import { ApiError } from './common/errors.js';
import { instanceToPlain } from 'class-transformer';
import { loadConfig, loadEnvFile } from './config/app-config.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { ProjectEntity } from './projects/project.entity.js';

/**
 * Admin CLI (SPEC 2). Every command prints exactly one JSON object on stdout; diagnostics go to
 * stderr. Exit 0 on success, 1 with {"error": "..."} otherwise.
 */
type Flags = Record<string, string | boolean>;

const USAGE = `usage: npm run cli -- <command> [flags]
  users:create --email E [--name N] [--max-projects N] [--no-license-creation] [--no-webhooks]
  users:list
  keys:create --email E [--project ID] [--name N] [--expires-at ISO]
  keys:list --email E
  keys:revoke --id N`;

class UsageError extends Error {}

function parseFlags(args: string[]): Flags {
  const flags: Flags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (inline !== undefined) flags[name] = inline;
    else if (args[i + 1] !== undefined && !args[i + 1].startsWith('--')) flags[name] = args[++i];
    else flags[name] = true;
  }
  return flags;
}

function str(flags: Flags, name: string, required = false): string | undefined {
  const value = flags[name];
  if (value === undefined || value === true) {
    if (required || value === true) throw new UsageError(`--${name} needs a value`);
    return undefined;
  }
  return String(value);
}

function int(flags: Flags, name: string): number | undefined {
  const value = str(flags, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(value);
}

async function run(command: string | undefined, flags: Flags, auth: AuthService): Promise<unknown> {
  const userByEmail = async () => {
    const email = str(flags, 'email', true) as string;
    const user = await auth.findUserByEmail(email);
    if (!user) throw new Error(`no user with email ${email}`);
    return user;
  };
  switch (command) {
    case 'users:create':
      return auth.createUser({
        email: str(flags, 'email', true) as string,
        name: str(flags, 'name') ?? null,
        max_projects: int(flags, 'max-projects') ?? null,
        can_create_licenses: flags['no-license-creation'] !== true,
        webhooks_enabled: flags['no-webhooks'] !== true,
      });
    case 'users:list':
      return { users: await auth.listUsers() };
    case 'keys:create': {
      const expires = str(flags, 'expires-at');
      const expiresAt = expires === undefined ? null : new Date(expires);
      if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new UsageError('--expires-at must be an ISO-8601 date');
      const { key, plaintext } = await auth.createKey(await userByEmail(), {
        name: str(flags, 'name'),
        project_id: int(flags, 'project') ?? null,
        expires_at: expiresAt,
      });
      key.key = plaintext;
      return key;
    }
    case 'keys:list':
      return { keys: await auth.listKeys((await userByEmail()).id) };
    case 'keys:revoke': {
      const id = int(flags, 'id');
      if (id === undefined) throw new UsageError('--id needs a value');
      const key = await auth.revokeKey(id);
      if (!key) throw new Error(`no API key with id ${id}`);
      return key;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  }
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  let dataSource: DataSource | undefined;
  try {
    const flags = parseFlags(rest);
    loadEnvFile();
    const config = loadConfig();
    dataSource = await new DataSource(dataSourceOptions(config.env.DATABASE_URL)).initialize();
    await dataSource.runMigrations();
    const auth = new AuthService(
      dataSource.getRepository(UserEntity),
      dataSource.getRepository(ApiKeyEntity),
      dataSource.getRepository(ProjectEntity),
    );
    const result = await run(command, flags, auth);
    process.stdout.write(JSON.stringify(instanceToPlain(result)) + '\n');
    return 0;
  } catch (error) {
    const message =
      error instanceof ApiError
        ? [error.message, ...Object.values(error.errors ?? {}).flat()].filter((m, i, all) => all.indexOf(m) === i).join(' ')
        : error instanceof Error
          ? error.message
          : String(error);
    process.stdout.write(JSON.stringify({ error: message.split('\n')[0] }) + '\n');
    if (error instanceof UsageError) process.stderr.write(USAGE + '\n');
    return 1;
  } finally {
    await dataSource?.destroy().catch(() => undefined);
  }
}

process.exitCode = await main();
