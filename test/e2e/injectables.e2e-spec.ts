import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createDecipheriv,
  createHash,
  createPublicKey,
  KeyObject,
  randomBytes,
  scryptSync,
  verify,
} from 'node:crypto';
import { makeAccount, makeApiKey, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const MAX_UPLOAD_BYTES = 65536;
const STREAM = '/api/v1/injectable/stream';
const HAS_PAID = '/api/v1/project/has-paid';

/** An injectable as returned by create, get, list and update — exactly these keys. */
const INJECTABLE_KEYS = [
  'id',
  'project_id',
  'slug',
  'title',
  'type',
  'mode',
  'target_path',
  'validate_endpoint',
  'content',
  'encrypted_content',
  'file_path',
  'content_hash',
  'signature',
  'is_active',
  'only_if_paid',
  'meta',
  'created_at',
  'updated_at',
].sort();
/** Items of the management list: every key of an injectable but the payload, plus the payload's size. */
const LIST_ITEM_KEYS = [
  ...INJECTABLE_KEYS.filter((k) => k !== 'content' && k !== 'encrypted_content'),
  'content_size',
].sort();
/** Stream items carry exactly these. */
const STREAM_ITEM_KEYS = [
  'slug',
  'type',
  'mode',
  'encrypted_content',
  'file_path',
  'target_path',
  'signature',
  'meta',
].sort();
/** `include=injectables` items carry exactly these. */
const PAID_ITEM_KEYS = [
  'id',
  'slug',
  'title',
  'type',
  'mode',
  'target_path',
  'content',
  'file_path',
  'is_active',
  'only_if_paid',
  'meta',
].sort();

/**
 * Every secret this file sends contains this marker, so the final test can prove that no response
 * ever echoed one (the random base64 payloads practically never contain it).
 */
const SECRET_MARKER = 'SeCrEtMaRk';
const newSecret = () => `${SECRET_MARKER}-${uniqueToken()}-pässwörd`;

// ---------------------------------------------------------------------------------------------
// The client side of the payload format (docs/decisions.md#injectables), with nothing but node:crypto.
// ---------------------------------------------------------------------------------------------

/** Base64 → blob, checking the encoding is canonical base64. */
function blobOf(b64: string): Buffer {
  expect(typeof b64).toBe('string');
  expect(b64).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
  const blob = Buffer.from(b64, 'base64');
  expect(blob.toString('base64')).toBe(b64);
  return blob;
}

/** Blob = "LG1" ‖ salt(16) ‖ iv(12) ‖ tag(16) ‖ ciphertext; AES-256-GCM under scrypt(secret, salt). Throws on a wrong secret. */
function decrypt(b64: string, secret: string): Buffer {
  const blob = blobOf(b64);
  expect(blob.length).toBeGreaterThanOrEqual(3 + 16 + 12 + 16);
  expect(blob.subarray(0, 3).toString('latin1')).toBe('LG1');
  const salt = blob.subarray(3, 19);
  const iv = blob.subarray(19, 31);
  const tag = blob.subarray(31, 47);
  const ciphertext = blob.subarray(47);
  const key = scryptSync(Buffer.from(secret, 'utf8'), salt, 32, { N: 16384, r: 8, p: 1 });
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
}

const sha256Hex = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface SigningKeys {
  pem: KeyObject;
  raw: KeyObject;
}

/** The SPKI DER prefix of an Ed25519 public key: the raw 32 bytes follow it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function signingKeysFrom(data: Record<string, unknown>): SigningKeys {
  expect(Object.keys(data).sort()).toEqual(['algorithm', 'public_key', 'public_key_pem']);
  expect(data.algorithm).toBe('Ed25519');
  expect(String(data.public_key_pem)).toMatch(
    /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n?$/,
  );
  const raw = Buffer.from(String(data.public_key), 'base64');
  expect(raw.length).toBe(32);
  const pem = createPublicKey(String(data.public_key_pem));
  expect(pem.asymmetricKeyType).toBe('ed25519');
  const fromRaw = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, raw]),
    format: 'der',
    type: 'spki',
  });
  return { pem, raw: fromRaw };
}

/** The exact UTF-8 text the signature covers. */
function signedText(
  projectId: number,
  f: { slug: string; type: string; mode: string; target_path: string | null },
  contentHash: string,
): string {
  return `LG1-SIG\n${projectId}\n${f.slug}\n${f.type}\n${f.mode}\n${f.target_path ?? ''}\n${contentHash}`;
}

function verifies(keys: SigningKeys, text: string, signatureB64: string): { pem: boolean; raw: boolean } {
  const signature = Buffer.from(signatureB64, 'base64');
  return {
    pem: verify(null, Buffer.from(text, 'utf8'), keys.pem, signature),
    raw: verify(null, Buffer.from(text, 'utf8'), keys.raw, signature),
  };
}

interface Expected {
  secret: string;
  /** The plaintext payload (content string or file bytes) */
  payload: string | Buffer;
  /** The original file name, for type file */
  fileName?: string;
}

/**
 * Decrypts and verifies an injectable (full record, stream item or paid item) exactly as a client
 * would: payload and file name decrypt with the secret, the hash is SHA-256 of the blob, and the
 * Ed25519 signature verifies with both forms of the project's public key.
 */
function expectSealed(keys: SigningKeys, projectId: number, item: Record<string, any>, expected: Expected) {
  const b64 = (item.encrypted_content ?? item.content) as string;
  if ('content' in item && 'encrypted_content' in item) expect(item.content).toBe(item.encrypted_content);
  const payload = decrypt(b64, expected.secret);
  const want =
    typeof expected.payload === 'string' ? Buffer.from(expected.payload, 'utf8') : expected.payload;
  expect(payload.equals(want)).toBe(true);
  const hash = sha256Hex(blobOf(b64));
  if ('content_hash' in item) expect(item.content_hash).toBe(hash);
  if (expected.fileName !== undefined) {
    expect(typeof item.file_path).toBe('string');
    expect(decrypt(item.file_path, expected.secret).toString('utf8')).toBe(expected.fileName);
  } else {
    expect(item.file_path).toBeNull();
  }
  if ('signature' in item) {
    expect(verifies(keys, signedText(projectId, item as any, hash), item.signature)).toEqual({
      pem: true,
      raw: true,
    });
  }
  return hash;
}

/** A wrong secret fails the GCM tag check. */
function expectWrongSecret(b64: string, secret: string) {
  expect(() => decrypt(b64, secret)).toThrow();
}

function expectInjectableShape(i: Record<string, unknown>) {
  expect(Object.keys(i).sort()).toEqual(INJECTABLE_KEYS);
  expect(typeof i.id).toBe('number');
  expect(typeof i.project_id).toBe('number');
  expect(typeof i.slug).toBe('string');
  expect(typeof i.type).toBe('string');
  expect(typeof i.mode).toBe('string');
  expect(typeof i.is_active).toBe('boolean');
  expect(typeof i.only_if_paid).toBe('boolean');
  expect(i.content_hash).toMatch(/^[0-9a-f]{64}$/);
  expect(typeof i.signature).toBe('string');
  expect(Buffer.from(String(i.signature), 'base64').length).toBe(64);
  expect(i.meta).not.toBeNull();
  expect(typeof i.meta).toBe('object');
  expect(Array.isArray(i.meta)).toBe(false);
  expect(i.content).toBe(i.encrypted_content);
  expect(i.created_at).toMatch(TIMESTAMP);
  expect(i.updated_at).toMatch(TIMESTAMP);
}

/** An injectable as the list shows it: without the payload; content_size is the plain payload's byte length (the blob less 47 bytes). */
function asListed(full: Record<string, any>): Record<string, any> {
  const { content, encrypted_content: _encrypted, ...rest } = full;
  return { ...rest, content_size: blobOf(content).length - 47 };
}

/** Walks a value and returns every object key named `secret`. */
function secretKeys(value: unknown, path = '$'): string[] {
  if (value === null || typeof value !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k.toLowerCase() === 'secret') out.push(`${path}.${k}`);
    out.push(...secretKeys(v, `${path}.${k}`));
  }
  return out;
}

describe('injectables', () => {
  let t: TestApp;
  /** Every response this file received, for the final no-secret check. */
  const seen: Array<{ status: number; text: string; body: any }> = [];

  beforeAll(async () => {
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
    });
  });
  afterAll(async () => t.close());

  const track = <R extends ReturnType<ReturnType<TestApp['http']>['get']>>(req: R): R => {
    req.on('response', (res: { status: number; text: string; body: unknown }) => {
      seen.push({ status: res.status, text: res.text, body: res.body });
    });
    return req;
  };

  const api = (key?: string) => {
    const wrap = (req: ReturnType<ReturnType<typeof t.http>['get']>) => {
      req.set('Accept', 'application/json');
      if (key !== undefined) req.set('X-API-KEY', key);
      return track(req);
    };
    return {
      get: (path: string) => wrap(t.http().get(`/api/v1${path}`)),
      post: (path: string, body?: unknown) => {
        const req = wrap(t.http().post(`/api/v1${path}`));
        return body === undefined ? req : req.send(body as object);
      },
      patch: (path: string, body: unknown) => wrap(t.http().patch(`/api/v1${path}`)).send(body as object),
      put: (path: string, body: unknown) => wrap(t.http().put(`/api/v1${path}`)).send(body as object),
      delete: (path: string) => wrap(t.http().delete(`/api/v1${path}`)),
      /** Multipart/form-data: every field as text (supertest .field()), and an optional file (.attach()). */
      form: (
        method: 'post' | 'put',
        path: string,
        fields: Record<string, string>,
        file?: { buffer: Buffer; name: string },
      ) => {
        const req = wrap(t.http()[method](`/api/v1${path}`));
        for (const [name, value] of Object.entries(fields)) req.field(name, value);
        if (file) req.attach('file', file.buffer, file.name);
        return req;
      },
    };
  };

  /** GET /injectable/stream with the license in X-LICENSE-KEY (when given). */
  const stream = (license?: string, query: Record<string, string | number> = {}) => {
    const req = track(t.http().get(STREAM).set('Accept', 'application/json'));
    if (license !== undefined) req.set('X-LICENSE-KEY', license);
    if (Object.keys(query).length > 0) req.query(query);
    return req;
  };

  /** POST /project/has-paid?include=injectables&action=check_project with the license (one with allow_configs: docs/decisions.md#runtime-checks). */
  const hasPaid = (license: string) =>
    track(
      t
        .http()
        .post(`${HAS_PAID}?include=injectables&action=check_project`)
        .set('Accept', 'application/json')
        .set('X-LICENSE-KEY', license),
    );

  interface Ctx {
    user: Awaited<ReturnType<typeof makeAccount>>['user'];
    key: string;
    project: Record<string, any>;
    pid: number;
    base: string;
    keys: SigningKeys;
  }

  /** An owner with a global key and a project (has_paid false unless overridden), plus its signing keys. */
  async function setup(project: Record<string, unknown> = {}): Promise<Ctx> {
    const { user, key } = await makeAccount(t.app);
    const p = await makeProject(t, key, project);
    const keys = signingKeysFrom(expectSuccess(await api(key).get(`/project/${p.id}/signing-key`)));
    return { user, key, project: p, pid: p.id, base: `/project/${p.id}/injectables`, keys };
  }

  /** POST a JSON injectable and return `data` (201 asserted). */
  async function create(ctx: Ctx, overrides: Record<string, unknown> = {}) {
    const body = {
      slug: `inj-${uniqueToken()}`,
      type: 'snippet',
      mode: 'inject',
      secret: newSecret(),
      content: `<b>hello ${uniqueToken()}</b>`,
      ...overrides,
    };
    const res = await api(ctx.key).post(ctx.base, body);
    const data = expectSuccess(res, 201);
    expectInjectableShape(data);
    return { data, body: body as Record<string, any> };
  }

  const get = async (ctx: Ctx, id: number) => expectSuccess(await api(ctx.key).get(`${ctx.base}/${id}`));
  const listAll = async (ctx: Ctx) =>
    expectSuccess(await api(ctx.key).get(`${ctx.base}?per_page=50`)).data as Array<Record<string, any>>;

  // -------------------------------------------------------------------------------------------
  describe('create', () => {
    it('creates each non-file type from JSON: exact keys, content === encrypted_content, decrypts, verifies', async () => {
      const ctx = await setup();
      const cases: Array<[string, string]> = [
        ['snippet', 'inject'],
        ['html', 'write'],
        ['script', 'replace'],
        ['style', 'append'],
        ['snippet', 'prepend'],
      ];
      for (const [type, mode] of cases) {
        const secret = newSecret();
        const content = `<${type}> héllo ☃ 𝄞\nline2\t"quoted" ${uniqueToken()}`;
        const slug = `${type}_${mode}-${uniqueToken()}`;
        const res = await api(ctx.key).post(ctx.base, {
          slug,
          title: `Title ${type}`,
          type,
          mode,
          target_path: `/var/www/${type}.txt`,
          validate_endpoint: 'https://example.com/validate',
          secret,
          content,
          only_if_paid: true,
          is_active: false,
          meta: { a: 1, nested: { b: [1, 2] } },
        });
        const data = expectSuccess(res, 201);
        expectInjectableShape(data);
        expect(data).toMatchObject({
          project_id: ctx.pid,
          slug,
          title: `Title ${type}`,
          type,
          mode,
          target_path: `/var/www/${type}.txt`,
          validate_endpoint: 'https://example.com/validate',
          file_path: null,
          only_if_paid: true,
          is_active: false,
          meta: { a: 1, nested: { b: [1, 2] } },
        });
        expect(data.content).toBe(data.encrypted_content);
        expect(data.content).not.toContain(content);
        expectSealed(ctx.keys, ctx.pid, data, { secret, payload: content });
        expectWrongSecret(data.content, `${secret}x`);
        expect(JSON.stringify(res.body)).not.toContain(secret);
        expect(secretKeys(res.body)).toEqual([]);
        // GET returns the same record.
        expect(await get(ctx, data.id)).toEqual(data);
      }
    });

    it('applies defaults for the optional fields', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const slug = `min-${uniqueToken()}`;
      const data = expectSuccess(
        await api(ctx.key).post(ctx.base, { slug, type: 'html', mode: 'inject', secret, content: 'x' }),
        201,
      );
      expectInjectableShape(data);
      expect(data).toMatchObject({
        slug,
        title: null,
        target_path: null,
        validate_endpoint: null,
        file_path: null,
        is_active: true,
        only_if_paid: false,
        meta: {},
      });
      expectSealed(ctx.keys, ctx.pid, data, { secret, payload: 'x' });
    });

    it('creates a file injectable from multipart: content decrypts to the bytes, file_path to the file name', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const bytes = Buffer.concat([Buffer.from([0, 1, 2, 255, 254, 0]), randomBytes(3000)]);
      const slug = `file-${uniqueToken()}`;
      const res = await api(ctx.key).form(
        'post',
        ctx.base,
        {
          slug,
          title: 'A file',
          type: 'file',
          mode: 'write',
          target_path: 'assets/app.bin',
          secret,
          is_active: 'true',
          only_if_paid: 'false',
          meta: '{"version":"1.2.3","n":2}',
        },
        { buffer: bytes, name: 'app-bundle.v2.bin' },
      );
      const data = expectSuccess(res, 201);
      expectInjectableShape(data);
      expect(data).toMatchObject({
        slug,
        title: 'A file',
        type: 'file',
        mode: 'write',
        target_path: 'assets/app.bin',
        is_active: true,
        only_if_paid: false,
        meta: { version: '1.2.3', n: 2 },
      });
      expect(typeof data.file_path).toBe('string');
      expect(data.file_path).not.toContain('app-bundle');
      expectSealed(ctx.keys, ctx.pid, data, { secret, payload: bytes, fileName: 'app-bundle.v2.bin' });
      expect(JSON.stringify(res.body)).not.toContain(secret);
      expect(await get(ctx, data.id)).toEqual(data);
    });

    it('keeps a non-ASCII original file name (UTF-8) in file_path', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const name = 'résumé-☃.txt';
      const res = await api(ctx.key).form(
        'post',
        ctx.base,
        { slug: `utf8-${uniqueToken()}`, type: 'file', mode: 'write', secret },
        { buffer: Buffer.from('hi'), name },
      );
      const data = expectSuccess(res, 201);
      expect(decrypt(data.file_path, secret).toString('utf8')).toBe(name);
    });

    it('creates a non-file injectable from multipart too', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const data = expectSuccess(
        await api(ctx.key).form('post', ctx.base, {
          slug: `mp-${uniqueToken()}`,
          type: 'script',
          mode: 'append',
          secret,
          content: 'console.log("hi ☃")',
        }),
        201,
      );
      expectInjectableShape(data);
      expectSealed(ctx.keys, ctx.pid, data, { secret, payload: 'console.log("hi ☃")' });
    });

    it('reads multipart booleans true/false/1/0 and meta as a JSON string', async () => {
      const ctx = await setup();
      const cases: Array<[string, string, boolean, boolean]> = [
        ['true', 'false', true, false],
        ['false', 'true', false, true],
        ['1', '0', true, false],
        ['0', '1', false, true],
      ];
      for (const [active, paid, isActive, onlyIfPaid] of cases) {
        const res = await api(ctx.key).form('post', ctx.base, {
          slug: `b-${uniqueToken()}`,
          type: 'html',
          mode: 'inject',
          secret: newSecret(),
          content: '<i>x</i>',
          is_active: active,
          only_if_paid: paid,
          meta: JSON.stringify({ active, paid, deep: { ok: true } }),
        });
        const data = expectSuccess(res, 201);
        expect({ active, paid, is_active: data.is_active, only_if_paid: data.only_if_paid }).toEqual({
          active,
          paid,
          is_active: isActive,
          only_if_paid: onlyIfPaid,
        });
        expect(data.meta).toEqual({ active, paid, deep: { ok: true } });
      }
    });

    it('accepts meta as a JSON string in a JSON body too', async () => {
      const ctx = await setup();
      const { data } = await create(ctx, { meta: '{"k":"v"}' });
      expect(data.meta).toEqual({ k: 'v' });
    });

    it('accepts a file of exactly MAX_UPLOAD_BYTES', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const bytes = randomBytes(MAX_UPLOAD_BYTES);
      const data = expectSuccess(
        await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `max-${uniqueToken()}`, type: 'file', mode: 'write', secret },
          { buffer: bytes, name: 'max.bin' },
        ),
        201,
      );
      expectSealed(ctx.keys, ctx.pid, data, { secret, payload: bytes, fileName: 'max.bin' });
    });

    it('refuses a file larger than MAX_UPLOAD_BYTES with 413 and stores nothing', async () => {
      const ctx = await setup();
      for (const size of [MAX_UPLOAD_BYTES + 1, MAX_UPLOAD_BYTES * 3]) {
        const res = await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `big-${uniqueToken()}`, type: 'file', mode: 'write', secret: newSecret() },
          { buffer: randomBytes(size), name: 'big.bin' },
        );
        expect({ size, status: res.status }).toEqual({ size, status: 413 });
        expectError(res, 413);
      }
      expect(await listAll(ctx)).toEqual([]);
    });

    it('refuses content larger than MAX_UPLOAD_BYTES with 413 (JSON and multipart) and stores nothing', async () => {
      const ctx = await setup();
      const big = 'x'.repeat(MAX_UPLOAD_BYTES + 10);
      const json = await api(ctx.key).post(ctx.base, {
        slug: `bigjson-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        secret: newSecret(),
        content: big,
      });
      expectError(json, 413);
      const form = await api(ctx.key).form('post', ctx.base, {
        slug: `bigform-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        secret: newSecret(),
        content: big,
      });
      expect({ multipartStatus: form.status, body: form.body }).toMatchObject({ multipartStatus: 413 });
      expectError(form, 413);
      expect(await listAll(ctx)).toEqual([]);
    });

    it('refuses a multipart body of many fields, each under MAX_UPLOAD_BYTES, once it outgrows one payload: 413, stores nothing', async () => {
      const ctx = await setup();
      // Each field alone is within the limit; together they would all be held in memory.
      const fields: Record<string, string> = {
        slug: `many-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        secret: newSecret(),
        content: 'x',
      };
      for (let i = 0; i < 40; i++) fields[`pad${i}`] = 'y'.repeat(MAX_UPLOAD_BYTES - 100);
      const res = await api(ctx.key).form('post', ctx.base, fields);
      expect({ status: res.status, message: res.body.message }).toEqual({
        status: 413,
        message: `The multipart body is larger than MAX_UPLOAD_BYTES (${MAX_UPLOAD_BYTES} bytes) and 256 KiB for the other fields.`,
      });
      expectError(res, 413);
      expect(await listAll(ctx)).toEqual([]);
      // A payload of MAX_UPLOAD_BYTES with every other field at its longest still fits.
      const full = await api(ctx.key).form('post', ctx.base, {
        slug: `f${'x'.repeat(254)}`,
        title: 't'.repeat(255),
        target_path: 'p'.repeat(1024),
        secret: 's'.repeat(1024),
        meta: JSON.stringify({ k: 'é'.repeat(8188) }), // 16384 bytes of JSON in UTF-8, the most meta may be
        content: 'c'.repeat(MAX_UPLOAD_BYTES),
      });
      expect(full.status).toBe(201);
    });

    it('answers 422 with the named field for every invalid create, and stores nothing', async () => {
      const ctx = await setup();
      const ok = () => ({
        slug: `ok-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        secret: newSecret(),
        content: 'hello',
      });
      const jsonCases: Array<[string, Record<string, unknown>, string[]]> = [
        ['missing secret', { ...ok(), secret: undefined }, ['secret']],
        ['empty secret', { ...ok(), secret: '' }, ['secret']],
        ['invalid type', { ...ok(), type: 'binary' }, ['type']],
        ['invalid mode', { ...ok(), mode: 'overwrite' }, ['mode']],
        ['type file without a file', { ...ok(), type: 'file', content: undefined }, ['file']],
        ['non-file without content', { ...ok(), content: undefined }, ['content']],
        ['non-file with empty content', { ...ok(), content: '' }, ['content']],
        ['slug missing', { ...ok(), slug: undefined }, ['slug']],
        ['slug empty', { ...ok(), slug: '' }, ['slug']],
        ['slug with a space', { ...ok(), slug: 'bad slug' }, ['slug']],
        ['slug with a dot', { ...ok(), slug: 'a.b' }, ['slug']],
        ['slug with a slash', { ...ok(), slug: 'a/b' }, ['slug']],
        ['slug unicode', { ...ok(), slug: 'ünï' }, ['slug']],
        ['slug too long', { ...ok(), slug: 's'.repeat(256) }, ['slug']],
        ['slug not a string', { ...ok(), slug: 123 }, ['slug']],
        ['meta an array', { ...ok(), meta: [1, 2] }, ['meta']],
        ['meta a number', { ...ok(), meta: 42 }, ['meta']],
        ['meta a non-JSON string', { ...ok(), meta: 'not json' }, ['meta']],
        ['meta a JSON array string', { ...ok(), meta: '[1,2]' }, ['meta']],
        ['is_active maybe', { ...ok(), is_active: 'maybe' }, ['is_active']],
        ['only_if_paid maybe', { ...ok(), only_if_paid: 'maybe' }, ['only_if_paid']],
        ['validate_endpoint not a url', { ...ok(), validate_endpoint: 'not a url' }, ['validate_endpoint']],
      ];
      for (const [name, body, fields] of jsonCases) {
        const res = await api(ctx.key).post(ctx.base, JSON.parse(JSON.stringify(body)));
        expect({ name, status: res.status, errors: res.body.errors }).toMatchObject({ name, status: 422 });
        expectError(res, 422, fields);
      }
      const formCases: Array<
        [string, Record<string, string>, { buffer: Buffer; name: string } | undefined, string[]]
      > = [
        [
          'multipart missing secret',
          { slug: `f-${uniqueToken()}`, type: 'file', mode: 'write' },
          { buffer: Buffer.from('x'), name: 'x.txt' },
          ['secret'],
        ],
        [
          'multipart type file without a file',
          { slug: `f-${uniqueToken()}`, type: 'file', mode: 'write', secret: newSecret() },
          undefined,
          ['file'],
        ],
        [
          'multipart invalid type',
          { slug: `f-${uniqueToken()}`, type: 'exe', mode: 'write', secret: newSecret() },
          { buffer: Buffer.from('x'), name: 'x.txt' },
          ['type'],
        ],
        [
          'multipart invalid mode',
          { slug: `f-${uniqueToken()}`, type: 'file', mode: 'delete', secret: newSecret() },
          { buffer: Buffer.from('x'), name: 'x.txt' },
          ['mode'],
        ],
        [
          'multipart is_active maybe',
          {
            slug: `f-${uniqueToken()}`,
            type: 'html',
            mode: 'inject',
            secret: newSecret(),
            content: 'c',
            is_active: 'maybe',
          },
          undefined,
          ['is_active'],
        ],
        [
          'multipart only_if_paid yes',
          {
            slug: `f-${uniqueToken()}`,
            type: 'html',
            mode: 'inject',
            secret: newSecret(),
            content: 'c',
            only_if_paid: 'yes',
          },
          undefined,
          ['only_if_paid'],
        ],
        [
          'multipart meta not JSON',
          {
            slug: `f-${uniqueToken()}`,
            type: 'html',
            mode: 'inject',
            secret: newSecret(),
            content: 'c',
            meta: '{oops',
          },
          undefined,
          ['meta'],
        ],
        [
          'multipart meta a JSON number',
          {
            slug: `f-${uniqueToken()}`,
            type: 'html',
            mode: 'inject',
            secret: newSecret(),
            content: 'c',
            meta: '42',
          },
          undefined,
          ['meta'],
        ],
        [
          'multipart slug not alpha_dash',
          { slug: 'no way', type: 'html', mode: 'inject', secret: newSecret(), content: 'c' },
          undefined,
          ['slug'],
        ],
        [
          'multipart non-file without content',
          { slug: `f-${uniqueToken()}`, type: 'html', mode: 'inject', secret: newSecret() },
          undefined,
          ['content'],
        ],
      ];
      for (const [name, fields, file, errorFields] of formCases) {
        const res = await api(ctx.key).form('post', ctx.base, fields, file);
        expect({ name, status: res.status, errors: res.body.errors }).toMatchObject({ name, status: 422 });
        expectError(res, 422, errorFields);
      }
      expect(await listAll(ctx)).toEqual([]);
    });

    it('refuses content and file together (exactly one of them)', async () => {
      const ctx = await setup();
      for (const type of ['file', 'snippet']) {
        const res = await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `both-${uniqueToken()}`, type, mode: 'write', secret: newSecret(), content: 'also' },
          { buffer: Buffer.from('x'), name: 'x.txt' },
        );
        expect({ type, status: res.status }).toEqual({ type, status: 422 });
        const body = expectError(res, 422);
        expect(Object.keys(body.errors ?? {}).some((k) => k === 'content' || k === 'file')).toBe(true);
      }
      expect(await listAll(ctx)).toEqual([]);
    });

    it('slug is unique within the project, and the same slug is fine in another project', async () => {
      const ctx = await setup();
      const slug = `dup-${uniqueToken()}`;
      await create(ctx, { slug });
      const res = await api(ctx.key).post(ctx.base, {
        slug,
        type: 'snippet',
        mode: 'inject',
        secret: newSecret(),
        content: 'again',
      });
      expectError(res, 422, ['slug']);
      expect(res.body.errors.slug[0]).toBe('The slug has already been taken.');
      // multipart as well
      expectError(
        await api(ctx.key).form(
          'post',
          ctx.base,
          { slug, type: 'file', mode: 'write', secret: newSecret() },
          { buffer: Buffer.from('x'), name: 'x' },
        ),
        422,
        ['slug'],
      );
      expect(await listAll(ctx)).toHaveLength(1);

      // Another project of the same owner, and a project of another owner.
      const sameOwner = await makeProject(t, ctx.key);
      expectSuccess(
        await api(ctx.key).post(`/project/${sameOwner.id}/injectables`, {
          slug,
          type: 'snippet',
          mode: 'inject',
          secret: newSecret(),
          content: 'b',
        }),
        201,
      );
      const other = await setup();
      const { data } = await create(other, { slug });
      expect(data.slug).toBe(slug);
    });

    it('ignores unknown fields', async () => {
      const ctx = await setup();
      const { data } = await create(ctx, {
        id: 999999,
        project_id: 424242,
        content_hash: 'f'.repeat(64),
        signature: 'forged',
        bogus: 'x',
        encrypted_content: 'AAAA',
      });
      expect(data.id).not.toBe(999999);
      expect(data.project_id).toBe(ctx.pid);
      expect(data.content_hash).not.toBe('f'.repeat(64));
      expect(data.signature).not.toBe('forged');
      expect(data).not.toHaveProperty('bogus');
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('PUT', () => {
    it('racing edits of signed fields: the stored row is signed as it stands, whoever wins', async () => {
      const ctx = await setup();
      const { data: before } = await create(ctx);
      const secret2 = newSecret();
      const edits = [
        { slug: `renamed-${uniqueToken()}` },
        { content: 'raced ☃', secret: secret2 },
        { target_path: '/raced' },
        { mode: 'replace' },
      ];
      for (const res of await Promise.all(
        edits.map((body) => api(ctx.key).put(`${ctx.base}/${before.id}`, body)),
      ))
        expectSuccess(res);
      const after = await get(ctx, before.id);
      // Every edit landed, and the signature covers the slug, target path, mode and content together.
      expect(after).toMatchObject({ slug: edits[0].slug, target_path: '/raced', mode: 'replace' });
      expectSealed(ctx.keys, ctx.pid, after, { secret: secret2, payload: 'raced ☃' });
    });

    it('slug, type or mode sent as null is 422 naming each, and the injectable stays as it was', async () => {
      const ctx = await setup();
      const { data: before } = await create(ctx);
      const res = await api(ctx.key).put(`${ctx.base}/${before.id}`, {
        slug: null,
        type: null,
        mode: null,
        title: 'Not applied',
      });
      expectError(res, 422, ['slug', 'type', 'mode']);
      expect(await get(ctx, before.id)).toEqual(before);
      // content null with a secret: there is nothing to encrypt (it was a 500).
      const content = await api(ctx.key).put(`${ctx.base}/${before.id}`, {
        content: null,
        secret: newSecret(),
      });
      expect({ status: content.status, errors: content.body.errors }).toEqual({
        status: 422,
        errors: { content: ['The content field cannot be null.'] },
      });
      expect(await get(ctx, before.id)).toEqual(before);
    });

    it('title-only update (JSON and multipart) keeps content, hash and signature; 200 with the injectable', async () => {
      const ctx = await setup();
      const { data: before, body } = await create(ctx, { title: 'Old', target_path: '/a' });
      const res = await api(ctx.key).put(`${ctx.base}/${before.id}`, { title: 'New' });
      const after = expectSuccess(res, 200);
      expectInjectableShape(after);
      const { title: _t1, updated_at: _u1, ...restBefore } = before;
      const { title, updated_at: _u2, ...restAfter } = after;
      expect(title).toBe('New');
      expect(restAfter).toEqual(restBefore);
      expectSealed(ctx.keys, ctx.pid, after, { secret: body.secret, payload: body.content });
      expect(await get(ctx, before.id)).toEqual(after);

      const viaForm = expectSuccess(
        await api(ctx.key).form('put', `${ctx.base}/${before.id}`, {
          title: 'Newer',
          is_active: '0',
          only_if_paid: '1',
          meta: '{"x":[1]}',
        }),
      );
      expect(viaForm).toMatchObject({
        title: 'Newer',
        is_active: false,
        only_if_paid: true,
        meta: { x: [1] },
      });
      expect(viaForm.content).toBe(before.content);
      expect(viaForm.content_hash).toBe(before.content_hash);
      expect(viaForm.signature).toBe(before.signature);
      expect(viaForm.file_path).toBeNull();
    });

    it('new content + a new secret re-encrypts, re-hashes and re-signs; only the new secret decrypts it', async () => {
      const ctx = await setup();
      const { data: before, body } = await create(ctx);
      const secret2 = newSecret();
      const res = await api(ctx.key).put(`${ctx.base}/${before.id}`, {
        content: 'brand new ☃',
        secret: secret2,
      });
      const after = expectSuccess(res);
      expectInjectableShape(after);
      expect(after.content).not.toBe(before.content);
      expect(after.content_hash).not.toBe(before.content_hash);
      expect(after.signature).not.toBe(before.signature);
      expectSealed(ctx.keys, ctx.pid, after, { secret: secret2, payload: 'brand new ☃' });
      expectWrongSecret(after.content, body.secret);
      expect(JSON.stringify(res.body)).not.toContain(secret2);

      // multipart, with a third secret
      const secret3 = newSecret();
      const again = expectSuccess(
        await api(ctx.key).form('put', `${ctx.base}/${before.id}`, { content: 'third', secret: secret3 }),
      );
      expectSealed(ctx.keys, ctx.pid, again, { secret: secret3, payload: 'third' });
      expectWrongSecret(again.content, secret2);
      expect(again.content_hash).not.toBe(after.content_hash);
      expect(await get(ctx, before.id)).toEqual(again);
    });

    it('re-sends of the same content with the same secret still produce a fresh blob that verifies', async () => {
      const ctx = await setup();
      const { data: before, body } = await create(ctx);
      const after = expectSuccess(
        await api(ctx.key).put(`${ctx.base}/${before.id}`, { content: body.content, secret: body.secret }),
      );
      expectSealed(ctx.keys, ctx.pid, after, { secret: body.secret, payload: body.content });
    });

    it('changing slug, mode, target_path or type re-signs over the new fields, payload untouched', async () => {
      const ctx = await setup();
      const { data: before, body } = await create(ctx, { target_path: '/old/path' });
      let previous = before;
      const changes: Array<Record<string, unknown>> = [
        { slug: `renamed-${uniqueToken()}` },
        { mode: 'replace' },
        { target_path: '/new/path' },
        { target_path: null },
        { type: 'html' },
        { slug: `again-${uniqueToken()}`, mode: 'prepend', target_path: 'rel/p', type: 'style' },
      ];
      for (const change of changes) {
        const after = expectSuccess(await api(ctx.key).put(`${ctx.base}/${before.id}`, change));
        expect(after).toMatchObject(change);
        expect(after.content).toBe(before.content);
        expect(after.content_hash).toBe(before.content_hash);
        expect({ change, resigned: after.signature !== previous.signature }).toEqual({
          change,
          resigned: true,
        });
        expectSealed(ctx.keys, ctx.pid, after, { secret: body.secret, payload: body.content });
        // The old signature does not cover the new fields.
        expect(
          verifies(ctx.keys, signedText(ctx.pid, after, after.content_hash), previous.signature),
        ).toEqual({ pem: false, raw: false });
        previous = after;
      }
      // multipart slug change
      const slug = `form-${uniqueToken()}`;
      const viaForm = expectSuccess(
        await api(ctx.key).form('put', `${ctx.base}/${before.id}`, { slug, mode: 'write' }),
      );
      expect(viaForm).toMatchObject({ slug, mode: 'write' });
      expectSealed(ctx.keys, ctx.pid, viaForm, { secret: body.secret, payload: body.content });
    });

    it('422s: content without secret, secret alone, switch to file without a file, invalid type/mode, taken slug — and nothing changes', async () => {
      const ctx = await setup();
      const { data: before } = await create(ctx);
      const { data: sibling } = await create(ctx);
      const path = `${ctx.base}/${before.id}`;
      const jsonCases: Array<[string, Record<string, unknown>, string[]]> = [
        ['content without secret', { content: 'new' }, ['secret']],
        ['content with empty secret', { content: 'new', secret: '' }, ['secret']],
        ['secret alone', { secret: newSecret() }, ['secret']],
        ['secret with only metadata', { secret: newSecret(), title: 'x' }, ['secret']],
        ['switch to file without a file', { type: 'file' }, ['file']],
        ['switch to file with secret, without a file', { type: 'file', secret: newSecret() }, ['file']],
        ['invalid type', { type: 'binary' }, ['type']],
        ['invalid mode', { mode: 'overwrite' }, ['mode']],
        ['slug taken', { slug: sibling.slug }, ['slug']],
        ['slug not alpha_dash', { slug: 'has space' }, ['slug']],
        ['is_active maybe', { is_active: 'maybe' }, ['is_active']],
        ['meta not an object', { meta: [1] }, ['meta']],
        ['validate_endpoint not a url', { validate_endpoint: 'nope' }, ['validate_endpoint']],
      ];
      for (const [name, change, fields] of jsonCases) {
        const res = await api(ctx.key).put(path, change);
        expect({ name, status: res.status, errors: res.body.errors }).toMatchObject({ name, status: 422 });
        expectError(res, 422, fields);
        expect({ name, record: await get(ctx, before.id) }).toEqual({ name, record: before });
      }
      const formCases: Array<
        [string, Record<string, string>, { buffer: Buffer; name: string } | undefined, string[]]
      > = [
        ['multipart content without secret', { content: 'new', title: 'changed' }, undefined, ['secret']],
        ['multipart secret alone', { secret: newSecret() }, undefined, ['secret']],
        [
          'multipart switch to file without a file',
          { type: 'file', secret: newSecret(), title: 'changed' },
          undefined,
          ['file'],
        ],
        [
          'multipart switch to file with a file but no secret',
          { type: 'file' },
          { buffer: Buffer.from('f'), name: 'f.txt' },
          ['secret'],
        ],
        ['multipart invalid type', { type: 'nope', title: 'changed' }, undefined, ['type']],
        ['multipart invalid mode', { mode: 'nope', title: 'changed' }, undefined, ['mode']],
        ['multipart is_active maybe', { is_active: 'maybe' }, undefined, ['is_active']],
      ];
      for (const [name, fields, file, errorFields] of formCases) {
        const res = await api(ctx.key).form('put', path, fields, file);
        expect({ name, status: res.status, errors: res.body.errors }).toMatchObject({ name, status: 422 });
        expectError(res, 422, errorFields);
        expect({ name, record: await get(ctx, before.id) }).toEqual({ name, record: before });
      }
    });

    it('switching to type file with a file and a secret works and sets file_path', async () => {
      const ctx = await setup();
      const { data: before, body } = await create(ctx);
      const secret2 = newSecret();
      const bytes = randomBytes(1234);
      const after = expectSuccess(
        await api(ctx.key).form(
          'put',
          `${ctx.base}/${before.id}`,
          { type: 'file', secret: secret2 },
          { buffer: bytes, name: 'switched.dat' },
        ),
      );
      expectInjectableShape(after);
      expect(after.type).toBe('file');
      expect(after.content_hash).not.toBe(before.content_hash);
      expect(after.signature).not.toBe(before.signature);
      expectSealed(ctx.keys, ctx.pid, after, { secret: secret2, payload: bytes, fileName: 'switched.dat' });
      expectWrongSecret(after.content, body.secret);
      expect(await get(ctx, before.id)).toEqual(after);
    });

    it('a file injectable: metadata-only update keeps the file; a new file + secret replaces it', async () => {
      const ctx = await setup();
      const secret = newSecret();
      const bytes = randomBytes(500);
      const before = expectSuccess(
        await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `f-${uniqueToken()}`, type: 'file', mode: 'write', secret },
          { buffer: bytes, name: 'orig.bin' },
        ),
        201,
      );

      const meta = expectSuccess(
        await api(ctx.key).form('put', `${ctx.base}/${before.id}`, {
          title: 'Meta only',
          is_active: 'false',
          meta: '{"m":true}',
        }),
      );
      expect(meta).toMatchObject({ title: 'Meta only', is_active: false, meta: { m: true }, type: 'file' });
      for (const field of ['content', 'encrypted_content', 'file_path', 'content_hash', 'signature'])
        expect(meta[field]).toBe(before[field]);
      expectSealed(ctx.keys, ctx.pid, meta, { secret, payload: bytes, fileName: 'orig.bin' });

      // JSON metadata-only update of a file injectable
      const json = expectSuccess(
        await api(ctx.key).put(`${ctx.base}/${before.id}`, { title: 'JSON meta', only_if_paid: true }),
      );
      expect(json).toMatchObject({ title: 'JSON meta', only_if_paid: true, type: 'file' });
      expect(json.file_path).toBe(before.file_path);
      expect(json.content).toBe(before.content);

      // target_path change on a file re-signs, keeps the file
      const moved = expectSuccess(
        await api(ctx.key).put(`${ctx.base}/${before.id}`, { target_path: '/srv/x.bin' }),
      );
      expect(moved.signature).not.toBe(before.signature);
      expectSealed(ctx.keys, ctx.pid, moved, { secret, payload: bytes, fileName: 'orig.bin' });

      // content on a file injectable is refused
      expectError(
        await api(ctx.key).put(`${ctx.base}/${before.id}`, { content: 'text', secret: newSecret() }),
        422,
      );

      // a new file without a secret
      expectError(
        await api(ctx.key).form(
          'put',
          `${ctx.base}/${before.id}`,
          {},
          { buffer: randomBytes(10), name: 'n.bin' },
        ),
        422,
        ['secret'],
      );
      expect(await get(ctx, before.id)).toEqual(moved);

      const secret2 = newSecret();
      const bytes2 = randomBytes(700);
      const replaced = expectSuccess(
        await api(ctx.key).form(
          'put',
          `${ctx.base}/${before.id}`,
          { secret: secret2 },
          { buffer: bytes2, name: 'second.bin' },
        ),
      );
      expect(replaced.content_hash).not.toBe(before.content_hash);
      expect(replaced.signature).not.toBe(moved.signature);
      expectSealed(ctx.keys, ctx.pid, replaced, { secret: secret2, payload: bytes2, fileName: 'second.bin' });
      expectWrongSecret(replaced.content, secret);
      expectWrongSecret(replaced.file_path, secret);

      // a replacement file larger than MAX_UPLOAD_BYTES → 413, file kept
      const big = await api(ctx.key).form(
        'put',
        `${ctx.base}/${before.id}`,
        { secret: newSecret() },
        { buffer: randomBytes(MAX_UPLOAD_BYTES + 1), name: 'big.bin' },
      );
      expectError(big, 413);
      expect(await get(ctx, before.id)).toEqual(replaced);
    });

    it('switching a file injectable back to a text type with content + secret clears file_path', async () => {
      const ctx = await setup();
      const before = expectSuccess(
        await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `f-${uniqueToken()}`, type: 'file', mode: 'write', secret: newSecret() },
          { buffer: Buffer.from('abc'), name: 'a.txt' },
        ),
        201,
      );
      const secret2 = newSecret();
      const after = expectSuccess(
        await api(ctx.key).put(`${ctx.base}/${before.id}`, {
          type: 'snippet',
          content: 'now text',
          secret: secret2,
        }),
      );
      expect(after.type).toBe('snippet');
      expectSealed(ctx.keys, ctx.pid, after, { secret: secret2, payload: 'now text' });
    });

    it('keeping its own slug is not "taken"; an empty body changes nothing', async () => {
      const ctx = await setup();
      const { data: before } = await create(ctx);
      const same = expectSuccess(await api(ctx.key).put(`${ctx.base}/${before.id}`, { slug: before.slug }));
      expect(same.slug).toBe(before.slug);
      expect(same.signature).toBe(before.signature);
      const empty = expectSuccess(await api(ctx.key).put(`${ctx.base}/${before.id}`, {}));
      const { updated_at: _a, ...a } = empty;
      const { updated_at: _b, ...b } = before;
      expect(a).toEqual(b);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('DELETE', () => {
    it('200 with data null; then 404 on every path, gone from the list, the stream and include=injectables', async () => {
      const ctx = await setup({ has_paid: true });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      const { data: keep } = await create(ctx, { only_if_paid: true });
      const { data: gone } = await create(ctx, { only_if_paid: true });
      let streamed = expectSuccess(await stream(license.uuid)).injectables.map((i: any) => i.slug);
      expect(streamed).toEqual([keep.slug, gone.slug]);
      expect(expectSuccess(await hasPaid(license.uuid)).injectables.map((i: any) => i.id)).toEqual([
        keep.id,
        gone.id,
      ]);

      const res = await api(ctx.key).delete(`${ctx.base}/${gone.id}`);
      expect(expectSuccess(res)).toBeNull();
      expect(Object.keys(res.body).sort()).toEqual(['data', 'errors', 'message', 'status']);

      expectError(await api(ctx.key).get(`${ctx.base}/${gone.id}`), 404);
      expectError(await api(ctx.key).put(`${ctx.base}/${gone.id}`, { title: 'x' }), 404);
      expectError(await api(ctx.key).delete(`${ctx.base}/${gone.id}`), 404);
      expect((await listAll(ctx)).map((i) => i.id)).toEqual([keep.id]);
      streamed = expectSuccess(await stream(license.uuid)).injectables.map((i: any) => i.slug);
      expect(streamed).toEqual([keep.slug]);
      expect(expectSuccess(await hasPaid(license.uuid)).injectables.map((i: any) => i.id)).toEqual([keep.id]);
      // The slug is free again.
      await create(ctx, { slug: gone.slug });
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('access', () => {
    it('404 for an injectable of another project, a nonexistent id, or a non-integer id', async () => {
      const ctx = await setup();
      const { data: mine } = await create(ctx);
      const otherProject = await makeProject(t, ctx.key);
      const { data: foreign } = await create({
        ...ctx,
        pid: otherProject.id,
        base: `/project/${otherProject.id}/injectables`,
      });
      for (const id of [foreign.id, 99999999, 'abc', '0', '-1', '1.5', '1e3', `${mine.id}x`, '2147483648']) {
        const path = `${ctx.base}/${id}`;
        expect({ id, status: (await api(ctx.key).get(path)).status }).toEqual({ id, status: 404 });
        expectError(await api(ctx.key).get(path), 404);
        expectError(await api(ctx.key).put(path, { title: 'x' }), 404);
        expectError(await api(ctx.key).form('put', path, { title: 'x' }), 404);
        expectError(await api(ctx.key).delete(path), 404);
      }
      // The foreign one is untouched and still readable through its own project.
      expect(
        expectSuccess(await api(ctx.key).get(`/project/${otherProject.id}/injectables/${foreign.id}`)),
      ).toEqual(foreign);
      // A nonexistent or non-integer project is 404 too.
      expectError(await api(ctx.key).get(`/project/99999999/injectables`), 404);
      expectError(await api(ctx.key).get(`/project/abc/injectables/${mine.id}`), 404);
      expectError(
        await api(ctx.key).post(`/project/99999999/injectables`, {
          slug: 'x',
          secret: newSecret(),
          content: 'x',
        }),
        404,
      );
    });

    it("401 without a key; 403 for another owner's key, a scoped key of another project, an unknown key", async () => {
      const ctx = await setup();
      const { data: mine } = await create(ctx);
      const stranger = (await makeAccount(t.app)).key;
      const sibling = await makeProject(t, ctx.key);
      // A key of the same owner, scoped to the owner's other project.
      const scopedOther = await makeApiKey(t.app, ctx.user, { project_id: sibling.id });
      const unknown = `lg_${randomBytes(32).toString('base64url')}`;

      const attempts = (key?: string) => ({
        list: () => api(key).get(ctx.base),
        get: () => api(key).get(`${ctx.base}/${mine.id}`),
        'get missing': () => api(key).get(`${ctx.base}/99999999`),
        create: () =>
          api(key).post(ctx.base, {
            slug: `x-${uniqueToken()}`,
            type: 'snippet',
            mode: 'inject',
            secret: newSecret(),
            content: 'x',
          }),
        'create multipart': () =>
          api(key).form(
            'post',
            ctx.base,
            { slug: `x-${uniqueToken()}`, type: 'file', mode: 'write', secret: newSecret() },
            { buffer: Buffer.from('x'), name: 'x' },
          ),
        put: () => api(key).put(`${ctx.base}/${mine.id}`, { title: 'hijack' }),
        'put multipart': () => api(key).form('put', `${ctx.base}/${mine.id}`, { title: 'hijack' }),
        delete: () => api(key).delete(`${ctx.base}/${mine.id}`),
      });
      for (const [who, key, status] of [
        ['no key', undefined, 401],
        ['another owner', stranger, 403],
        ['scoped to another project', scopedOther, 403],
        ['unknown key', unknown, 403],
      ] as Array<[string, string | undefined, number]>) {
        for (const [what, send] of Object.entries(attempts(key))) {
          const res = await send();
          expect({ who, what, status: res.status }).toEqual({ who, what, status });
          expectError(res, status);
        }
      }
      // A license key is not an API key.
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      expectError(await track(t.http().get(`/api/v1${ctx.base}`).set('X-LICENSE-KEY', license.uuid)), 401);
      // Nothing changed.
      expect(await listAll(ctx)).toEqual([asListed(mine)]);

      // The project's own scoped key works.
      const scopedOwn = await makeApiKey(t.app, ctx.user, { project_id: ctx.pid });
      const own = { ...ctx, key: scopedOwn };
      const { data } = await create(own);
      expect(
        expectSuccess(await api(scopedOwn).put(`${ctx.base}/${data.id}`, { title: 'scoped' })).title,
      ).toBe('scoped');
      expect(expectSuccess(await api(scopedOwn).delete(`${ctx.base}/${data.id}`))).toBeNull();
    });

    it('while the project is locked, create/put/delete → 403 and reads still work; unlock restores writes', async () => {
      const ctx = await setup();
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      const { data: mine } = await create(ctx);
      expectSuccess(await api(ctx.key).post(`/project/${ctx.pid}/lock`, { reason: 'testing' }));

      expectError(
        await api(ctx.key).post(ctx.base, {
          slug: `l-${uniqueToken()}`,
          type: 'snippet',
          mode: 'inject',
          secret: newSecret(),
          content: 'x',
        }),
        403,
      );
      expectError(
        await api(ctx.key).form(
          'post',
          ctx.base,
          { slug: `l-${uniqueToken()}`, type: 'file', mode: 'write', secret: newSecret() },
          { buffer: Buffer.from('x'), name: 'x' },
        ),
        403,
      );
      expectError(await api(ctx.key).put(`${ctx.base}/${mine.id}`, { title: 'locked' }), 403);
      expectError(
        await api(ctx.key).form('put', `${ctx.base}/${mine.id}`, { content: 'locked', secret: newSecret() }),
        403,
      );
      expectError(await api(ctx.key).delete(`${ctx.base}/${mine.id}`), 403);

      expect(await get(ctx, mine.id)).toEqual(mine);
      expect(await listAll(ctx)).toEqual([asListed(mine)]);
      // Runtime: locked → 403 "Project is locked"
      const locked = expectError(await stream(license.uuid), 403);
      expect(locked.message).toMatch(/locked/i);

      expectSuccess(await api(ctx.key).post(`/project/${ctx.pid}/unlock`));
      await create(ctx);
      expect(
        expectSuccess(await api(ctx.key).put(`${ctx.base}/${mine.id}`, { title: 'unlocked' })).title,
      ).toBe('unlocked');
      expect(expectSuccess(await stream(license.uuid)).injectables).toHaveLength(2);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('list pages carry no payload', () => {
    it('a page of large injectables stays small; each item has content_size and content_hash; the injectable itself has the payload', async () => {
      const ctx = await setup();
      const content = 'é'.repeat(30_000); // 60000 UTF-8 bytes, near this file's MAX_UPLOAD_BYTES
      const secret = newSecret();
      const made = [];
      for (let i = 0; i < 5; i++) made.push((await create(ctx, { content, secret, type: 'script' })).data);
      const res = await api(ctx.key).get(ctx.base);
      const page = expectSuccess(res);
      // Five payloads of 80 kB in base64, twice each, would be 800 kB.
      expect(res.text.length).toBeLessThan(5 * 2000);
      expect(page.data.map((i: any) => i.id)).toEqual(made.map((i) => i.id).reverse());
      for (const item of page.data) {
        expect(Object.keys(item).sort()).toEqual(LIST_ITEM_KEYS);
        expect(item.content_size).toBe(60_000);
        const full = await get(ctx, item.id);
        expect(item.content_hash).toBe(sha256Hex(blobOf(full.content)));
        expect(full.content).toBe(full.encrypted_content);
        expect(decrypt(full.content, secret).toString('utf8')).toBe(content);
      }
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('60 injectables: list (cursor, latest first) and stream walk', () => {
    let ctx: Ctx;
    let license: Record<string, any>;
    const created: Array<{
      data: Record<string, any>;
      secret: string;
      payload: string | Buffer;
      fileName?: string;
    }> = [];

    beforeAll(async () => {
      ctx = await setup();
      license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      // Sequential, so ids ascend with i; every 7th is a file.
      for (let i = 0; i < 60; i++) {
        const secret = newSecret();
        const slug = `w${String(i).padStart(2, '0')}-${uniqueToken()}`;
        if (i % 7 === 3) {
          const bytes = randomBytes(64 + i);
          const data = expectSuccess(
            await api(ctx.key).form(
              'post',
              ctx.base,
              {
                slug,
                type: 'file',
                mode: 'write',
                target_path: `files/${i}.bin`,
                secret,
                meta: JSON.stringify({ i }),
              },
              { buffer: bytes, name: `file-${i}.bin` },
            ),
            201,
          );
          created.push({ data, secret, payload: bytes, fileName: `file-${i}.bin` });
        } else {
          const content = `content #${i} ☃`;
          const { data } = await create(ctx, {
            slug,
            secret,
            content,
            type: ['snippet', 'html', 'script', 'style'][i % 4],
            mode: ['inject', 'write', 'replace', 'append', 'prepend'][i % 5],
            meta: { i },
            ...(i % 2 ? { target_path: `#el-${i}` } : {}),
          });
          created.push({ data, secret, payload: content });
        }
      }
    }, 180_000);

    it('GET /project/{id}/injectables: default 20, latest first, cursor walk; per_page max 50', async () => {
      const ids = created.map((c) => c.data.id);
      const desc = [...ids].sort((a, b) => b - a);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));

      const first = expectSuccess(await api(ctx.key).get(ctx.base));
      expect(Object.keys(first).sort()).toEqual(['data', 'next_cursor']);
      expect(first.data).toHaveLength(20);
      expect(first.data.map((i: any) => i.id)).toEqual(desc.slice(0, 20));
      for (const item of first.data) expect(Object.keys(item).sort()).toEqual(LIST_ITEM_KEYS);
      expect(first.data[0]).toEqual(asListed(created[59].data));
      expect(typeof first.next_cursor).toBe('string');

      const walked: number[] = [];
      const items: any[] = [];
      let cursor: string | null = null;
      const sizes: number[] = [];
      do {
        const page: any = expectSuccess(
          await api(ctx.key).get(
            `${ctx.base}?per_page=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          ),
        );
        sizes.push(page.data.length);
        items.push(...page.data);
        walked.push(...page.data.map((i: any) => i.id));
        cursor = page.next_cursor;
      } while (cursor);
      expect(sizes).toEqual([50, 10]);
      expect(walked).toEqual(desc);
      // Every item is the injectable without its payload, and says how many bytes the payload has.
      for (const item of items) {
        const c = created.find((x) => x.data.id === item.id)!;
        expect(item).toEqual(asListed(c.data));
        expect(item.content_size).toBe(
          typeof c.payload === 'string' ? Buffer.byteLength(c.payload, 'utf8') : c.payload.length,
        );
      }

      // default page size, second page continues where the first stopped
      const second = expectSuccess(
        await api(ctx.key).get(`${ctx.base}?cursor=${encodeURIComponent(first.next_cursor)}`),
      );
      expect(second.data.map((i: any) => i.id)).toEqual(desc.slice(20, 40));

      for (const bad of ['51', '0', '-1', 'abc', '1.5'])
        expectError(await api(ctx.key).get(`${ctx.base}?per_page=${bad}`), 422, ['per_page']);
      expectError(
        await api(ctx.key).get(`${ctx.base}?cursor=${encodeURIComponent(`${first.next_cursor}x`)}`),
        422,
        ['cursor'],
      );
      expectError(await api(ctx.key).get(`${ctx.base}?cursor=garbage`), 422, ['cursor']);
    });

    it('stream: exact keys, id order, 25/25/10 walk with has_more true,true,false, each slug once; every item decrypts and verifies', async () => {
      const pages: any[] = [];
      let cursor: string | null = null;
      do {
        const query: Record<string, string | number> = { per_page: 25 };
        if (cursor) query.cursor = cursor;
        const data: any = expectSuccess(await stream(license.uuid, query));
        expect(Object.keys(data).sort()).toEqual(['has_more', 'injectables', 'next_cursor']);
        pages.push(data);
        cursor = data.next_cursor;
        expect(pages.length).toBeLessThanOrEqual(3);
      } while (cursor);
      expect(pages.map((p) => p.injectables.length)).toEqual([25, 25, 10]);
      expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
      expect(typeof pages[0].next_cursor).toBe('string');
      expect(typeof pages[1].next_cursor).toBe('string');
      expect(pages[2].next_cursor).toBeNull();

      const items = pages.flatMap((p) => p.injectables);
      const slugs = items.map((i: any) => i.slug);
      expect(new Set(slugs).size).toBe(60);
      expect(slugs).toEqual(created.map((c) => c.data.slug));
      items.forEach((item: any, n: number) => {
        expect(Object.keys(item).sort()).toEqual(STREAM_ITEM_KEYS);
        const c = created[n];
        expect(item).toMatchObject({
          slug: c.data.slug,
          type: c.data.type,
          mode: c.data.mode,
          encrypted_content: c.data.content,
          file_path: c.data.file_path,
          target_path: c.data.target_path,
          signature: c.data.signature,
          meta: c.data.meta,
        });
        expect(sha256Hex(blobOf(item.encrypted_content))).toBe(c.data.content_hash);
        expectSealed(ctx.keys, ctx.pid, item, { secret: c.secret, payload: c.payload, fileName: c.fileName });
      });

      // default per_page is 50
      const def = expectSuccess(await stream(license.uuid));
      expect(def.injectables).toHaveLength(50);
      expect(def.has_more).toBe(true);
      const rest = expectSuccess(await stream(license.uuid, { cursor: def.next_cursor }));
      expect(rest.injectables.map((i: any) => i.slug)).toEqual(created.slice(50).map((c) => c.data.slug));
      expect(rest.has_more).toBe(false);
      expect(rest.next_cursor).toBeNull();
    });

    it('stream: per_page 51 (and other bad values) → 422; a tampered or foreign cursor → 422', async () => {
      for (const bad of ['51', '0', '-3', 'abc', '2.5']) {
        const res = await stream(license.uuid, { per_page: bad });
        expect({ bad, status: res.status }).toEqual({ bad, status: 422 });
        expectError(res, 422, ['per_page']);
      }
      expectSuccess(await stream(license.uuid, { per_page: 50 }));
      const page = expectSuccess(await stream(license.uuid, { per_page: 1 }));
      expectError(await stream(license.uuid, { cursor: `${page.next_cursor}A` }), 422, ['cursor']);
      // a cursor of the management list is not a stream cursor
      const listPage = expectSuccess(await api(ctx.key).get(`${ctx.base}?per_page=1`));
      expectError(await stream(license.uuid, { cursor: listPage.next_cursor }), 422, ['cursor']);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('stream', () => {
    it('streams only active injectables; only_if_paid ones only once the project is paid, at the very next call', async () => {
      const ctx = await setup({ has_paid: false });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      const a = await create(ctx, { slug: `a-${uniqueToken()}` });
      const paid = await create(ctx, { slug: `paid-${uniqueToken()}`, only_if_paid: true });
      const inactive = await create(ctx, { slug: `inactive-${uniqueToken()}`, is_active: false });
      const inactivePaid = await create(ctx, {
        slug: `inpaid-${uniqueToken()}`,
        is_active: false,
        only_if_paid: true,
      });
      const slugsOf = async () => {
        const data = expectSuccess(await stream(license.uuid));
        expect(Object.keys(data).sort()).toEqual(['has_more', 'injectables', 'next_cursor']);
        expect(data.has_more).toBe(false);
        expect(data.next_cursor).toBeNull();
        for (const item of data.injectables) expect(Object.keys(item).sort()).toEqual(STREAM_ITEM_KEYS);
        return data.injectables.map((i: any) => i.slug);
      };
      expect(await slugsOf()).toEqual([a.data.slug]);

      expectSuccess(await api(ctx.key).patch(`/project/${ctx.pid}`, { has_paid: true }));
      expect(await slugsOf()).toEqual([a.data.slug, paid.data.slug]);

      // verify the paid one as delivered
      const item = expectSuccess(await stream(license.uuid)).injectables[1];
      expectSealed(ctx.keys, ctx.pid, item, { secret: paid.body.secret, payload: paid.body.content });

      // activating shows at once; deactivating hides at once
      expectSuccess(await api(ctx.key).put(`${ctx.base}/${inactive.data.id}`, { is_active: true }));
      expect(await slugsOf()).toEqual([a.data.slug, paid.data.slug, inactive.data.slug]);
      expectSuccess(await api(ctx.key).form('put', `${ctx.base}/${a.data.id}`, { is_active: '0' }));
      expect(await slugsOf()).toEqual([paid.data.slug, inactive.data.slug]);

      expectSuccess(await api(ctx.key).patch(`/project/${ctx.pid}`, { has_paid: false }));
      expect(await slugsOf()).toEqual([inactive.data.slug]);
      void inactivePaid;
    });

    it('serves a new payload, a new injectable and a deletion at the very next call, on every page', async () => {
      const ctx = await setup({ has_paid: true });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      const first = await create(ctx, { slug: `first-${uniqueToken()}` });
      const second = await create(ctx, { slug: `second-${uniqueToken()}` });
      const page = async (query: Record<string, string | number> = {}) =>
        expectSuccess(await stream(license.uuid, query));
      const one = await page({ per_page: 1 });
      expect(one.injectables.map((i: any) => i.slug)).toEqual([first.data.slug]);
      // Read twice: the second answer may come from the cache.
      expect((await page({ per_page: 1, cursor: one.next_cursor })).injectables[0].encrypted_content).toBe(
        second.data.content,
      );

      const secret = newSecret();
      const updated = expectSuccess(
        await api(ctx.key).put(`${ctx.base}/${second.data.id}`, { content: 'changed', secret }),
      );
      const next = await page({ per_page: 1, cursor: one.next_cursor });
      expect(next.injectables[0].encrypted_content).toBe(updated.content);
      expect(next.injectables[0].encrypted_content).not.toBe(second.data.content);

      const third = await create(ctx, { slug: `third-${uniqueToken()}` });
      expect((await page()).injectables.map((i: any) => i.slug)).toEqual([
        first.data.slug,
        second.data.slug,
        third.data.slug,
      ]);
      expectSuccess(await api(ctx.key).delete(`${ctx.base}/${first.data.id}`));
      expect((await page()).injectables.map((i: any) => i.slug)).toEqual([second.data.slug, third.data.slug]);
    });

    it("a license streams only its own project's injectables; the `license` query parameter works too", async () => {
      const one = await setup();
      const two = await setup();
      const l1 = await makeLicense(t, one.key, one.pid);
      const l2 = await makeLicense(t, two.key, two.pid);
      const i1 = await create(one);
      const i2 = await create(two);
      expect(expectSuccess(await stream(l1.uuid)).injectables.map((i: any) => i.slug)).toEqual([
        i1.data.slug,
      ]);
      expect(expectSuccess(await stream(l2.uuid)).injectables.map((i: any) => i.slug)).toEqual([
        i2.data.slug,
      ]);
      expect(
        expectSuccess(
          await track(t.http().get(`${STREAM}?license=${l1.uuid}`).set('Accept', 'application/json')),
        ).injectables.map((i: any) => i.slug),
      ).toEqual([i1.data.slug]);
      // empty project
      const three = await setup();
      const l3 = await makeLicense(t, three.key, three.pid);
      expect(expectSuccess(await stream(l3.uuid))).toEqual({
        injectables: [],
        next_cursor: null,
        has_more: false,
      });
    });

    it('refusals: no key 401, API key only 401, unknown 403, revoked 403, locked project 403', async () => {
      const ctx = await setup({ default_redirect_url: 'https://example.com/pay' });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      await create(ctx);
      expectSuccess(await stream(license.uuid));

      expectError(await stream(), 401);
      expectError(await stream(''), 401);
      expectError(
        await track(t.http().get(STREAM).set('Accept', 'application/json').set('X-API-KEY', ctx.key)),
        401,
      );
      expectError(await stream('00000000-0000-4000-8000-000000000000'), 403);
      expectError(await stream('not-a-license'), 403);

      const revoked = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      expectSuccess(await stream(revoked.uuid));
      expectSuccess(await api(ctx.key).post(`/project/${ctx.pid}/licenses/${revoked.id}/revoke`));
      const r = expectError(await stream(revoked.uuid), 403);
      expect(r.message).toMatch(/revoked/i);
      expectSuccess(await stream(license.uuid));

      expectSuccess(await api(ctx.key).post(`/project/${ctx.pid}/lock`, {}));
      const l = expectError(await stream(license.uuid), 403);
      expect(l.message).toMatch(/locked/i);
      expectSuccess(await api(ctx.key).post(`/project/${ctx.pid}/unlock`));
      expectSuccess(await stream(license.uuid));
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('POST /project/has-paid?include=injectables', () => {
    it('lists exactly the active only_if_paid injectables while has_paid is true; no injectables key while false', async () => {
      const ctx = await setup({ has_paid: true });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      await create(ctx, { slug: `free-${uniqueToken()}` });
      const paid = await create(ctx, {
        slug: `paid-${uniqueToken()}`,
        only_if_paid: true,
        title: 'Paid',
        target_path: '#x',
        meta: { p: 1 },
      });
      await create(ctx, { slug: `off-${uniqueToken()}`, only_if_paid: true, is_active: false });
      const fileSecret = newSecret();
      const fileBytes = randomBytes(99);
      const paidFile = expectSuccess(
        await api(ctx.key).form(
          'post',
          ctx.base,
          {
            slug: `pfile-${uniqueToken()}`,
            type: 'file',
            mode: 'write',
            secret: fileSecret,
            only_if_paid: '1',
          },
          { buffer: fileBytes, name: 'paid.bin' },
        ),
        201,
      );

      const data = expectSuccess(await hasPaid(license.uuid));
      expect(data.has_paid).toBe(true);
      expect(data.injectables).toHaveLength(2);
      for (const item of data.injectables) expect(Object.keys(item).sort()).toEqual(PAID_ITEM_KEYS);
      const pick = (i: Record<string, any>) => Object.fromEntries(PAID_ITEM_KEYS.map((k) => [k, i[k]]));
      expect(data.injectables).toEqual([pick(paid.data), pick(paidFile)]);
      expectSealed(ctx.keys, ctx.pid, data.injectables[0], {
        secret: paid.body.secret,
        payload: paid.body.content,
      });
      expectSealed(ctx.keys, ctx.pid, data.injectables[1], {
        secret: fileSecret,
        payload: fileBytes,
        fileName: 'paid.bin',
      });

      // without include: no injectables key
      const plain = expectSuccess(
        await track(
          t
            .http()
            .post(`${HAS_PAID}?action=check_project`)
            .set('Accept', 'application/json')
            .set('X-LICENSE-KEY', license.uuid),
        ),
      );
      expect(plain).not.toHaveProperty('injectables');

      // a change shows at the very next call
      expectSuccess(await api(ctx.key).put(`${ctx.base}/${paid.data.id}`, { is_active: false }));
      expect(expectSuccess(await hasPaid(license.uuid)).injectables.map((i: any) => i.id)).toEqual([
        paidFile.id,
      ]);

      expectSuccess(await api(ctx.key).patch(`/project/${ctx.pid}`, { has_paid: false }));
      const unpaid = expectSuccess(await hasPaid(license.uuid));
      expect(unpaid.has_paid).toBe(false);
      expect(unpaid).not.toHaveProperty('injectables');

      expectSuccess(await api(ctx.key).patch(`/project/${ctx.pid}`, { has_paid: true }));
      expect(expectSuccess(await hasPaid(license.uuid)).injectables.map((i: any) => i.id)).toEqual([
        paidFile.id,
      ]);
    });

    it('has_paid true with no paid-only injectables → an empty list', async () => {
      const ctx = await setup({ has_paid: true });
      const license = await makeLicense(t, ctx.key, ctx.pid, { allow_configs: true });
      await create(ctx);
      const data = expectSuccess(await hasPaid(license.uuid));
      expect(data.has_paid).toBe(true);
      expect(data.injectables).toEqual([]);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('secrets (never stored, never returned)', () => {
    it('no response of this file ever contained a secret or a `secret` key in its data', () => {
      expect(seen.length).toBeGreaterThan(100);
      const leaks = seen
        .filter((r) => r.text?.includes(SECRET_MARKER))
        .map((r) => `${r.status}: ${r.text.slice(0, 200)}`);
      expect(leaks).toEqual([]);
      const keyed = seen.filter((r) => r.body?.status === 'success').flatMap((r) => secretKeys(r.body.data));
      expect(keyed).toEqual([]);
    });

    it('no stored row holds a secret', async () => {
      const rows: unknown[] = await t.dataSource.query('SELECT * FROM injectables');
      expect(rows.length).toBeGreaterThan(60);
      expect(JSON.stringify(rows)).not.toContain(SECRET_MARKER);
    });
  });
});
