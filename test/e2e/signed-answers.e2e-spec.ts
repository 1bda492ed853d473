import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createHash,
  createPublicKey,
  generateKeyPairSync,
  KeyObject,
  randomBytes,
  verify,
} from 'node:crypto';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/*
 * Signed runtime answers (docs/decisions.md#signed-answers-and-offline-tokens), verified here with
 * nothing but node:crypto: the project's published public key, the signed text rebuilt from what the
 * client sent and the exact bytes it received.
 */

const INVALID_NONCE =
  'The X-Service-Nonce header must be 16 to 128 characters of letters, digits, "-" and "_".';
const REDIRECT = 'https://example.com/pay';
const ISO_SECOND = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const sha256 = (value: string | Buffer) => createHash('sha256').update(value).digest('hex');
const nonce = () => randomBytes(18).toString('base64url');

/** A runtime call made with fetch, so that the body's bytes are what the service wrote. */
interface Sent {
  method: 'GET' | 'POST';
  target: string;
  key?: string;
  domain?: string;
  nonce?: string;
  headers?: Record<string, string>;
}

interface Received {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json: any;
}

/** What a signature covers, field by field, as the client rebuilds it. */
interface Signed {
  date: string;
  nonce: string;
  method: string;
  target: string;
  key: string;
  domain: string;
  body: Buffer;
}

function signedText(s: Signed): string {
  return `LG1-ANSWER\n${s.date}\n${s.nonce}\n${s.method} ${s.target}\n${sha256(s.key)}\n${s.domain}\n${sha256(s.body)}`;
}

/** Verifies X-Service-Signature over `s` with `publicKey`; false on any mismatch. */
function verifies(signature: string | null, s: Signed, publicKey: KeyObject): boolean {
  if (!signature?.startsWith('v1,')) return false;
  return verify(
    null,
    Buffer.from(signedText(s), 'utf8'),
    publicKey,
    Buffer.from(signature.slice(3), 'base64'),
  );
}

describe('signed runtime answers', () => {
  let t: TestApp;
  let key: string;
  let project: Record<string, any>;
  let publicKey: KeyObject;
  let domain: string;
  let license: Record<string, any>;

  const call = async (sent: Sent): Promise<Received> => {
    const headers: Record<string, string> = { Accept: 'application/json', ...sent.headers };
    if (sent.key !== undefined) headers['X-LICENSE-KEY'] = sent.key;
    if (sent.domain !== undefined) headers['X-Service-Domain'] = sent.domain;
    if (sent.nonce !== undefined) headers['X-Service-Nonce'] = sent.nonce;
    const res = await fetch(`${t.url}${sent.target}`, { method: sent.method, headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, json: JSON.parse(bytes.toString('utf8')) };
  };

  /** The fields a signature of `res` to `sent` covers. */
  const coveredBy = (sent: Sent, res: Received): Signed => ({
    date: res.headers.get('x-service-date') as string,
    nonce: sent.nonce as string,
    method: sent.method,
    target: sent.target,
    key: sent.key ?? '',
    domain: sent.domain ?? '',
    body: res.bytes,
  });

  /** Asserts `res` carries a valid signature for `sent`, by the project's published key. */
  const expectSigned = (sent: Sent, res: Received, by: KeyObject = publicKey) => {
    expect(res.headers.get('x-service-date')).toMatch(ISO_SECOND);
    expect(Math.abs(Date.parse(res.headers.get('x-service-date') as string) - Date.now())).toBeLessThan(
      60_000,
    );
    expect(res.headers.get('x-service-signature')).toMatch(/^v1,[A-Za-z0-9+/]{86}==$/);
    expect(verifies(res.headers.get('x-service-signature'), coveredBy(sent, res), by)).toBe(true);
  };

  const expectUnsigned = (res: Received) => {
    expect(res.headers.get('x-service-date')).toBeNull();
    expect(res.headers.get('x-service-signature')).toBeNull();
  };

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    project = await makeProject(t, key, { has_paid: true, default_redirect_url: REDIRECT });
    domain = (await makeDomain(t, key, project.id, { has_paid: true })).domain;
    license = await makeLicense(t, key, project.id);
    // The key the service publishes: GET /project/{id}/signing-key.
    const published = expectSuccess(await apiAs(t, key).get(`/project/${project.id}/signing-key`));
    expect(published.algorithm).toBe('Ed25519');
    publicKey = createPublicKey(published.public_key_pem);
    // Its raw form is the same key.
    expect(
      createPublicKey({
        key: {
          kty: 'OKP',
          crv: 'Ed25519',
          x: Buffer.from(published.public_key, 'base64').toString('base64url'),
        },
        format: 'jwk',
      }).equals(publicKey),
    ).toBe(true);
  });
  afterAll(async () => t?.close());

  it('signs a paid answer; a changed body, nonce, key, domain, path, method, date or public key fails', async () => {
    const sent: Sent = {
      method: 'POST',
      target: '/api/v1/project/has-paid?include=injectables',
      key: license.uuid,
      domain,
      nonce: nonce(),
    };
    const res = await call(sent);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ has_paid: true, injectables: [], is_test_license: false });
    expectSigned(sent, res);

    const signature = res.headers.get('x-service-signature');
    const good = coveredBy(sent, res);
    const altered = Buffer.from(res.bytes.toString('utf8').replace('"has_paid":true', '"has_paid":false'));
    expect(altered.equals(res.bytes)).toBe(false);
    expect(verifies(signature, { ...good, body: altered }, publicKey)).toBe(false);
    expect(
      verifies(signature, { ...good, body: Buffer.concat([res.bytes, Buffer.from(' ')]) }, publicKey),
    ).toBe(false);
    expect(verifies(signature, { ...good, nonce: nonce() }, publicKey)).toBe(false);
    expect(
      verifies(signature, { ...good, key: (await makeLicense(t, key, project.id)).uuid }, publicKey),
    ).toBe(false);
    expect(verifies(signature, { ...good, domain: `www.${domain}` }, publicKey)).toBe(false);
    expect(verifies(signature, { ...good, domain: '' }, publicKey)).toBe(false);
    expect(verifies(signature, { ...good, target: '/api/v1/project/has-paid' }, publicKey)).toBe(false);
    expect(
      verifies(signature, { ...good, target: '/api/v1/project/has-paid?include=injectables&x=1' }, publicKey),
    ).toBe(false);
    expect(verifies(signature, { ...good, method: 'GET' }, publicKey)).toBe(false);
    expect(
      verifies(
        signature,
        { ...good, date: new Date(Date.parse(good.date) + 1000).toISOString().replace('.000Z', 'Z') },
        publicKey,
      ),
    ).toBe(false);
    expect(verifies(signature, good, generateKeyPairSync('ed25519').publicKey)).toBe(false);
    const other = await makeProject(t, key);
    const otherKey = createPublicKey(
      expectSuccess(await apiAs(t, key).get(`/project/${other.id}/signing-key`)).public_key_pem,
    );
    expect(verifies(signature, good, otherKey)).toBe(false);
  });

  it('signs a calling domain over its text, whether its bytes came as UTF-8 or as latin1', async () => {
    const name = `bücher-${uniqueToken()}.example`;
    await makeDomain(t, key, project.id, { domain: name, has_paid: true });
    const sent: Sent = {
      method: 'POST',
      target: '/api/v1/project/has-paid',
      key: license.uuid,
      domain: name,
    };
    // fetch writes a header's characters as latin1 bytes: these are the name's UTF-8 bytes (curl's way).
    const asUtf8 = { ...sent, nonce: nonce() };
    const utf8 = await call({ ...asUtf8, domain: Buffer.from(name, 'utf8').toString('latin1') });
    expect(utf8.status).toBe(200);
    expectSigned(asUtf8, utf8);
    // A browser's fetch sends ü as the one byte 0xFC; the client signs the same name.
    const asLatin1 = { ...sent, nonce: nonce() };
    const latin1 = await call(asLatin1);
    expect(latin1.status).toBe(200);
    expectSigned(asLatin1, latin1);
  });

  it('each call is signed for its own nonce', async () => {
    const a: Sent = {
      method: 'POST',
      target: '/api/v1/project/has-paid',
      key: license.uuid,
      domain,
      nonce: nonce(),
    };
    const b: Sent = { ...a, nonce: nonce() };
    const [ra, rb] = await Promise.all([call(a), call(b)]);
    expectSigned(a, ra);
    expectSigned(b, rb);
    expect(ra.headers.get('x-service-signature')).not.toBe(rb.headers.get('x-service-signature'));
    // One answer's signature does not vouch for the other's nonce.
    expect(verifies(ra.headers.get('x-service-signature'), coveredBy(b, rb), publicKey)).toBe(false);
  });

  it('without a nonce the answer is exactly the unsigned one', async () => {
    const res = await call({ method: 'POST', target: '/api/v1/project/has-paid', key: license.uuid, domain });
    expectUnsigned(res);
    expect(res.json).toEqual({
      status: 'success',
      message: 'Success',
      data: { has_paid: true, is_test_license: false },
      errors: null,
    });
    const refused = await call({
      method: 'POST',
      target: '/api/v1/project/has-paid',
      key: license.uuid,
      domain: 'nowhere.example.org',
    });
    expectUnsigned(refused);
    expect(refused.status).toBe(403);
  });

  it('signs refusals: 400 no domain, 403 unregistered domain, 403 revoked, 403 locked project, 422, 429 daily limit', async () => {
    const base = { method: 'POST' as const, target: '/api/v1/project/has-paid', key: license.uuid };
    const noDomain = { ...base, nonce: nonce() };
    const r400 = await call(noDomain);
    expect(r400.status).toBe(400);
    expect(r400.json.data).toEqual({ redirect_url: REDIRECT });
    expectSigned(noDomain, r400);

    const unregistered = { ...base, domain: `other-${uniqueToken()}.example.org`, nonce: nonce() };
    const r403 = await call(unregistered);
    expect(r403.status).toBe(403);
    expect(r403.json.message).toBe('Domain is not registered under this project.');
    expectSigned(unregistered, r403);

    const badInclude = {
      ...base,
      target: '/api/v1/project/has-paid?include=everything',
      domain,
      nonce: nonce(),
    };
    const r422 = await call(badInclude);
    expect(r422.status).toBe(422);
    expectSigned(badInclude, r422);

    const limited = await makeLicense(t, key, project.id, { max_usage_per_day: 1 });
    const first = { ...base, key: limited.uuid, domain, nonce: nonce() };
    expectSigned(first, await call(first));
    const second = { ...first, nonce: nonce() };
    const r429 = await call(second);
    expect(r429.status).toBe(429);
    expect(r429.headers.get('retry-after')).toMatch(/^\d+$/);
    expectSigned(second, r429);

    const revoked = await makeLicense(t, key, project.id);
    expectSuccess(await apiAs(t, key).post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
    const revokedCall = { ...base, key: revoked.uuid, domain, nonce: nonce() };
    const rRevoked = await call(revokedCall);
    expect(rRevoked.status).toBe(403);
    expect(rRevoked.json.message).toBe('This license has been revoked.');
    expectSigned(revokedCall, rRevoked);

    const locked = await makeProject(t, key, { has_paid: true });
    const lockedLicense = await makeLicense(t, key, locked.id);
    expectSuccess(await apiAs(t, key).post(`/project/${locked.id}/lock`));
    const lockedCall = {
      ...base,
      key: lockedLicense.uuid,
      nonce: nonce(),
      target: '/api/v1/project/has-paid?action=check_project',
    };
    const rLocked = await call(lockedCall);
    expect(rLocked.status).toBe(403);
    expect(rLocked.json.message).toBe('Project is locked.');
    const lockedKey = createPublicKey(
      expectSuccess(await apiAs(t, key).get(`/project/${locked.id}/signing-key`)).public_key_pem,
    );
    expectSigned(lockedCall, rLocked, lockedKey);
    // Signed by the license's own project, not by any other.
    expect(
      verifies(rLocked.headers.get('x-service-signature'), coveredBy(lockedCall, rLocked), publicKey),
    ).toBe(false);
  });

  it('answers before any project is known go unsigned: no key, an unknown key, a deleted project', async () => {
    const base = { method: 'POST' as const, target: '/api/v1/project/has-paid', domain };
    const r401 = await call({ ...base, nonce: nonce() });
    expect(r401.status).toBe(401);
    expectUnsigned(r401);
    const unknown = await call({ ...base, key: '00000000-0000-4000-8000-000000000000', nonce: nonce() });
    expect(unknown.status).toBe(403);
    expect(unknown.json.message).toBe('Invalid license key.');
    expectUnsigned(unknown);

    const doomed = await makeProject(t, key, { has_paid: true });
    const orphan = await makeLicense(t, key, doomed.id);
    expectSuccess(await apiAs(t, key).delete(`/project/${doomed.id}`));
    const gone = await call({
      ...base,
      key: orphan.uuid,
      nonce: nonce(),
      target: '/api/v1/project/has-paid?action=check_project',
    });
    expect(gone.status).toBe(403);
    expect(gone.json.message).toBe('The project of this license no longer exists.');
    expectUnsigned(gone);
  });

  it('a malformed nonce is a 422 on nonce; 16 and 128 characters are accepted', async () => {
    const base = { method: 'POST' as const, target: '/api/v1/project/has-paid', key: license.uuid, domain };
    for (const bad of [
      'a'.repeat(15),
      'a'.repeat(129),
      `${'a'.repeat(16)}!`,
      `${'a'.repeat(16)} b`,
      `${'a'.repeat(16)}=`,
      `${'a'.repeat(16)}.`,
    ]) {
      const res = await call({ ...base, nonce: bad });
      expect({ bad, status: res.status, body: res.json }).toEqual({
        bad,
        status: 422,
        body: { status: 'error', message: INVALID_NONCE, data: null, errors: { nonce: [INVALID_NONCE] } },
      });
      expectUnsigned(res);
    }
    for (const good of ['a'.repeat(16), `${'Az09_-'.repeat(21)}xy`]) {
      const sent = { ...base, nonce: good };
      const res = await call(sent);
      expect(res.status).toBe(200);
      expectSigned(sent, res);
    }
    // The stream checks it too.
    const stream = await call({
      method: 'GET',
      target: '/api/v1/injectable/stream',
      key: license.uuid,
      nonce: 'short',
    });
    expect(stream.status).toBe(422);
    expect(stream.json.errors).toEqual({ nonce: [INVALID_NONCE] });
  });

  it('signs the injectable stream, the path and query exactly as received', async () => {
    for (const slug of ['one', 'two']) {
      expectSuccess(
        await apiAs(t, key).post(`/project/${project.id}/injectables`, {
          slug: `${slug}-${uniqueToken()}`,
          content: `payload ${slug}`,
          secret: 's3cret-s3cret',
          only_if_paid: false,
        }),
        201,
      );
    }
    const sent: Sent = {
      method: 'GET',
      target: '/api/v1/injectable/stream?per_page=1',
      key: license.uuid,
      nonce: nonce(),
    };
    const res = await call(sent);
    expect(res.status).toBe(200);
    expect(res.json.data.injectables).toHaveLength(1);
    expectSigned(sent, res);
    const next: Sent = {
      ...sent,
      target: `/api/v1/injectable/stream?per_page=1&cursor=${encodeURIComponent(res.json.data.next_cursor)}`,
      nonce: nonce(),
    };
    const page2 = await call(next);
    expect(page2.status).toBe(200);
    expectSigned(next, page2);
    // A 422 of the stream's own validation, after the license was read, is signed too.
    const badPage: Sent = { ...sent, target: '/api/v1/injectable/stream?per_page=51', nonce: nonce() };
    const r422 = await call(badPage);
    expect(r422.status).toBe(422);
    expectSigned(badPage, r422);
  });

  it('signs has-paid however its path is spelled (the routed path as well as the fast one), and the key sent as a parameter', async () => {
    const slash: Sent = {
      method: 'POST',
      target: '/api/v1/project/has-paid/?action=check_project',
      key: license.uuid,
      nonce: nonce(),
    };
    const res = await call(slash);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ has_paid: true, is_test_license: false });
    expectSigned(slash, res);

    const inQuery: Sent = {
      method: 'POST',
      target: `/api/v1/project/has-paid?action=check_project&license=${license.uuid}`,
      nonce: nonce(),
    };
    const byQuery = await call(inQuery);
    expect(byQuery.status).toBe(200);
    expectSigned({ ...inQuery, key: license.uuid }, byQuery);
  });

  it('CORS lets a browser send the nonce and read both headers', async () => {
    const preflight = await fetch(`${t.url}/api/v1/project/has-paid`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://shop.example.com',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-license-key,x-service-nonce',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')?.split(',')).toContain('X-Service-Nonce');
    const sent: Sent = {
      method: 'POST',
      target: '/api/v1/project/has-paid',
      key: license.uuid,
      domain,
      nonce: nonce(),
      headers: { Origin: 'https://shop.example.com' },
    };
    const res = await call(sent);
    expect(res.headers.get('access-control-expose-headers')?.split(',')).toEqual(
      expect.arrayContaining(['X-Service-Date', 'X-Service-Signature']),
    );
    expectSigned(sent, res);
  });
});

describe('signed runtime answers through Express (runtimeFastPath: false)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, { runtimeFastPath: false });
  });
  afterAll(async () => t?.close());

  it('signs the same way', async () => {
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { has_paid: true });
    const license = await makeLicense(t, key, project.id);
    const publicKey = createPublicKey(
      expectSuccess(await apiAs(t, key).get(`/project/${project.id}/signing-key`)).public_key_pem,
    );
    const n = nonce();
    const target = '/api/v1/project/has-paid?action=check_project';
    const res = await fetch(`${t.url}${target}`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': license.uuid, 'X-Service-Nonce': n },
    });
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    const signed = {
      date: res.headers.get('x-service-date') as string,
      nonce: n,
      method: 'POST',
      target,
      key: license.uuid,
      domain: '',
      body,
    };
    expect(verifies(res.headers.get('x-service-signature'), signed, publicKey)).toBe(true);
  });
});
