import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import cluster from 'node:cluster';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import proxyaddr from 'proxy-addr';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  validateSync,
} from 'class-validator';

const toBool = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  return value;
};
const toInt = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;

/** What SMTP_URL must be, said by both of its checks. */
const SMTP_URL_EXPECTED =
  'must be an smtp:// or smtps:// URL with a host, e.g. smtps://user:pass@smtp.example.com:465; percent-encode / ? # @ in the user name and password';

/**
 * Every environment key the service reads, with its default. `.env.example` lists the same keys.
 * A bad value stops start-up with one line naming the key (see loadConfig).
 */
export class EnvironmentVariables {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV = 'development';

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  @Matches(/^(sqlite:.+|mysql:\/\/.+|mariadb:\/\/.+)$/, {
    message: 'must be sqlite:<path> or mysql://user:pass@host:port/db',
  })
  DATABASE_URL = 'sqlite:./data/licensegate.sqlite';

  @IsOptional()
  @IsString()
  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// URL' })
  REDIS_URL?: string;

  /** Prefix of every Redis key, so that several deployments (or test runs) can share one Redis. */
  @IsString()
  @Matches(/^[\w:.-]{1,64}$/, { message: 'must be 1-64 characters of letters, digits, _ : . -' })
  REDIS_KEY_PREFIX = 'lg:';

  @IsOptional()
  @IsString()
  APP_KEY?: string;

  @IsString()
  APP_KEY_FILE = './data/app.key';

  /** false, a hop count, a comma-separated list of proxy addresses / CIDR ranges, or true (docs/security.md). */
  @IsString()
  TRUST_PROXY = 'false';

  @IsString()
  @Matches(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { message: 'must be an HTTP header name such as CF-IPCountry' })
  COUNTRY_HEADER = 'CF-IPCountry';

  @Transform(toInt)
  @IsInt()
  @Min(1)
  CACHE_TTL_SECONDS = 900;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_ROOT_LIMIT = 60;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_ROOT_TTL_SECONDS = 60;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_API_LIMIT = 600;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_API_TTL_SECONDS = 60;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_RUNTIME_LIMIT = 6000;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_RUNTIME_TTL_SECONDS = 60;

  /** Unknown or malformed license keys and API keys per client address (docs/security.md). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_AUTH_FAILURES_LIMIT = 60;
  @Transform(toInt)
  @IsInt()
  @Min(1)
  THROTTLE_AUTH_FAILURES_TTL_SECONDS = 60;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  MAX_UPLOAD_BYTES = 5 * 1024 * 1024;

  /** A connection on which no byte moves either way for this long is closed (a client that stopped reading, or sending). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  HTTP_IDLE_TIMEOUT_MS = 30_000;

  /** Bytes of large answers (1 MiB and over) that may wait for slow clients at once; past it they get 503. */
  @Transform(toInt)
  @IsInt()
  @Min(1_048_576)
  MAX_PENDING_ANSWER_BYTES = 64 * 1024 * 1024;

  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_ALLOW_PRIVATE = false;

  /** Seconds after the first try at which failed deliveries are retried (docs/decisions.md#webhooks). */
  @IsString()
  @Matches(/^\d+(\.\d+)?(,\d+(\.\d+)?)*$/, { message: 'must be comma-separated seconds, e.g. 5,30,120' })
  WEBHOOK_RETRY_SCHEDULE = '5,30,120,600,1800,3600,10800,21600,43200';

  /** Run the webhook dispatcher inside the service process (it can also run alone: npm run dispatcher). */
  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_DISPATCHER = true;

  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(60000)
  WEBHOOK_POLL_MS = 1000;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120000)
  WEBHOOK_TIMEOUT_MS = 10000;

  /** Deliveries one dispatcher has under way at once; each slot is refilled as soon as it frees. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  WEBHOOK_CONCURRENCY = 32;

  /** Of those, at most this many to one receiver (host and port), so a slow one cannot take every slot. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  WEBHOOK_CONCURRENCY_PER_HOST = 4;

  /** Bound on resolving a webhook host name, on write and when a delivery connects. */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(60000)
  WEBHOOK_DNS_TIMEOUT_MS = 2000;

  /** Successful self-service deactivations (POST /license/deactivate) per license and UTC day; 0 turns them off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1000)
  SELF_DEACTIVATIONS_PER_DAY = 3;

  /**
   * Activations (domains and hosts) recorded per license; past it a new place is answered but not
   * recorded, so a public key cannot lock its buyer out nor grow the table without end.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  LICENSE_MAX_ACTIVATIONS = 1000;

  /** license.expiring is sent this many days before a license's expires_at (0: only license.expired). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(365)
  LICENSE_EXPIRY_NOTICE_DAYS = 7;

  /** How often the scheduler that sends license.expiring / license.expired looks for due licenses. */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(3_600_000)
  LICENSE_EXPIRY_POLL_MS = 60_000;
  /** How often the scheduler that closes the gate when a payment grace ends looks for due rows (docs/payments.md). */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(3_600_000)
  PAYMENT_GRACE_POLL_MS = 60_000;

  /**
   * The address the service is reached at from outside (scheme, host, optional port; no path or query):
   * payment connectors' endpoint_url starts with it. Default: http://localhost:PORT.
   */
  @IsOptional()
  @IsString()
  PUBLIC_URL?: string;

  /** Audit rows older than this many days are pruned, hourly; 0 keeps every row. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36500)
  AUDIT_RETENTION_DAYS = 365;

  /** Count every runtime answer for the analytics (docs/analytics.md); false counts nothing and writes nothing. */
  @Transform(toBool)
  @IsBoolean()
  ANALYTICS_ENABLED = true;

  /** Analytics rows (one per project, hour, outcome, reason, domain, country) older than this many days are pruned, hourly. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(36500)
  ANALYTICS_RETENTION_DAYS = 90;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  CLUSTER_WORKERS = 1;

  /** Serve the console at /console/ (docs/console.md); false: /console answers 404 like any unknown path. */
  @Transform(toBool)
  @IsBoolean()
  CONSOLE_ENABLED = true;

  /** Origins allowed to call the API from a browser: `*` (any) or a comma-separated list. */
  @IsString()
  CORS_ORIGINS = '*';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /**
   * The console's sign-in with an API key (docs/security.md#sessions). Unset: on, and in production
   * on only until the account has a member with a password or SSO is configured.
   */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  CONSOLE_API_KEY_SIGN_IN?: boolean;

  /** smtp(s)://user:pass@host:port: invitations and password-reset links are mailed through it. */
  @IsOptional()
  @IsString()
  @Matches(/^smtps?:\/\//, { message: SMTP_URL_EXPECTED })
  SMTP_URL?: string;

  /** The From of those mails. Default: LicenseGate <no-reply@the host of PUBLIC_URL>. */
  @IsOptional()
  @IsString()
  SMTP_FROM?: string;

  /**
   * Bound on sending one mail: connecting, the greeting, each reply and the whole. A request that mails
   * (an invitation, a password reset) answers after at most this long, the failure logged.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120000)
  SMTP_TIMEOUT_MS = 10000;

  /** Single sign-on with OpenID Connect (docs/security.md#sso): the issuer URL, as its discovery names it. */
  @IsOptional()
  @IsString()
  @Matches(/^https?:\/\/.+/, { message: 'must be an http(s) URL' })
  OIDC_ISSUER?: string;

  @IsOptional()
  @IsString()
  OIDC_CLIENT_ID?: string;

  @IsOptional()
  @IsString()
  OIDC_CLIENT_SECRET?: string;

  /** Comma-separated email domains whose people join on their first SSO sign-in, with OIDC_DEFAULT_ROLE. */
  @IsOptional()
  @IsString()
  @Matches(/^\s*[a-z0-9.-]+\.[a-z0-9-]+\s*(,\s*[a-z0-9.-]+\.[a-z0-9-]+\s*)*$/i, {
    message: 'must be comma-separated email domains such as example.com,example.org',
  })
  OIDC_ALLOWED_DOMAINS?: string;

  @IsIn(['admin', 'developer', 'support', 'viewer'])
  OIDC_DEFAULT_ROLE = 'viewer';

  /** Bound on each request to the identity provider (discovery, token exchange, keys); then 502. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60000)
  OIDC_TIMEOUT_MS = 5000;
}

export class ConfigError extends Error {}

/** false: the socket's address; a hop count; proxy addresses and ranges; true: every hop (any client chooses). */
export type TrustProxy = boolean | number | string[];

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, or an address/prefix range, that proxy-addr (Express's trust proxy) accepts. */
function isProxyEntry(entry: string): boolean {
  if (PROXY_NAMES.has(entry)) return true;
  const [address, prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** Express hands the list to proxy-addr at start-up: what it refuses must stop start-up here, in one line. */
function compiles(entries: string[]): boolean {
  try {
    proxyaddr.compile(entries);
    return true;
  } catch {
    return false;
  }
}

/**
 * TRUST_PROXY: `false` (default), a hop count, a comma-separated list of proxy addresses and CIDR
 * ranges (and Express's names loopback, linklocal, uniquelocal), or `true`. The client address is the
 * first address not trusted, reading X-Forwarded-For from the right (docs/security.md).
 */
export function parseTrustProxy(raw: string): TrustProxy {
  const value = raw.trim().toLowerCase();
  if (['false', 'no', 'off', '', '0'].includes(value)) return false;
  if (['true', 'yes', 'on'].includes(value)) return true;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops <= 1000) return hops;
  } else {
    const entries = value.split(',').map((entry) => entry.trim());
    if (entries.every(isProxyEntry) && compiles(entries)) return entries;
  }
  throw new ConfigError(
    `TRUST_PROXY: invalid value ${JSON.stringify(raw)} (must be false, a hop count such as 1, a comma-separated list of proxy addresses or CIDR ranges such as 10.0.0.5,192.168.0.0/16 (or loopback, linklocal, uniquelocal), or true)`,
  );
}

export const TRUST_PROXY_TRUE_WARNING =
  'TRUST_PROXY=true trusts every X-Forwarded-For hop: any client can then choose its address (allowed_ips, rate limits, the audit ip). Set the hop count or the proxy addresses instead (docs/security.md).';

/** The validated, typed configuration. Injected by class token. */
export class AppConfig {
  readonly env: EnvironmentVariables;
  /** 32-byte key that encrypts secrets at rest. */
  readonly appKey: Buffer;
  /** TRUST_PROXY as Express's `trust proxy` setting takes it. */
  readonly trustProxy: TrustProxy;

  constructor(env: EnvironmentVariables, appKey: Buffer) {
    this.env = env;
    this.appKey = appKey;
    this.trustProxy = parseTrustProxy(env.TRUST_PROXY);
  }

  /** PUBLIC_URL without its trailing slash, or http://localhost:PORT. */
  get publicUrl(): string {
    return this.env.PUBLIC_URL ?? `http://localhost:${this.env.PORT}`;
  }

  /** Single sign-on is configured: issuer, client id and secret. */
  get oidcEnabled(): boolean {
    return Boolean(this.env.OIDC_ISSUER && this.env.OIDC_CLIENT_ID && this.env.OIDC_CLIENT_SECRET);
  }

  /** The email domains admitted on a first SSO sign-in, lower case. */
  get oidcAllowedDomains(): string[] {
    return (this.env.OIDC_ALLOWED_DOMAINS ?? '')
      .split(',')
      .map((domain) => domain.trim().toLowerCase())
      .filter(Boolean);
  }

  get isProduction(): boolean {
    return this.env.NODE_ENV === 'production';
  }
}

function decodeAppKey(raw: string, key: string): Buffer {
  const value = raw.trim().replace(/^base64:/, '');
  const buf = Buffer.from(value, 'base64');
  if (buf.length !== 32 || !/^[A-Za-z0-9+/_-]+=*$/.test(value)) {
    throw new ConfigError(`${key}: must be 32 bytes encoded as base64`);
  }
  return buf;
}

function resolveAppKey(env: EnvironmentVariables, warn: (msg: string) => void): Buffer {
  if (env.APP_KEY) return decodeAppKey(env.APP_KEY, 'APP_KEY');
  if (env.NODE_ENV === 'production') {
    throw new ConfigError('APP_KEY: required when NODE_ENV=production (32 bytes, base64)');
  }
  const file = env.APP_KEY_FILE;
  const unusable = (doing: string, error: unknown) =>
    new ConfigError(
      `APP_KEY_FILE: cannot ${doing} the key file ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): set APP_KEY, or point APP_KEY_FILE at a file this process can read and write`,
    );
  if (existsSync(file)) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw unusable('read', error);
    }
    return decodeAppKey(text, `APP_KEY (from ${file})`);
  }
  const key = randomBytes(32);
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 });
  } catch (error) {
    throw unusable('create', error);
  }
  warn(`APP_KEY is not set: generated one into ${file}. Set APP_KEY in production.`);
  return key;
}

/** Keys with no default: not among the fields of a new EnvironmentVariables, so listed here. */
export const OPTIONAL_KEYS = [
  'REDIS_URL',
  'APP_KEY',
  'PUBLIC_URL',
  'CONSOLE_API_KEY_SIGN_IN',
  'SMTP_URL',
  'SMTP_FROM',
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_ALLOWED_DOMAINS',
];

const SECRET_BEARING = new Set(['DATABASE_URL', 'REDIS_URL', 'APP_KEY', 'SMTP_URL', 'OIDC_CLIENT_SECRET']);

/** A URL with a host, or null: the drivers parse it with WHATWG URL and would throw a stack trace at start. */
function urlWithHost(value: string): URL | null {
  try {
    const url = new URL(value);
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    return url.hostname === '' ? null : url;
  } catch {
    return null;
  }
}

/**
 * What nodemailer refuses in a host name once decoded (its shared/url.js), beside what domainToASCII
 * refuses: controls, space, DEL and these.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const FORBIDDEN_HOST_CHARS = /[\x00-\x20#/:<>?@[\\\]^|\x7f]/;

/**
 * An SMTP URL that mails where it says: one that parses, with a host name nodemailer takes (it decodes
 * the host and maps it as domainToASCII does; without a host it would mail through localhost). An `@`
 * after the host means a `/`, `?` or `#` in the password was not encoded: the URL would name the user
 * as the host. A stray `%` in the password is left to nodemailer, which takes it as written.
 */
function smtpUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hostname === '' || (url.pathname + url.search + url.hash).includes('@')) return false;
  if (url.hostname.startsWith('[')) return true; // an IPv6 literal, checked by the parse
  let host = url.hostname;
  try {
    host = decodeURIComponent(host);
  } catch {
    // nodemailer keeps a host it cannot decode as written
  }
  return !FORBIDDEN_HOST_CHARS.test(host) && domainToASCII(host) !== '';
}

/** What the per-key decorators cannot say: URLs that parse, origins that can ever match. */
function checkUrlsAndLists(env: EnvironmentVariables): void {
  if (env.REDIS_URL !== undefined && !urlWithHost(env.REDIS_URL)) {
    throw new ConfigError(
      'REDIS_URL: invalid value (must be a redis:// or rediss:// URL with a host, e.g. redis://127.0.0.1:6379)',
    );
  }
  if (!env.DATABASE_URL.startsWith('sqlite:')) {
    const url = urlWithHost(env.DATABASE_URL);
    if (!url || url.pathname.replace(/^\//, '') === '') {
      throw new ConfigError(
        'DATABASE_URL: invalid value (must be sqlite:<path> or mysql://user:pass@host:port/db with a host and a database name)',
      );
    }
  }
  // Said at start: nodemailer is loaded lazily (auth/mailer.ts), and would otherwise refuse it only then.
  if (env.SMTP_URL !== undefined && !smtpUrl(env.SMTP_URL)) {
    throw new ConfigError(`SMTP_URL: invalid value (${SMTP_URL_EXPECTED})`);
  }
  if (env.PUBLIC_URL !== undefined) env.PUBLIC_URL = publicUrl(env.PUBLIC_URL);
  if (env.CORS_ORIGINS.trim() !== '*') {
    // Browsers send Origin as scheme://host[:port]; an entry with a path or a slash never matches it.
    const bad = env.CORS_ORIGINS.split(',')
      .map((origin) => origin.trim())
      .find((origin) => !/^https?:\/\/[^/\s?#,*]+$/i.test(origin) || urlWithHost(origin)?.origin !== origin);
    if (bad !== undefined) {
      throw new ConfigError(
        `CORS_ORIGINS: invalid value ${JSON.stringify(env.CORS_ORIGINS)} (must be * or comma-separated origins such as https://shop.example.com: scheme and host, an optional port, no path; ${JSON.stringify(bad)} is not one)`,
      );
    }
  }
}

/** PUBLIC_URL as endpoint URLs are built on: an http(s) URL with a host and no path, query or fragment. */
function publicUrl(value: string): string {
  const url = urlWithHost(value.trim());
  const bare = value.trim().replace(/\/+$/, '');
  if (
    !url ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== '' ||
    url.username !== '' ||
    url.password !== '' ||
    /[?#]/.test(bare)
  ) {
    throw new ConfigError(
      `PUBLIC_URL: invalid value ${JSON.stringify(value)} (must be an http(s) URL with a host and no path, query or fragment, e.g. https://licenses.example.com)`,
    );
  }
  return url.origin;
}

/**
 * Validates the environment. Throws ConfigError whose message is one line naming the first bad key.
 */
export function loadConfig(
  source: Record<string, string | undefined> = process.env,
  warn: (msg: string) => void = (msg) => process.stderr.write(`warning: ${msg}\n`),
): AppConfig {
  const plain: Record<string, string> = {};
  for (const key of Object.keys(new EnvironmentVariables())) {
    const value = source[key];
    if (value !== undefined && value !== '') plain[key] = value;
  }
  for (const key of OPTIONAL_KEYS) {
    if (source[key]) plain[key] = source[key];
  }
  const env = plainToInstance(EnvironmentVariables, plain);
  const errors = validateSync(env, { forbidUnknownValues: false });
  if (errors.length > 0) {
    const first = errors[0];
    const constraints = first.constraints ?? {};
    // The type check says more than a range check about a value of the wrong kind.
    const kind = ['isInt', 'isBoolean', 'isIn', 'matches', 'isString'].find((name) => name in constraints);
    const reason = (kind ? constraints[kind] : Object.values(constraints)[0]) ?? 'is invalid';
    const shown = reason.startsWith(first.property) ? reason : `${first.property} ${reason}`;
    // A URL may carry a password: never repeat it.
    if (SECRET_BEARING.has(first.property))
      throw new ConfigError(
        `${first.property}: invalid value (${reason.replace(new RegExp(`^${first.property} `), '')})`,
      );
    throw new ConfigError(
      `${first.property}: invalid value ${JSON.stringify(source[first.property])} (${shown})`,
    );
  }
  checkUrlsAndLists(env);
  const oidc = [env.OIDC_ISSUER, env.OIDC_CLIENT_ID, env.OIDC_CLIENT_SECRET].filter(Boolean).length;
  if (oidc > 0 && oidc < 3)
    throw new ConfigError(
      'OIDC_ISSUER: single sign-on needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET together',
    );
  parseTrustProxy(env.TRUST_PROXY);
  if (env.CLUSTER_WORKERS > 1 && !env.REDIS_URL) {
    // Workers are separate processes: without Redis each would keep its own cache generations and
    // rate-limit counters, and a write on one worker would leave the others serving the old state.
    throw new ConfigError(
      'CLUSTER_WORKERS: more than one worker needs REDIS_URL (shared cache generations and rate limits)',
    );
  }
  const config = new AppConfig(env, resolveAppKey(env, warn));
  // Once per start: a cluster's workers load the same configuration the primary warned about.
  if (config.trustProxy === true && !cluster.isWorker) warn(TRUST_PROXY_TRUE_WARNING);
  return config;
}

/** Reads `.env` when present; real environment variables win. */
export function loadEnvFile(path = '.env'): void {
  if (existsSync(path)) process.loadEnvFile(path);
}
