import 'reflect-metadata';
import { instanceToPlain } from 'class-transformer';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DataSource } from 'typeorm';
import { ApiKeyEntity } from './auth/api-key.entity.js';
import { AuthService } from './auth/auth.service.js';
import { UserEntity } from './auth/user.entity.js';
import { ApiError } from './common/http/errors.js';
import { loadConfig, loadEnvFile } from './config/app-config.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { takenField } from './database/db-errors.js';

/**
 * The admin CLI (README, "Accounts and API keys"). Every command prints exactly one JSON object on
 * stdout; diagnostics go to stderr. Exit 0 on success, 1 with {"error": "..."} otherwise. `help`
 * and `--help` print the usage as text.
 */

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

interface Command {
  usage: string;
  options: Options;
  run(values: Values, auth: AuthService): Promise<unknown>;
}

class UsageError extends Error {}

const text = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} needs a value`);
  return value;
}

function integer(values: Values, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(value);
}

function date(values: Values, name: string): Date | null {
  const value = values[name];
  if (value === undefined) return null;
  const parsed = new Date(String(value));
  if (Number.isNaN(parsed.getTime())) throw new UsageError(`--${name} must be an ISO-8601 date`);
  return parsed;
}

async function userByEmail(values: Values, auth: AuthService): Promise<UserEntity> {
  const email = required(values, 'email');
  const user = await auth.findUserByEmail(email);
  if (!user) throw new Error(`no user with email ${email}: create it with users:create --email ${email}`);
  return user;
}

const COMMANDS: Record<string, Command> = {
  'users:create': {
    usage: 'users:create --email E [--name N] [--max-projects N] [--no-license-creation] [--no-webhooks]',
    options: { email: text, name: text, 'max-projects': text, 'no-license-creation': flag, 'no-webhooks': flag },
    async run(values, auth) {
      const email = required(values, 'email');
      const existing = await auth.findUserByEmail(email);
      // Running a walkthrough twice is common: say what to do next instead of only "taken".
      if (existing) throw new Error(`a user with email ${existing.email} already exists (id ${existing.id}): create a key for it with keys:create --email ${existing.email}`);
      return auth.createUser({
        email,
        name: typeof values.name === 'string' ? values.name : null,
        max_projects: integer(values, 'max-projects') ?? null,
        can_create_licenses: values['no-license-creation'] !== true,
        webhooks_enabled: values['no-webhooks'] !== true,
      });
    },
  },
  'users:list': {
    usage: 'users:list',
    options: {},
    run: async (_values, auth) => ({ users: await auth.listUsers() }),
  },
  'keys:create': {
    usage: 'keys:create --email E [--project ID] [--name N] [--expires-at ISO]',
    options: { email: text, project: text, name: text, 'expires-at': text },
    async run(values, auth) {
      const { key, plaintext } = await auth.createKey(await userByEmail(values, auth), {
        name: typeof values.name === 'string' ? values.name : undefined,
        project_id: integer(values, 'project') ?? null,
        expires_at: date(values, 'expires-at'),
      });
      key.key = plaintext;
      return key;
    },
  },
  'keys:list': {
    usage: 'keys:list --email E',
    options: { email: text },
    run: async (values, auth) => ({ keys: await auth.listKeys((await userByEmail(values, auth)).id) }),
  },
  'keys:revoke': {
    usage: 'keys:revoke --id N',
    options: { id: text },
    async run(values, auth) {
      const id = integer(values, 'id');
      if (id === undefined) throw new UsageError('--id needs a value');
      const key = await auth.revokeKey(id);
      if (!key) throw new Error(`no API key with id ${id}`);
      return key;
    },
  },
};

const USAGE = ['usage: npm run -s cli -- <command> [flags]', ...Object.values(COMMANDS).map((c) => `  ${c.usage}`), '  help'].join('\n');

/** The command's flags, parsed strictly: an unknown flag or a stray argument is a usage error. */
function parse(command: Command, args: string[]): Values {
  try {
    return parseArgs({ args, options: { ...command.options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }).values as Values;
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]);
  }
}

async function main(): Promise<number> {
  const [name, ...args] = process.argv.slice(2);
  if (name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  let dataSource: DataSource | undefined;
  try {
    const command = name === undefined ? undefined : COMMANDS[name];
    if (!command) throw new UsageError(name === undefined ? 'no command given: see help' : `unknown command "${name}": see help`);
    const values = parse(command, args);
    if (values.help) {
      process.stdout.write(`usage: npm run -s cli -- ${command.usage}\n`);
      return 0;
    }
    loadEnvFile();
    const config = loadConfig();
    dataSource = await new DataSource(dataSourceOptions(config.env.DATABASE_URL)).initialize();
    await dataSource.runMigrations();
    const auth = new AuthService(dataSource.getRepository(UserEntity), dataSource.getRepository(ApiKeyEntity));
    const result = await command.run(values, auth);
    process.stdout.write(JSON.stringify(instanceToPlain(result)) + '\n');
    return 0;
  } catch (error) {
    const taken = takenField(error);
    const message = taken
      ? taken.message
      : error instanceof ApiError
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
