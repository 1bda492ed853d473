import 'reflect-metadata';
import { instanceToPlain } from 'class-transformer';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DataSource } from 'typeorm';
import { CLI_CONTEXT, inAuditContext } from './audit/audit-context.js';
import { AuditEventEntity } from './audit/audit-event.entity.js';
import { AuditLog } from './audit/audit-log.service.js';
import { AuditService } from './audit/audit.service.js';
import { ApiKeyEntity } from './auth/api-key.entity.js';
import { AuthService, MAX_ROLL_GRACE_SECONDS } from './auth/auth.service.js';
import { UserEntity } from './auth/user.entity.js';
import { ApiError } from './common/http/errors.js';
import { loadConfig, loadEnvFile } from './config/app-config.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { takenField } from './database/db-errors.js';
import { Cursors } from './database/pagination.js';
import { UnitOfWork } from './database/unit-of-work.js';
import { ProjectEntity } from './projects/project.entity.js';

/**
 * The admin CLI (README, "Accounts and API keys"), run by src/cli.ts. Every command prints exactly
 * one JSON object on stdout; diagnostics go to stderr. Exit 0 on success, 1 with {"error": "..."}
 * otherwise. `help` and `--help` print the usage as text. Its writes are audited with the actor `cli`.
 */

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

interface Services {
  auth: AuthService;
  /** Everything written to the command's standard input (a password, never an argument: ps shows those). */
  stdin: () => Promise<string>;
  audit: AuditService;
  dataSource: DataSource;
}

interface Command {
  usage: string;
  options: Options;
  run(values: Values, services: Services): Promise<unknown>;
}

class UsageError extends Error {}

const text = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} needs a value`);
  return value;
}

function integer(values: Values, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value))
    throw new UsageError(`--${name} must be a non-negative integer`);
  if (Number(value) > max) throw new UsageError(`--${name} must be at most ${max}`);
  return Number(value);
}

function date(values: Values, name: string): Date | null {
  const value = values[name];
  if (value === undefined) return null;
  const parsed = new Date(String(value));
  if (Number.isNaN(parsed.getTime())) throw new UsageError(`--${name} must be an ISO-8601 date`);
  return parsed;
}

async function userByEmail(values: Values, { auth }: Services): Promise<UserEntity> {
  const email = required(values, 'email');
  const user = await auth.findUserByEmail(email);
  if (!user) throw new Error(`no user with email ${email}: create it with users:create --email ${email}`);
  return user;
}

/** The first line of standard input: `echo "$PW" | …` and a typed password both end with a newline. */
async function passwordFrom(stdin: () => Promise<string>): Promise<string> {
  const password = (await stdin()).split(/\r?\n/)[0];
  if (!password) throw new UsageError('the password is read from standard input, which was empty');
  return password;
}

const COMMANDS: Record<string, Command> = {
  'users:create': {
    usage:
      'users:create --email E [--name N] [--max-projects N] [--no-license-creation] [--no-webhooks] [--password-stdin]',
    options: {
      'password-stdin': flag,
      email: text,
      name: text,
      'max-projects': text,
      'no-license-creation': flag,
      'no-webhooks': flag,
    },
    async run(values, { auth, stdin }) {
      const email = required(values, 'email');
      const existing = await auth.findUserByEmail(email);
      // Running a walkthrough twice is common: say what to do next instead of only "taken".
      if (existing)
        throw new Error(
          `a user with email ${existing.email} already exists (id ${existing.id}): create a key for it with keys:create --email ${existing.email}`,
        );
      return auth.createUser({
        email,
        name: typeof values.name === 'string' ? values.name : null,
        max_projects: integer(values, 'max-projects') ?? null,
        can_create_licenses: values['no-license-creation'] !== true,
        webhooks_enabled: values['no-webhooks'] !== true,
        password: values['password-stdin'] === true ? await passwordFrom(stdin) : undefined,
      });
    },
  },
  'users:set-password': {
    usage: 'users:set-password --email E   (the password is read from standard input)',
    options: { email: text },
    async run(values, services) {
      const user = await userByEmail(values, services);
      await services.auth.setPassword(user.id, await passwordFrom(services.stdin));
      return { id: user.id, email: user.email, sessions_ended: true };
    },
  },
  'users:list': {
    usage: 'users:list',
    options: {},
    run: async (_values, { auth }) => ({ users: await auth.listUsers() }),
  },
  'keys:create': {
    usage: 'keys:create --email E [--project ID] [--name N] [--expires-at ISO] [--read-only]',
    options: { email: text, project: text, name: text, 'expires-at': text, 'read-only': flag },
    async run(values, services) {
      const { key, plaintext } = await services.auth.createKey(await userByEmail(values, services), {
        name: typeof values.name === 'string' ? values.name : undefined,
        project_id: integer(values, 'project') ?? null,
        expires_at: date(values, 'expires-at'),
        read_only: values['read-only'] === true,
      });
      key.key = plaintext;
      return key;
    },
  },
  'keys:list': {
    usage: 'keys:list --email E',
    options: { email: text },
    run: async (values, services) => ({
      keys: await services.auth.listKeys((await userByEmail(values, services)).id),
    }),
  },
  'keys:revoke': {
    usage: 'keys:revoke --id N',
    options: { id: text },
    async run(values, { auth }) {
      const id = integer(values, 'id');
      if (id === undefined) throw new UsageError('--id needs a value');
      const key = await auth.revokeKey(id);
      if (!key) throw new Error(`no API key with id ${id}`);
      return key;
    },
  },
  'keys:roll': {
    usage: 'keys:roll --id N [--grace S]',
    options: { id: text, grace: text },
    async run(values, { auth }) {
      const id = integer(values, 'id');
      if (id === undefined) throw new UsageError('--id needs a value');
      const rolled = await auth.rollKey(id, undefined, integer(values, 'grace', MAX_ROLL_GRACE_SECONDS));
      if (!rolled) throw new Error(`no API key with id ${id}`);
      return {
        ...instanceToPlain(rolled.key),
        key: rolled.plaintext,
        previous_key: instanceToPlain(rolled.previous),
      };
    },
  },
  'audit:list': {
    usage: 'audit:list --email E [--project ID] [--limit N]',
    options: { email: text, project: text, limit: text },
    async run(values, services) {
      const user = await userByEmail(values, services);
      const projectId = integer(values, 'project') ?? null;
      if (projectId !== null) {
        // Deleted projects too: their log outlives them.
        const project = await services.dataSource
          .getRepository(ProjectEntity)
          .findOne({ where: { id: projectId }, withDeleted: true, select: { id: true, user_id: true } });
        if (!project || project.user_id !== user.id)
          throw new Error(`no project with id ${projectId} owned by ${user.email}`);
      }
      const limit = integer(values, 'limit', 1000) ?? 20;
      if (limit < 1) throw new UsageError('--limit must be at least 1');
      return { events: await services.audit.latest({ owner_id: user.id, project_id: projectId }, limit) };
    },
  },
};

const USAGE = [
  'usage: npm run -s cli -- <command> [flags]',
  ...Object.values(COMMANDS).map((c) => `  ${c.usage}`),
  '  help',
].join('\n');

/** The command's flags, parsed strictly: an unknown flag or a stray argument is a usage error. */
function parse(command: Command, args: string[]): Values {
  try {
    return parseArgs({
      args,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]);
  }
}

/** Where a run reads its settings and writes its answer: the process's own, or a test's. */
export interface CliIo {
  env: Record<string, string | undefined>;
  /** Standard input, read whole; the process's own when omitted. */
  stdin?: () => Promise<string>;
  out: (text: string) => void;
  err: (text: string) => void;
}

const PROCESS_IO: CliIo = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    // A password is short: whatever is piped in beyond this is not one.
    if (size > 64 * 1024) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Runs one command (`argv` without node and the script); resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  const [name, ...args] = argv;
  if (name === 'help' || name === '--help' || name === '-h') {
    io.out(USAGE + '\n');
    return 0;
  }
  let dataSource: DataSource | undefined;
  try {
    const command = name === undefined ? undefined : COMMANDS[name];
    if (!command)
      throw new UsageError(
        name === undefined ? 'no command given: see help' : `unknown command "${name}": see help`,
      );
    const values = parse(command, args);
    if (values.help) {
      io.out(`usage: npm run -s cli -- ${command.usage}\n`);
      return 0;
    }
    if (io.env === process.env) loadEnvFile();
    const config = loadConfig(io.env, (msg) => io.err(`warning: ${msg}\n`));
    dataSource = await new DataSource(dataSourceOptions(config.env.DATABASE_URL)).initialize();
    await dataSource.runMigrations();
    const unit = new UnitOfWork(dataSource);
    unit.onModuleInit();
    const services: Services = {
      auth: new AuthService(
        dataSource.getRepository(UserEntity),
        dataSource.getRepository(ApiKeyEntity),
        new AuditLog(unit),
      ),
      stdin: io.stdin ?? readStdin,
      audit: new AuditService(dataSource.getRepository(AuditEventEntity), new Cursors(config.appKey), config),
      dataSource,
    };
    const result = await inAuditContext(CLI_CONTEXT, () => command.run(values, services));
    io.out(JSON.stringify(instanceToPlain(result)) + '\n');
    return 0;
  } catch (error) {
    const taken = takenField(error);
    const message = taken
      ? taken.message
      : error instanceof ApiError
        ? [error.message, ...Object.values(error.errors ?? {}).flat()]
            .filter((m, i, all) => all.indexOf(m) === i)
            .join(' ')
        : error instanceof Error
          ? error.message
          : String(error);
    io.out(JSON.stringify({ error: message.split('\n')[0] }) + '\n');
    if (error instanceof UsageError) io.err(USAGE + '\n');
    return 1;
  } finally {
    await dataSource?.destroy().catch(() => undefined);
  }
}
