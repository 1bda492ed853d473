import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { createHash, KeyObject, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createClient,
  FetchInit,
  FetchLike,
  fileStore,
  localStorageStore,
  memoryStore,
  normalizeDomain,
  openOfflineToken,
  importPublicKey,
} from '../src/index.js';
import { caught, projectKeys } from './helpers.js';

/*
 * The SDK's side of signed answers and offline tokens, against a fake service that signs with
 * node:crypto exactly as the real one does (the real one: test/integration/offline.test.ts).
 */

const BASE = 'https://lg.example.com/api/v1';
const LICENSE = '0b5f7c1e-1111-4222-8333-444455556666';
const PROJECT = 7;
const sha256 = (v: string | Buffer) => createHash('sha256').update(v).digest('hex');
const isoSecond = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

interface Reply {
  status?: number;
  data?: unknown;
  message?: string;
  /** change the body after signing */
  tamper?: (body: string) => string;
  /** no signature headers */
  unsigned?: boolean;
  /** sign with this key instead */
  key?: KeyObject;
  /** sign for this nonce instead of the request's */
  nonce?: string;
  /** the date to sign (ms) */
  date?: number;
  headers?: Record<string, string>;
}

/** A fake service: answers each call from `reply`, signed over what the call sent. */
function service(privateKey: KeyObject, reply: (init: FetchInit, url: string, n: number) => Reply | Error) {
  const calls: Array<{ url: string; init: FetchInit }> = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    const r = reply(init, url, calls.length - 1);
    if (r instanceof Error) throw r;
    const status = r.status ?? 200;
    const body = JSON.stringify(
      status < 300
        ? { status: 'success', message: 'Success', data: r.data ?? null, errors: null }
        : { status: 'error', message: r.message ?? 'Refused.', data: r.data ?? null, errors: null },
    );
    const headers = new Map<string, string>(
      Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const nonce = init.headers['X-Service-Nonce'];
    if (nonce && !r.unsigned) {
      const date = isoSecond(r.date ?? Date.now());
      const target = new URL(url);
      const text = `LG1-ANSWER\n${date}\n${r.nonce ?? nonce}\n${init.method} ${target.pathname}${target.search}\n${sha256(init.headers['X-LICENSE-KEY'])}\n${init.headers['X-Service-Domain'] ?? ''}\n${sha256(body)}`;
      headers.set('x-service-date', date);
      headers.set(
        'x-service-signature',
        `v1,${sign(null, Buffer.from(text), r.key ?? privateKey).toString('base64')}`,
      );
    }
    const sent = Buffer.from(r.tamper ? r.tamper(body) : body);
    return {
      status,
      headers: { get: (name: string) => headers.get(name.toLowerCase()) ?? null },
      text: async () => sent.toString('utf8'),
      arrayBuffer: async () => sent.buffer.slice(sent.byteOffset, sent.byteOffset + sent.length),
    };
  };
  return { fetch, calls };
}

/** An offline token as the service makes it. */
function token(privateKey: KeyObject, overrides: Record<string, unknown> = {}): string {
  const iat = Math.floor(Date.now() / 1000);
  const payload = {
    project_id: PROJECT,
    license_id: 3,
    key_sha256: sha256(LICENSE),
    domain: 'shop.example.com',
    has_paid: true,
    is_test_license: false,
    iat,
    exp: iat + 3600,
    ...overrides,
  };
  const part = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `LG1.${part}.${sign(null, Buffer.from(`LG1-TOKEN\n${part}`), privateKey).toString('base64url')}`;
}

const keys = projectKeys();
const signed = (reply: Parameters<typeof service>[1], extra: Record<string, unknown> = {}) => {
  const s = service(keys.privateKey, reply);
  return {
    ...s,
    client: createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      domain: 'shop.example.com',
      publicKey: keys.raw,
      projectId: PROJECT,
      fetch: s.fetch,
      ...extra,
    }),
  };
};

afterEach(() => {
  jest.restoreAllMocks();
});

describe('signed answers', () => {
  it('sends a fresh nonce per call and accepts answers whose signature verifies (PEM or raw key)', async () => {
    const { client, calls } = signed(() => ({ data: { has_paid: true, is_test_license: false } }));
    expect((await client.hasPaid()).hasPaid).toBe(true);
    expect((await client.hasPaid({ includeInjectables: true })).hasPaid).toBe(true);
    const nonces = calls.map((c) => c.init.headers['X-Service-Nonce']);
    for (const n of nonces) expect(n).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(nonces).size).toBe(2);
    const pem = service(keys.privateKey, () => ({ data: { has_paid: false, redirect_url: 'https://pay' } }));
    const byPem = createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      publicKey: keys.pem,
      projectId: String(PROJECT),
      fetch: pem.fetch,
    });
    expect(await byPem.hasPaid({ checkProject: true })).toMatchObject({
      hasPaid: false,
      redirectUrl: 'https://pay',
    });
  });

  it('refuses with code bad_signature: an altered body, no signature, another key, another nonce, a date out of skew', async () => {
    const other = projectKeys();
    const cases: Array<[string, Reply]> = [
      [
        'altered body',
        { data: { has_paid: false }, tamper: (b) => b.replace('"has_paid":false', '"has_paid":true') },
      ],
      ['unsigned', { data: { has_paid: true }, unsigned: true }],
      ['another key', { data: { has_paid: true }, key: other.privateKey }],
      ['another nonce', { data: { has_paid: true }, nonce: 'AAAAAAAAAAAAAAAAAAAAAA' }],
      ['stale date', { data: { has_paid: true }, date: Date.now() - 310_000 }],
      ['future date', { data: { has_paid: true }, date: Date.now() + 310_000 }],
      [
        'signed refusal altered',
        {
          status: 403,
          message: 'This license has been revoked.',
          tamper: (b) => b.replace('revoked', 'REVOKED'),
        },
      ],
    ];
    for (const [what, reply] of cases) {
      const err = await caught(signed(() => reply).client.hasPaid());
      expect({ what, code: err.code }).toEqual({ what, code: 'bad_signature' });
      expect(err.message).toMatch(/^LicenseGate's answer \(HTTP \d+\) was refused: /);
    }
    // Within the skew it is accepted; maxSkewSeconds moves the bound.
    expect(
      (await signed(() => ({ data: { has_paid: true }, date: Date.now() - 200_000 })).client.hasPaid())
        .hasPaid,
    ).toBe(true);
    expect(
      (
        await caught(
          signed(() => ({ data: { has_paid: true }, date: Date.now() - 200_000 }), {
            maxSkewSeconds: 60,
          }).client.hasPaid(),
        )
      ).code,
    ).toBe('bad_signature');
  });

  it("a signed refusal is the service's own error; the stream is verified too", async () => {
    const refused = await caught(
      signed(() => ({
        status: 403,
        message: 'This license has been revoked.',
        data: { redirect_url: 'https://pay' },
      })).client.hasPaid(),
    );
    expect(refused).toMatchObject({
      status: 403,
      code: 'http',
      message: 'This license has been revoked.',
      redirectUrl: 'https://pay',
    });
    const { client } = signed((init, url) =>
      url.includes('/injectable/stream')
        ? {
            data: { injectables: [], next_cursor: null, has_more: false },
            tamper: (b) => b.replace('[]', '[{}]'),
          }
        : {},
    );
    expect((await caught(client.streamInjectables()[Symbol.asyncIterator]().next())).code).toBe(
      'bad_signature',
    );
  });

  it('5xx answers are not verified: they are failures either way', async () => {
    const err = await caught(
      signed(() => ({
        status: 503,
        message: 'The database is unavailable.',
        unsigned: true,
      })).client.hasPaid(),
    );
    expect(err).toMatchObject({ status: 503, code: 'http', isRetryable: true });
  });

  it('needs projectId with publicKey, and publicKey with offline', () => {
    expect(() => createClient({ baseUrl: BASE, licenseKey: LICENSE, publicKey: keys.raw })).toThrow(
      'projectId',
    );
    expect(() => createClient({ baseUrl: BASE, licenseKey: LICENSE, offline: true })).toThrow(
      'offline mode needs publicKey',
    );
    expect(() => createClient({ baseUrl: BASE, licenseKey: LICENSE, timeoutMs: 0 })).toThrow('timeoutMs');
  });

  it('times out after timeoutMs with code timeout', async () => {
    const hang: FetchLike = () => new Promise(() => undefined);
    const err = await caught(
      createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch: hang, timeoutMs: 50 }).hasPaid(),
    );
    expect(err).toMatchObject({ status: 0, code: 'timeout', isRetryable: true });
    expect(err.message).toBe(`LicenseGate at ${BASE} did not answer within 50 ms.`);
  });
});

describe('offline mode', () => {
  const paid = (t?: string) => ({ data: { has_paid: true, token: t, is_test_license: false } });

  it('asks for a token, keeps it, and answers from it while the service is unreachable (network error, timeout, 5xx)', async () => {
    const t1 = token(keys.privateKey);
    let mode: 'up' | 'down' | 'hang' | '502' = 'up';
    const s = service(keys.privateKey, () =>
      mode === 'up'
        ? paid(t1)
        : mode === '502'
          ? { status: 502, unsigned: true }
          : new TypeError('fetch failed'),
    );
    const hang: FetchLike = (url, init) =>
      mode === 'hang' ? new Promise(() => undefined) : s.fetch(url, init);
    const client = createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      domain: 'https://Shop.Example.com/x',
      publicKey: keys.raw,
      projectId: PROJECT,
      offline: true,
      fetch: hang,
      timeoutMs: 100,
    });
    expect(await client.hasPaid()).toEqual({
      hasPaid: true,
      isTestLicense: false,
      redirectUrl: null,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
    expect(s.calls[0].url).toBe(`${BASE}/project/has-paid?include=token`);
    const exp = JSON.parse(Buffer.from(t1.split('.')[1], 'base64url').toString()).exp;
    for (const m of ['down', 'hang', '502'] as const) {
      mode = m;
      expect({ m, result: await client.hasPaid() }).toEqual({
        m,
        result: {
          hasPaid: true,
          isTestLicense: false,
          redirectUrl: null,
          injectables: [],
          offline: true,
          expiresAt: new Date(exp * 1000),
          graceUntil: null,
        },
      });
    }
    // Only for the domain the token was issued for.
    mode = 'down';
    expect((await caught(client.hasPaid({ domain: 'other.example.com' }))).code).toBe('unreachable');
    expect((await caught(client.hasPaid({ checkProject: true }))).code).toBe('unreachable');
  });

  it('fails closed once the token has expired, and forgets it', async () => {
    const store = memoryStore();
    let up = true;
    const { fetch } = service(keys.privateKey, () =>
      up ? paid(token(keys.privateKey)) : new TypeError('fetch failed'),
    );
    const client = createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      domain: 'shop.example.com',
      publicKey: keys.raw,
      projectId: PROJECT,
      offline: { store },
      fetch,
    });
    await client.hasPaid();
    up = false;
    expect((await client.hasPaid()).offline).toBe(true);
    const later = Date.now() + 3601_000;
    jest.spyOn(Date, 'now').mockReturnValue(later);
    const err = await caught(client.hasPaid());
    expect(err).toMatchObject({ status: 0, code: 'unreachable' });
    jest.restoreAllMocks();
    // Forgotten: even with the clock back, nothing is answered offline.
    expect((await caught(client.hasPaid())).code).toBe('unreachable');
  });

  it('a refusal (401, 403, 429) or a verified unpaid answer deletes the token', async () => {
    for (const refusal of [
      { status: 401 },
      { status: 403 },
      { status: 429, headers: { 'Retry-After': '5' } },
      { status: 403, unsigned: true },
      { data: { has_paid: false, redirect_url: null } },
    ] as Reply[]) {
      let step = 0;
      const { fetch } = service(
        keys.privateKey,
        () => [paid(token(keys.privateKey)), refusal][step++] ?? new TypeError('fetch failed'),
      );
      const client = createClient({
        baseUrl: BASE,
        licenseKey: LICENSE,
        domain: 'shop.example.com',
        publicKey: keys.raw,
        projectId: PROJECT,
        offline: true,
        fetch,
      });
      await client.hasPaid();
      if (refusal.status) {
        const err = await caught(client.hasPaid());
        expect(err.code).toBe(refusal.unsigned ? 'bad_signature' : 'http');
      } else {
        expect((await client.hasPaid()).hasPaid).toBe(false);
      }
      expect({ refusal, code: (await caught(client.hasPaid())).code }).toEqual({
        refusal,
        code: 'unreachable',
      });
    }
  });

  it('keeps only tokens that verify and fit: this project, this key, this domain, unexpired; the newest wins', async () => {
    const other = projectKeys();
    const older = token(keys.privateKey, {
      iat: Math.floor(Date.now() / 1000) - 100,
      exp: Math.floor(Date.now() / 1000) + 7200,
    });
    for (const bad of [
      token(other.privateKey),
      token(keys.privateKey, { project_id: PROJECT + 1 }),
      token(keys.privateKey, { key_sha256: sha256('another key') }),
      token(keys.privateKey, { domain: 'other.example.com' }),
      token(keys.privateKey, { exp: Math.floor(Date.now() / 1000) - 1 }),
      'LG1.e30.AAAA',
      'not a token',
    ]) {
      const store = memoryStore();
      let step = 0;
      const { fetch } = service(keys.privateKey, () => [paid(bad)][step++] ?? new TypeError('fetch failed'));
      const client = createClient({
        baseUrl: BASE,
        licenseKey: LICENSE,
        domain: 'shop.example.com',
        publicKey: keys.raw,
        projectId: PROJECT,
        offline: { store },
        fetch,
      });
      await client.hasPaid();
      expect({ bad, code: (await caught(client.hasPaid())).code }).toEqual({ bad, code: 'unreachable' });
    }
    // An older token arriving after a newer one does not replace it.
    const newer = token(keys.privateKey, { exp: Math.floor(Date.now() / 1000) + 9000 });
    let step = 0;
    const { fetch } = service(
      keys.privateKey,
      () => [paid(newer), paid(older)][step++] ?? new TypeError('fetch failed'),
    );
    const client = createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      domain: 'shop.example.com',
      publicKey: keys.raw,
      projectId: PROJECT,
      offline: true,
      fetch,
    });
    await client.hasPaid();
    await client.hasPaid();
    expect((await client.hasPaid()).expiresAt?.getTime()).toBe(
      JSON.parse(Buffer.from(newer.split('.')[1], 'base64url').toString()).exp * 1000,
    );
  });

  it('stores: memory, a Storage, a file that survives a new client', async () => {
    const items = new Map<string, string>();
    const storage = {
      getItem: (k: string) => items.get(k) ?? null,
      setItem: (k: string, v: string) => void items.set(k, v),
      removeItem: (k: string) => void items.delete(k),
    };
    const ls = localStorageStore(storage);
    void ls.set('a', 't');
    expect([...items.keys()]).toEqual(['licensegate:token:a']);
    expect(ls.get('a')).toBe('t');
    void ls.delete('a');
    expect(items.size).toBe(0);
    expect(() => localStorageStore()).toThrow('no localStorage');

    const dir = mkdtempSync(join(tmpdir(), 'lg-sdk-'));
    try {
      const path = join(dir, 'tokens.json');
      let up = true;
      const { fetch } = service(keys.privateKey, () =>
        up ? paid(token(keys.privateKey)) : new TypeError('fetch failed'),
      );
      const options = {
        baseUrl: BASE,
        licenseKey: LICENSE,
        domain: 'shop.example.com',
        publicKey: keys.raw,
        projectId: PROJECT,
        fetch,
      };
      await createClient({ ...options, offline: { store: fileStore(path) } }).hasPaid();
      expect(Object.keys(JSON.parse(readFileSync(path, 'utf8')))).toHaveLength(1);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      up = false;
      // A restarted process (a new client, a new store on the same file) still answers offline.
      expect(
        (await createClient({ ...options, offline: { store: fileStore(path) } }).hasPaid()).offline,
      ).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('normalizeDomain and openOfflineToken', async () => {
    expect(normalizeDomain('https://Shop.Example.COM:8443/a?b')).toBe('shop.example.com');
    expect(normalizeDomain('shop.example.com.')).toBe('shop.example.com');
    expect(normalizeDomain('bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeDomain('')).toBeNull();
    const key = await importPublicKey(keys.raw);
    expect(await openOfflineToken(token(keys.privateKey, { domain: null }), key)).toMatchObject({
      project_id: PROJECT,
      domain: null,
      has_paid: true,
    });
    expect(await openOfflineToken(token(projectKeys().privateKey), key)).toBeNull();
  });
});
