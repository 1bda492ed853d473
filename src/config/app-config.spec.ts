import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, EnvironmentVariables, loadConfig, TRUST_PROXY_TRUE_WARNING } from './app-config.js';

const KEY = randomBytes(32).toString('base64');
const quiet = () => undefined;
/** A regular file: a key file "under" it can be neither read nor created. */
const KEY_FILE_UNDER_A_FILE = join(mkdtempSync(join(tmpdir(), 'lg-key-')), 'plain-file');
writeFileSync(KEY_FILE_UNDER_A_FILE, 'x');

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ APP_KEY: KEY }, quiet);
    expect(config.env.PORT).toBe(3000);
    expect(config.env.DATABASE_URL).toBe('sqlite:./data/licensegate.sqlite');
    expect(config.env.CACHE_TTL_SECONDS).toBe(900);
    expect(config.env.THROTTLE_ROOT_LIMIT).toBe(60);
    expect(config.env.MAX_UPLOAD_BYTES).toBe(5 * 1024 * 1024);
    expect(config.env.WEBHOOK_ALLOW_PRIVATE).toBe(false);
    expect(config.env.WEBHOOK_CONCURRENCY).toBe(32);
    expect(config.env.WEBHOOK_CONCURRENCY_PER_HOST).toBe(4);
    expect(config.env.WEBHOOK_DNS_TIMEOUT_MS).toBe(2000);
    expect(config.env.COUNTRY_HEADER).toBe('CF-IPCountry');
    expect(config.env.SELF_DEACTIVATIONS_PER_DAY).toBe(3);
    expect(config.env.LICENSE_EXPIRY_NOTICE_DAYS).toBe(7);
    expect(config.env.LICENSE_EXPIRY_POLL_MS).toBe(60_000);
    expect(config.env.ANALYTICS_ENABLED).toBe(true);
    expect(config.env.ANALYTICS_RETENTION_DAYS).toBe(90);
    expect(config.env.PAYMENT_GRACE_POLL_MS).toBe(60_000);
    expect(config.env.PUBLIC_URL).toBeUndefined();
    expect(config.publicUrl).toBe('http://localhost:3000');
    expect(loadConfig({ APP_KEY: KEY, PORT: '8080' }, quiet).publicUrl).toBe('http://localhost:8080');
    expect(config.appKey).toEqual(Buffer.from(KEY, 'base64'));
  });

  it('parses numbers and booleans from strings', () => {
    const config = loadConfig(
      { APP_KEY: KEY, PORT: '8080', TRUST_PROXY: 'true', WEBHOOK_ALLOW_PRIVATE: '1' },
      quiet,
    );
    expect(config.env.PORT).toBe(8080);
    expect(config.trustProxy).toBe(true);
    expect(config.env.WEBHOOK_ALLOW_PRIVATE).toBe(true);
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'postgres://x/y'],
    ['REDIS_URL', 'http://localhost'],
    ['TRUST_PROXY', 'perhaps'],
    ['CONSOLE_ENABLED', 'perhaps'],
    ['THROTTLE_API_LIMIT', '0'],
    ['NODE_ENV', 'staging'],
    ['APP_KEY', 'too-short'],
    ['WEBHOOK_CONCURRENCY', '0'],
    ['WEBHOOK_CONCURRENCY_PER_HOST', 'four'],
    ['WEBHOOK_DNS_TIMEOUT_MS', '10'],
    ['SELF_DEACTIVATIONS_PER_DAY', '-1'],
    ['LICENSE_EXPIRY_NOTICE_DAYS', 'week'],
    ['LICENSE_EXPIRY_POLL_MS', '10'],
    ['ANALYTICS_ENABLED', 'sometimes'],
    ['ANALYTICS_RETENTION_DAYS', '0'],
    ['ANALYTICS_RETENTION_DAYS', 'quarter'],
    // Values the old checks let through, each then failing later with a stack trace or silently.
    ['REDIS_URL', 'redis://:secret@'],
    ['REDIS_URL', 'redis://'],
    ['DATABASE_URL', 'mysql://root@'],
    ['DATABASE_URL', 'mysql://%zz@127.0.0.1:3306/test'],
    ['CORS_ORIGINS', 'not an origin'],
    ['CORS_ORIGINS', 'https://shop.example.com/'],
    ['CORS_ORIGINS', 'https://shop.example.com,*'],
    ['CORS_ORIGINS', 'https://Shop.example.com'],
    ['COUNTRY_HEADER', 'CF IPCountry'],
    ['APP_KEY_FILE', tmpdir()],
    ['APP_KEY_FILE', join(KEY_FILE_UNDER_A_FILE, 'app.key')],
  ])('stops with one line naming %s for %p', (key, value) => {
    let error: unknown;
    try {
      // APP_KEY_FILE is read only when APP_KEY is not set.
      loadConfig(key === 'APP_KEY_FILE' ? { [key]: value } : { APP_KEY: KEY, [key]: value }, quiet);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message.startsWith(`${key}:`)).toBe(true);
    expect(message).not.toContain('\n');
  });

  it('names the key and says what is wrong, in words a person can act on', () => {
    const message = (env: Record<string, string>) => {
      try {
        loadConfig(env, quiet);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(message({ APP_KEY: KEY, REDIS_URL: 'redis://:secret@' })).toBe(
      'REDIS_URL: invalid value (must be a redis:// or rediss:// URL with a host, e.g. redis://127.0.0.1:6379)',
    );
    for (const bad of [
      'licenses.example.com',
      'ftp://licenses.example.com',
      'https://x.example.com/api',
      'https://x.example.com/?a=1',
      'https://x.example.com#top',
    ])
      expect(message({ APP_KEY: KEY, PUBLIC_URL: bad })).toBe(
        `PUBLIC_URL: invalid value ${JSON.stringify(bad)} (must be an http(s) URL with a host and no path, query or fragment, e.g. https://licenses.example.com)`,
      );
    // Refused at start, each with the same words: what nodemailer refuses once loaded ("Invalid URL"),
    // a port it takes but cannot connect to, no host (it would mail through localhost), and an
    // unencoded / or # in the password (nodemailer would take the user name for the host).
    const SMTP_EXPECTED =
      'SMTP_URL: invalid value (must be an smtp:// or smtps:// URL with a host, e.g. smtps://user:pass@smtp.example.com:465; percent-encode / ? # @ in the user name and password)';
    for (const bad of [
      'smtp://mail example.com',
      'smtp://[::1',
      'smtp://h:abc',
      'smtp://exa%20mple.com',
      'smtp://xn--a.com',
      'smtp://h:99999',
      'smtps://',
      'smtp://:25',
      'smtp://mailer:465#x@smtp.example.com',
      'smtp://mailer:pa/ss@smtp.example.com',
      'https://smtp.example.com',
    ])
      expect(message({ APP_KEY: KEY, SMTP_URL: bad })).toBe(SMTP_EXPECTED);
    expect(message({ APP_KEY: KEY, DATABASE_URL: 'mysql://root@' })).toBe(
      'DATABASE_URL: invalid value (must be sqlite:<path> or mysql://user:pass@host:port/db with a host and a database name)',
    );
    expect(message({ APP_KEY: KEY, CORS_ORIGINS: 'https://a.example.com, https://b.example.com/' })).toBe(
      'CORS_ORIGINS: invalid value "https://a.example.com, https://b.example.com/" (must be * or comma-separated origins such as https://shop.example.com: scheme and host, an optional port, no path; "https://b.example.com/" is not one)',
    );
    expect(message({ APP_KEY: KEY, COUNTRY_HEADER: 'CF IPCountry' })).toBe(
      'COUNTRY_HEADER: invalid value "CF IPCountry" (COUNTRY_HEADER must be an HTTP header name such as CF-IPCountry)',
    );
    expect(message({ APP_KEY_FILE: tmpdir() })).toBe(
      `APP_KEY_FILE: cannot read the key file ${tmpdir()} (EISDIR): set APP_KEY, or point APP_KEY_FILE at a file this process can read and write`,
    );
    const under = join(KEY_FILE_UNDER_A_FILE, 'app.key');
    const created = message({ APP_KEY_FILE: under });
    expect(created.startsWith(`APP_KEY_FILE: cannot create the key file ${under} (`)).toBe(true);
    expect(
      created.endsWith('): set APP_KEY, or point APP_KEY_FILE at a file this process can read and write'),
    ).toBe(true);
    // Values that hold a password are never repeated.
    expect(message({ APP_KEY: KEY, REDIS_URL: 'http://u:hunter2@redis' })).toBe(
      'REDIS_URL: invalid value (must be a redis:// URL)',
    );
    expect(message({ APP_KEY: KEY, DATABASE_URL: 'postgres://u:hunter2@db/x' })).toBe(
      'DATABASE_URL: invalid value (must be sqlite:<path> or mysql://user:pass@host:port/db)',
    );
    // A password or user name with URL escapes is fine; so are the valid forms of each.
    expect(
      message({
        APP_KEY: KEY,
        REDIS_URL: 'rediss://:p%40ss@redis.internal:6380/2',
        DATABASE_URL: 'mysql://u:p%40ss@db:3306/lg',
        CORS_ORIGINS: 'https://a.example.com, http://localhost:5173',
        SMTP_URL: 'smtps://mailer:p%40ss@smtp.example.com:465',
      }),
    ).toBe('no error');
    // What nodemailer takes and mails through as written: a stray % in the password, an IPv6 host,
    // a name in Unicode, its options in the query.
    for (const good of [
      'smtp://mailer:50%off@[::1]:2525',
      'smtp://münchen.example:25',
      'smtp://mailer:p@smtp.example.com:587?tls.rejectUnauthorized=false',
    ])
      expect(message({ APP_KEY: KEY, SMTP_URL: good })).toBe('no error');
    expect(
      message({ APP_KEY: KEY, DATABASE_URL: 'mariadb://root@127.0.0.1/test', COUNTRY_HEADER: 'X-Country' }),
    ).toBe('no error');
  });

  it('refuses several workers without Redis, and takes them with it', () => {
    expect(() => loadConfig({ APP_KEY: KEY, CLUSTER_WORKERS: '2' }, quiet)).toThrow(
      /^CLUSTER_WORKERS: more than one worker needs REDIS_URL/,
    );
    expect(
      loadConfig({ APP_KEY: KEY, CLUSTER_WORKERS: '2', REDIS_URL: 'redis://127.0.0.1:6379' }, quiet).env
        .CLUSTER_WORKERS,
    ).toBe(2);
    expect(loadConfig({ APP_KEY: KEY, CLUSTER_WORKERS: '1' }, quiet).env.CLUSTER_WORKERS).toBe(1);
  });

  it('requires APP_KEY in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, quiet)).toThrow(/^APP_KEY: required/);
  });

  it('generates a key file with a warning outside production, and reuses it', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'lg-key-')), 'app.key');
    const warnings: string[] = [];
    const first = loadConfig({ APP_KEY_FILE: file }, (m) => warnings.push(m));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(file);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toEqual(first.appKey);
    const second = loadConfig({ APP_KEY_FILE: file }, (m) => warnings.push(m));
    expect(second.appKey).toEqual(first.appKey);
    expect(warnings).toHaveLength(1);
  });

  it('takes PUBLIC_URL as an origin: the trailing slash dropped, a port kept', () => {
    expect(loadConfig({ APP_KEY: KEY, PUBLIC_URL: 'https://Licenses.Example.com/' }, quiet).publicUrl).toBe(
      'https://licenses.example.com',
    );
    expect(loadConfig({ APP_KEY: KEY, PUBLIC_URL: 'http://10.0.0.5:8080' }, quiet).publicUrl).toBe(
      'http://10.0.0.5:8080',
    );
  });

  it('TRUST_PROXY: false, a hop count, addresses and ranges, or true (with one warning)', () => {
    const trust = (value: string) => {
      const warnings: string[] = [];
      const config = loadConfig({ APP_KEY: KEY, TRUST_PROXY: value }, (msg) => warnings.push(msg));
      return { trust: config.trustProxy, warnings };
    };
    expect(loadConfig({ APP_KEY: KEY }, quiet).trustProxy).toBe(false);
    expect(trust('false')).toEqual({ trust: false, warnings: [] });
    expect(trust('0')).toEqual({ trust: false, warnings: [] });
    expect(trust('1')).toEqual({ trust: 1, warnings: [] });
    expect(trust('2')).toEqual({ trust: 2, warnings: [] });
    expect(trust('172.28.0.10')).toEqual({ trust: ['172.28.0.10'], warnings: [] });
    expect(trust(' 10.0.0.0/8, fd00::/8 ,loopback,uniquelocal,linklocal')).toEqual({
      trust: ['10.0.0.0/8', 'fd00::/8', 'loopback', 'uniquelocal', 'linklocal'],
      warnings: [],
    });
    expect(trust('true')).toEqual({ trust: true, warnings: [TRUST_PROXY_TRUE_WARNING] });
  });

  it.each([
    'perhaps',
    '10.0.0.1/0',
    '10.0.0.0/33',
    '10.0.0',
    '1.2.3.4,',
    'fd00::/129',
    '1.2.3.4/8/8',
    '-1',
    '99999',
    'localhost',
  ])('TRUST_PROXY=%s stops start-up with one line naming the key', (value) => {
    expect(() => loadConfig({ APP_KEY: KEY, TRUST_PROXY: value }, quiet)).toThrow(ConfigError);
    try {
      loadConfig({ APP_KEY: KEY, TRUST_PROXY: value }, quiet);
    } catch (error) {
      expect((error as Error).message).toMatch(/^TRUST_PROXY: invalid value /);
      expect((error as Error).message).not.toContain('\n');
    }
  });

  it('.env.example lists every key the service reads, with its default', () => {
    const example = readFileSync('.env.example', 'utf8');
    const defaults = new EnvironmentVariables() as unknown as Record<
      string,
      string | number | boolean | undefined
    >;
    for (const key of [...Object.keys(defaults), 'REDIS_URL', 'APP_KEY', 'PUBLIC_URL']) {
      const line = example.split('\n').find((l) => l.startsWith(`${key}=`));
      expect({ key, listed: line !== undefined }).toEqual({ key, listed: true });
      if (defaults[key] !== undefined)
        expect({ key, value: line?.slice(key.length + 1) }).toEqual({ key, value: String(defaults[key]) });
    }
  });
});
