import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import {
  contentHash,
  createClient,
  decrypt,
  decryptFileName,
  decryptText,
  FetchLike,
  LicenseGateError,
  PaidInjectable,
  StreamInjectable,
  verify,
} from '../../sdk/src/index.js';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

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
const REDIRECT = 'https://pay.example.com/renew';

async function caught(p: Promise<unknown>): Promise<LicenseGateError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(LicenseGateError);
    return err as LicenseGateError;
  }
  throw new Error('expected a LicenseGateError');
}

describe('@licensegate/sdk against the running service', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    base = `${t.url}/api/v1`;
  });
  afterAll(async () => t.close());

  const api = (key: string) => ({
    get: (path: string) =>
      t.http().get(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key),
    post: (path: string, body: object = {}) =>
      t.http().post(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key).send(body),
  });

  interface Seeded {
    secret: string;
    payload: string | Buffer;
    fileName?: string;
  }

  /** An owner, a project, its signing key and a license; `seeds` maps slug → what was sealed. */
  async function setup(project: Record<string, unknown> = {}, license: Record<string, unknown> = {}) {
    const { key } = await makeAccount(t.app);
    const p = await makeProject(t, key, { default_redirect_url: REDIRECT, ...project });
    const signingKey = expectSuccess(await api(key).get(`/project/${p.id}/signing-key`));
    const l = await makeLicense(t, key, p.id, license);
    const seeds = new Map<string, Seeded>();
    const create = async (body: Record<string, unknown>) => {
      const secret = `s-${uniqueToken()}-pässwörd`;
      const full = {
        slug: `i-${uniqueToken()}`,
        type: 'snippet',
        mode: 'inject',
        content: `<b>hello ${uniqueToken()} ☃</b>`,
        secret,
        ...body,
      };
      const data = expectSuccess(await api(key).post(`/project/${p.id}/injectables`, full), 201);
      seeds.set(data.slug, { secret: full.secret, payload: full.content });
      return data;
    };
    const createFile = async (fields: Record<string, string>, bytes: Buffer, name: string) => {
      const secret = `f-${uniqueToken()}`;
      const req = t
        .http()
        .post(`/api/v1/project/${p.id}/injectables`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', key);
      for (const [k, v] of Object.entries({
        slug: `file-${uniqueToken()}`,
        type: 'file',
        mode: 'write',
        secret,
        ...fields,
      }))
        req.field(k, v);
      const data = expectSuccess(await req.attach('file', bytes, name), 201);
      seeds.set(data.slug, { secret, payload: bytes, fileName: name });
      return data;
    };
    return { key, project: p, signingKey, license: l, seeds, create, createFile };
  }

  /** Decrypts and checks an item against what was sealed. */
  async function expectOpens(item: PaidInjectable | StreamInjectable, seed: Seeded | undefined) {
    expect(seed).toBeDefined();
    const { secret, payload, fileName } = seed!;
    if (typeof payload === 'string') expect(await decryptText(item, secret)).toBe(payload);
    else expect(Buffer.from(await decrypt(item, secret)).equals(payload)).toBe(true);
    expect(await decryptFileName(item, secret)).toBe(fileName ?? null);
  }

  it('hasPaid with a domain: paid domain, unpaid domain (redirectUrl), bare-origin base URL', async () => {
    const s = await setup({ has_paid: false });
    const paid = await makeDomain(t, s.key, s.project.id, { has_paid: true });
    const unpaid = await makeDomain(t, s.key, s.project.id, { has_paid: false });

    const client = createClient({ baseUrl: base, licenseKey: s.license.uuid, domain: paid.domain });
    expect(await client.hasPaid()).toEqual({
      hasPaid: true,
      isTestLicense: false,
      redirectUrl: null,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
    // a subdomain of a registered domain, given per call
    expect((await client.hasPaid({ domain: `shop.${paid.domain}` })).hasPaid).toBe(true);

    const viaOrigin = createClient({ baseUrl: t.url, licenseKey: s.license.uuid, domain: unpaid.domain });
    expect(viaOrigin.baseUrl).toBe(base);
    expect(await viaOrigin.hasPaid()).toEqual({
      hasPaid: false,
      isTestLicense: false,
      redirectUrl: s.project.default_redirect_url,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
    expect(s.project.default_redirect_url).toBe(REDIRECT);

    // unregistered domain → 403 with the redirect; no domain at all → 400
    const foreign = await caught(client.hasPaid({ domain: `nope-${uniqueToken()}.example.org` }));
    expect(foreign).toMatchObject({ status: 403, redirectUrl: REDIRECT });
    expect(foreign.message).toMatch(/not registered/i);
    const none = await caught(createClient({ baseUrl: base, licenseKey: s.license.uuid }).hasPaid());
    expect(none.status).toBe(400);
  });

  it('hasPaid with checkProject + includeInjectables: the paid-only items, decrypted and verified with the project key', async () => {
    // allow_configs: payloads from a project-level check without a calling domain (docs/decisions.md#runtime-checks).
    const s = await setup({ has_paid: true }, { allow_configs: true });
    const p1 = await s.create({
      only_if_paid: true,
      type: 'html',
      mode: 'replace',
      target_path: '#paywall',
      title: 'Paid HTML',
      meta: { v: 2 },
    });
    const p2 = await s.create({ only_if_paid: true, type: 'script', mode: 'append' });
    const p3 = await s.createFile(
      { only_if_paid: 'true', target_path: 'assets/pro.bin' },
      Buffer.concat([Buffer.from([0, 255, 0]), randomBytes(700)]),
      'pro-bündle.bin',
    );
    await s.create({ only_if_paid: false });
    await s.create({ only_if_paid: true, is_active: false });

    const client = createClient({ baseUrl: `${base}/`, licenseKey: s.license.uuid });
    const res = await client.hasPaid({ checkProject: true, includeInjectables: true });
    expect(res.hasPaid).toBe(true);
    expect(res.isTestLicense).toBe(false);
    expect(res.redirectUrl).toBeNull();
    expect(res.injectables.map((i) => i.slug)).toEqual([p1.slug, p2.slug, p3.slug]);
    for (const item of res.injectables) {
      // raw fields as the API sends them
      expect(Object.keys(item).sort()).toEqual(PAID_ITEM_KEYS);
      await expectOpens(item, s.seeds.get(item.slug));
      // has-paid items carry no signature: verify cannot pass on them alone
      expect(await verify(item, s.signingKey.public_key, s.project.id)).toBe(false);
    }
    expect(res.injectables[0]).toMatchObject({
      title: 'Paid HTML',
      target_path: '#paywall',
      meta: { v: 2 },
      only_if_paid: true,
      is_active: true,
    });

    const signed = await client.withSignatures(res.injectables);
    for (const item of signed) {
      expect(typeof item.signature).toBe('string');
      expect(await contentHash(item)).toBe([p1, p2, p3].find((p) => p.slug === item.slug)!.content_hash);
      expect(await verify(item, s.signingKey.public_key, s.project.id)).toBe(true);
      expect(await verify(item, s.signingKey.public_key_pem, s.project.id)).toBe(true);
      expect(await verify(item, s.signingKey, s.project.id)).toBe(true);
      expect(await verify(item, s.signingKey.public_key, s.project.id + 1)).toBe(false);
      expect(await verify({ ...item, target_path: 'elsewhere' }, s.signingKey.public_key, s.project.id)).toBe(
        false,
      );
    }
    // another project's key does not verify
    const other = await setup();
    expect(await verify(signed[0], other.signingKey.public_key, s.project.id)).toBe(false);
    // the full management records verify too
    for (const rec of [p1, p2, p3])
      expect(await verify(rec, s.signingKey.public_key_pem, s.project.id)).toBe(true);

    // without include: no injectables; unpaid project: none, with the redirect
    expect((await client.hasPaid({ checkProject: true })).injectables).toEqual([]);
    expectSuccess(
      await t
        .http()
        .patch(`/api/v1/project/${s.project.id}`)
        .set('Accept', 'application/json')
        .set('X-API-KEY', s.key)
        .send({ has_paid: false }),
    );
    expect(await client.hasPaid({ checkProject: true, includeInjectables: true })).toEqual({
      hasPaid: false,
      isTestLicense: false,
      redirectUrl: REDIRECT,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
  });

  it('streamInjectables over 60 items with perPage 25 yields each once, in id order, in 3 requests; all decrypt and verify', async () => {
    const s = await setup({ has_paid: true });
    const created: Array<Record<string, any>> = [];
    for (let i = 0; i < 60; i++) {
      if (i % 13 === 5) {
        created.push(
          await s.createFile(
            {
              slug: `w${String(i).padStart(2, '0')}-${uniqueToken()}`,
              ...(i % 2 ? { only_if_paid: '1' } : {}),
            },
            randomBytes(32 + i),
            `file-${i}.bin`,
          ),
        );
      } else {
        created.push(
          await s.create({
            slug: `w${String(i).padStart(2, '0')}-${uniqueToken()}`,
            type: ['snippet', 'html', 'script', 'style'][i % 4],
            mode: ['inject', 'write', 'replace', 'append', 'prepend'][i % 5],
            only_if_paid: i % 3 === 0,
            ...(i % 2 ? { target_path: `#el-${i}` } : {}),
          }),
        );
      }
    }

    const urls: string[] = [];
    const counting: FetchLike = (url, init) => {
      urls.push(url);
      return fetch(url, init);
    };
    const client = createClient({ baseUrl: base, licenseKey: s.license.uuid, fetch: counting });
    const items: StreamInjectable[] = [];
    for await (const item of client.streamInjectables({ perPage: 25 })) items.push(item);

    expect(urls).toHaveLength(3);
    expect(urls[0]).toBe(`${base}/injectable/stream?per_page=25`);
    expect(urls[1]).toMatch(/\?per_page=25&cursor=.+/);
    expect(items).toHaveLength(60);
    expect(items.map((i) => i.slug)).toEqual(created.map((c) => c.slug));
    expect(new Set(items.map((i) => i.slug)).size).toBe(60);
    for (const [n, item] of items.entries()) {
      expect(Object.keys(item).sort()).toEqual(STREAM_ITEM_KEYS);
      expect(await contentHash(item)).toBe(created[n].content_hash);
      expect(await verify(item, s.signingKey.public_key, s.project.id)).toBe(true);
      await expectOpens(item, s.seeds.get(item.slug));
    }

    // default page size: still all 60, in 2 requests
    urls.length = 0;
    let count = 0;
    for await (const _ of client.streamInjectables()) count++;
    expect(count).toBe(60);
    expect(urls).toHaveLength(2);
  }, 120_000);

  it('a revoked license → LicenseGateError 403 with redirectUrl = the project default_redirect_url (hasPaid and stream)', async () => {
    const s = await setup({ has_paid: true });
    const client = createClient({ baseUrl: base, licenseKey: s.license.uuid });
    expect((await client.hasPaid({ checkProject: true })).hasPaid).toBe(true);
    expectSuccess(await api(s.key).post(`/project/${s.project.id}/licenses/${s.license.id}/revoke`));

    const err = await caught(client.hasPaid({ checkProject: true }));
    expect(err).toMatchObject({
      name: 'LicenseGateError',
      status: 403,
      redirectUrl: s.project.default_redirect_url,
      retryAfter: null,
      errors: null,
      isRefusal: true,
    });
    expect(err.message).toMatch(/revoked/i);
    expect(err.requestId).toEqual(expect.any(String));

    const streamErr = await caught(
      (async () => {
        for await (const _ of client.streamInjectables()) void _;
      })(),
    );
    expect(streamErr).toMatchObject({ status: 403 });
    expect(streamErr.message).toMatch(/revoked/i);

    // an unknown license → 403 as well
    const unknown = await caught(
      createClient({ baseUrl: base, licenseKey: '00000000-0000-4000-8000-000000000000' }).hasPaid({
        checkProject: true,
      }),
    );
    expect(unknown.status).toBe(403);
  });

  it('a daily limit → LicenseGateError 429 with retryAfter > 0 (seconds to midnight UTC)', async () => {
    const s = await setup({ has_paid: true }, { max_usage_per_day: 2 });
    const client = createClient({ baseUrl: base, licenseKey: s.license.uuid });
    await client.hasPaid({ checkProject: true });
    await client.hasPaid({ checkProject: true });
    const err = await caught(client.hasPaid({ checkProject: true }));
    expect(err.status).toBe(429);
    expect(err.message).toMatch(/daily limit/i);
    expect(err.retryAfter).toBeGreaterThan(0);
    expect(err.retryAfter).toBeLessThanOrEqual(86_400);
    expect(err.isRetryable).toBe(true);
  });

  it("deactivate frees the slot of the client's domain (or the one given), answers { deactivated }, and refuses like the service", async () => {
    const s = await setup({ has_paid: true }, { max_domains: 1 });
    const first = await makeDomain(t, s.key, s.project.id, { has_paid: true });
    const second = await makeDomain(t, s.key, s.project.id, { has_paid: true });
    const client = createClient({ baseUrl: base, licenseKey: s.license.uuid, domain: first.domain });
    expect((await client.hasPaid()).hasPaid).toBe(true);
    const full = await caught(client.hasPaid({ domain: second.domain }));
    expect(full).toMatchObject({
      status: 403,
      message: 'This license has reached its limit of 1 domain.',
      redirectUrl: REDIRECT,
    });

    expect(await client.deactivate()).toEqual({ deactivated: 1 });
    expect((await client.hasPaid({ domain: second.domain })).hasPaid).toBe(true);
    expect(await client.deactivate()).toEqual({ deactivated: 0 });
    expect(await client.deactivate({ domain: `https://${second.domain}/` })).toEqual({ deactivated: 1 });

    // Not a host name, or none at all (Node has no page to take one from): 422 on domain.
    const bad = await caught(client.deactivate({ domain: '*.example.com' }));
    expect(bad).toMatchObject({ status: 422, isRefusal: false });
    expect(bad.errors).toEqual({
      domain: [
        'The domain must be a host name such as shop.example.com (not an IP address, a wildcard or anything else).',
      ],
    });
    const none = await caught(createClient({ baseUrl: base, licenseKey: s.license.uuid }).deactivate());
    expect(none.status).toBe(422);
    expect(Object.keys(none.errors ?? {})).toEqual(['domain']);

    // The day's allowance: 3 that free something (2 taken above), then 429 with retryAfter.
    expect((await client.hasPaid()).hasPaid).toBe(true);
    expect(await client.deactivate()).toEqual({ deactivated: 1 });
    expect((await client.hasPaid()).hasPaid).toBe(true);
    const spent = await caught(client.deactivate());
    expect(spent).toMatchObject({ status: 429, isRetryable: true });
    expect(spent.message).toBe(
      'This license has used its 3 self-service deactivations for today; more are possible after midnight UTC.',
    );
    expect(spent.retryAfter).toBeGreaterThan(0);
    expect(spent.retryAfter).toBeLessThanOrEqual(86_400);

    expectSuccess(await api(s.key).post(`/project/${s.project.id}/licenses/${s.license.id}/revoke`));
    expect(await caught(client.deactivate())).toMatchObject({
      status: 403,
      message: 'This license has been revoked.',
      redirectUrl: REDIRECT,
      isRefusal: true,
    });
  });

  it('a service that is not there → status 0', async () => {
    const err = await caught(
      createClient({ baseUrl: 'http://127.0.0.1:9/api/v1', licenseKey: 'x' }).hasPaid(),
    );
    expect(err.status).toBe(0);
  });
});
