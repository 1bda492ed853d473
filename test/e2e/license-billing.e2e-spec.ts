import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, createPublicKey, KeyObject, randomBytes, verify } from 'node:crypto';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { outboxCount } from '../utils/outbox.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { startReceiver, type Receiver } from '../utils/webhook-receiver.js';

/*
 * Licenses that carry their own payment (docs/api.md#licenses-that-carry-their-own-payment):
 * `billing: license` answers the license's own has_paid from any site, counted by registrable domain.
 */

const RUNTIME = '/api/v1/project/has-paid';
const REDIRECT = 'https://example.com/pay';
const NO_DOMAIN = 'The calling domain could not be determined: send it in the X-Service-Domain header.';
const PINNED_CHECK_PROJECT = 'This license is pinned to a domain: send the calling domain.';
const HOUR = 3_600_000;
const sha256 = (value: string | Buffer) => createHash('sha256').update(value).digest('hex');

type Json = Record<string, any>;

function openToken(token: string, publicKey: KeyObject): Json {
  const [version, payload, signature] = token.split('.');
  expect(version).toBe('LG1');
  expect(
    verify(null, Buffer.from(`LG1-TOKEN\n${payload}`), publicKey, Buffer.from(signature, 'base64url')),
  ).toBe(true);
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}

describe('license billing', () => {
  let t: TestApp;
  /** The same database served without the fast path: every runtime answer must be the same bytes. */
  let routed: TestApp;
  let rx: Receiver;
  let key: string;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

  beforeAll(async () => {
    const env = {
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    t = await createTestApp(env, { clock });
    routed = await createTestApp(env, {
      clock,
      databaseUrl: t.config.env.DATABASE_URL,
      runtimeFastPath: false,
    });
    ({ key } = await makeAccount(t.app));
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    await routed?.close();
    await t?.close();
  });

  const api = () => apiAs(t, key);
  const send = (
    app: TestApp,
    license: string,
    query: Record<string, string> = {},
    domain?: string,
    headers: Record<string, string> = {},
  ) => {
    const req = app.http().post(RUNTIME).set('Accept', 'application/json').set('X-LICENSE-KEY', license);
    if (domain !== undefined) req.set('X-Service-Domain', domain);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    return req.query(query);
  };
  /** POST has-paid (the fast path). */
  const check = (
    license: string,
    query: Record<string, string> = {},
    domain?: string,
    headers: Record<string, string> = {},
  ) => send(t, license, query, domain, headers);
  const setGrace = (licenseId: number, graceUntil: Date) =>
    t.dataSource.getRepository(LicenseEntity).update({ id: licenseId }, { grace_until: graceUntil });
  const stream = (license: string) =>
    t.http().get('/api/v1/injectable/stream').set('Accept', 'application/json').set('X-LICENSE-KEY', license);
  const activations = async (projectId: number, licenseId: number) =>
    (
      expectSuccess(await api().get(`/project/${projectId}/licenses/${licenseId}/activations`)).data as Json[]
    ).map((a) => [a.domain, a.host]);
  const outbox = (projectId: number, type: string) => outboxCount(t, projectId, type);
  const project = (overrides: Json = {}) =>
    makeProject(t, key, { has_paid: false, default_redirect_url: REDIRECT, ...overrides });
  const billed = (projectId: number, overrides: Json = {}) =>
    makeLicense(t, key, projectId, { billing: 'license', ...overrides });
  /** A paid-only injectable in the project. */
  const paidOnly = async (projectId: number) =>
    expectSuccess(
      await api()
        .post(`/project/${projectId}/injectables`)
        .send({
          slug: `s-${uniqueToken()}`,
          type: 'snippet',
          mode: 'inject',
          content: 'paid-only',
          secret: 'a-secret-of-enough-length',
          only_if_paid: true,
        }),
      201,
    );

  describe('the license API', () => {
    it('returns billing, has_paid, customer_id and revoked_by; project billing by default', async () => {
      const p = await project();
      const plain = await makeLicense(t, key, p.id);
      expect(plain).toMatchObject({
        billing: 'project',
        has_paid: false,
        customer_id: null,
        revoked_by: null,
      });
      const own = await billed(p.id, { has_paid: true });
      expect(own).toMatchObject({ billing: 'license', has_paid: true, customer_id: null, revoked_by: null });
      const bad = expectError(
        await api().post(`/project/${p.id}/licenses`).send({ title: 'x', billing: 'buyer' }),
        422,
        ['billing'],
      );
      expect(bad.errors.billing).toEqual(['The selected billing is invalid: use project or license.']);
      const notBool = expectError(
        await api().patch(`/project/${p.id}/licenses/${own.id}`, { has_paid: 'yes' }),
        422,
        ['has_paid'],
      );
      expect(notBool.errors.has_paid[0]).toMatch(/has paid/);
      // revoked_by is the service's: sent, it is ignored.
      const patched = expectSuccess(
        await api().patch(`/project/${p.id}/licenses/${own.id}`, {
          revoked_by: 'payment',
          billing: 'project',
        }),
      );
      expect(patched).toMatchObject({ billing: 'project', revoked_by: null });
    });

    it('PATCH has_paid clears grace_until, sends license.paid / license.unpaid and is audited', async () => {
      const p = await project({ webhook_url: rx.url });
      const l = await billed(p.id);
      await setGrace(l.id, new Date(clock.nowMs() + HOUR));
      const paid = expectSuccess(await api().patch(`/project/${p.id}/licenses/${l.id}`, { has_paid: true }));
      expect(paid).toMatchObject({ has_paid: true, grace_until: null });
      expect(await outbox(p.id, 'license.paid')).toBe(1);
      // Unchanged: no event of its own.
      expectSuccess(await api().patch(`/project/${p.id}/licenses/${l.id}`, { has_paid: true }));
      expect(await outbox(p.id, 'license.paid')).toBe(1);
      expectSuccess(await api().patch(`/project/${p.id}/licenses/${l.id}`, { has_paid: false }));
      expect(await outbox(p.id, 'license.unpaid')).toBe(1);
      expect(await outbox(p.id, 'license.updated')).toBe(3);
      const log = expectSuccess(
        await api().get(`/project/${p.id}/audit-log?action=license.updated&resource_id=${l.id}`),
      ).data as Json[];
      expect(log.map((row) => row.changes).filter((c) => Object.keys(c).length > 0)).toEqual([
        { has_paid: [true, false] },
        { has_paid: [false, true], grace_until: [expect.any(String), null] },
      ]);
      // The project's flag did not move.
      expect(expectSuccess(await api().get(`/project/${p.id}`)).has_paid).toBe(false);
    });

    it('a PUT that leaves has_paid out keeps a running grace; one that sends it ends it', async () => {
      const p = await project();
      const l = await makeLicense(t, key, p.id);
      const graceUntil = new Date(clock.nowMs() + HOUR);
      await setGrace(l.id, graceUntil);
      const put = expectSuccess(await api().put(`/project/${p.id}/licenses/${l.id}`, { title: l.title }));
      expect(put).toMatchObject({ billing: 'project', has_paid: false, grace_until: expect.any(String) });
      const paid = expectSuccess(
        await api().put(`/project/${p.id}/licenses/${l.id}`, { title: l.title, has_paid: true }),
      );
      expect(paid).toMatchObject({ has_paid: true, grace_until: null });
    });

    it('customer_id: a customer of the same project, else 422; null clears; the list filters by it', async () => {
      const p = await project();
      const other = await project();
      // Customers are made by their own API or a payment connector; here, as a row.
      const insert = async (projectId: number) =>
        (
          await t.dataSource
            .getRepository(CustomerEntity)
            .save({ project_id: projectId, email: `${uniqueToken()}@example.com`, name: null })
        ).id;
      const mine = await insert(p.id);
      const theirs = await insert(other.id);
      const foreign = expectError(
        await api().post(`/project/${p.id}/licenses`).send({ title: 't', customer_id: theirs }),
        422,
        ['customer_id'],
      );
      expect(foreign.errors.customer_id).toEqual(['The selected customer id is invalid.']);
      expectError(await api().post(`/project/${p.id}/licenses`).send({ title: 't', customer_id: 'x' }), 422, [
        'customer_id',
      ]);
      const a = await billed(p.id, { customer_id: mine });
      expect(a.customer_id).toBe(mine);
      const b = await billed(p.id);
      const list = async (q: string) =>
        (expectSuccess(await api().get(`/project/${p.id}/licenses?${q}`)).data as Json[]).map((l) => l.id);
      expect(await list(`customer_id=${mine}`)).toEqual([a.id]);
      expectError(await api().get(`/project/${p.id}/licenses?customer_id=abc`), 422, ['customer_id']);
      expect(
        expectSuccess(await api().patch(`/project/${p.id}/licenses/${b.id}`, { customer_id: mine }))
          .customer_id,
      ).toBe(mine);
      expect(await list(`customer_id=${mine}`)).toEqual([b.id, a.id]);
      expect(
        expectSuccess(await api().patch(`/project/${p.id}/licenses/${a.id}`, { customer_id: null }))
          .customer_id,
      ).toBeNull();
      expect(await list(`customer_id=${mine}`)).toEqual([b.id]);
    });

    it('a revoke through the API is the vendor’s; reactivating clears it', async () => {
      const p = await project();
      const l = await billed(p.id);
      const revoked = expectSuccess(await api().post(`/project/${p.id}/licenses/${l.id}/revoke`));
      expect(revoked).toMatchObject({ revoked_by: 'vendor', revoked_at: expect.any(String) });
      const back = expectSuccess(await api().post(`/project/${p.id}/licenses/${l.id}/reactivate`));
      expect(back).toMatchObject({ revoked_by: null, revoked_at: null });
      // One payment revoked: the vendor's revoke makes it the vendor's (no paid event reactivates it).
      await t.dataSource
        .getRepository(LicenseEntity)
        .update({ id: l.id }, { revoked_at: new Date(), revoked_by: 'payment' });
      expect(expectSuccess(await api().post(`/project/${p.id}/licenses/${l.id}/revoke`)).revoked_by).toBe(
        'vendor',
      );
    });
  });

  describe('the runtime answer', () => {
    it('two buyers on one project: each license answers its own flag, from sites never registered', async () => {
      const p = await project();
      const registered = await makeDomain(t, key, p.id, { has_paid: true });
      const a = await billed(p.id, { has_paid: true });
      const b = await billed(p.id);
      expect(expectSuccess(await check(a.uuid, {}, 'buyer-a.example.org'))).toEqual({
        has_paid: true,
        is_test_license: false,
      });
      expect(expectSuccess(await check(b.uuid, {}, 'buyer-b.example.net'))).toEqual({
        has_paid: false,
        redirect_url: REDIRECT,
        is_test_license: false,
      });
      // A paid registered domain does not pay b; check_project answers the license's flag, not the project's.
      expect(expectSuccess(await check(b.uuid, {}, registered.domain)).has_paid).toBe(false);
      expect(expectSuccess(await check(a.uuid, { action: 'check_project' })).has_paid).toBe(true);
      expect(expectSuccess(await check(b.uuid, { action: 'check_project' })).has_paid).toBe(false);
      // The project's flag moves neither, and is moved by neither.
      expectSuccess(await api().patch(`/project/${p.id}`, { has_paid: true }));
      expect(expectSuccess(await check(b.uuid, {}, 'buyer-b.example.net')).has_paid).toBe(false);
      expect(expectSuccess(await check(b.uuid, { action: 'check_project' })).has_paid).toBe(false);
      expectSuccess(await api().patch(`/project/${p.id}`, { has_paid: false }));
      expect(expectSuccess(await check(a.uuid, {}, 'buyer-a.example.org')).has_paid).toBe(true);
      expectSuccess(await api().patch(`/project/${p.id}/licenses/${b.id}`, { has_paid: true }));
      expect(expectSuccess(await check(b.uuid, {}, 'buyer-b.example.net')).has_paid).toBe(true);
      expect(expectSuccess(await api().get(`/project/${p.id}`)).has_paid).toBe(false);
      expect(expectSuccess(await api().get(`/project/${p.id}/domains/${registered.id}`)).has_paid).toBe(true);
      // A billing: project license of the same project is as it always was.
      const plain = await makeLicense(t, key, p.id);
      expect(expectError(await check(plain.uuid, {}, 'buyer-a.example.org'), 403).message).toBe(
        'Domain is not registered under this project.',
      );
      expect(expectSuccess(await check(plain.uuid, {}, registered.domain)).has_paid).toBe(true);
      expect(await activations(p.id, a.id)).toEqual([
        ['example.org', ''],
        ['example.org', 'buyer-a.example.org'],
      ]);
    });

    it('counts registrable domains by the Public Suffix List, private suffixes included', async () => {
      const p = await project();
      const l = await billed(p.id, { has_paid: true, max_domains: 2 });
      expectSuccess(await check(l.uuid, {}, 'a.shop.example.co.uk'));
      expectSuccess(await check(l.uuid, {}, 'www.example.co.uk'));
      expectSuccess(await check(l.uuid, {}, 'example.co.uk'));
      expectSuccess(await check(l.uuid, {}, 'me.github.io'));
      expect(expectError(await check(l.uuid, {}, 'you.github.io'), 403).message).toBe(
        'This license has reached its limit of 2 domains.',
      );
      expect(await activations(p.id, l.id)).toEqual([
        ['example.co.uk', ''],
        ['example.co.uk', 'a.shop.example.co.uk'],
        ['example.co.uk', 'www.example.co.uk'],
        ['me.github.io', ''],
      ]);
    });

    it('an IP literal, localhost and a single label are domains of their own', async () => {
      const p = await project();
      const l = await billed(p.id, { has_paid: true });
      for (const host of ['203.0.113.7', '[2001:db8::1]', 'localhost', 'intranet', 'app.localhost'])
        expect(expectSuccess(await check(l.uuid, {}, host)).has_paid).toBe(true);
      expect(await activations(p.id, l.id)).toEqual([
        ['203.0.113.7', ''],
        ['2001:db8::1', ''],
        ['localhost', ''],
        ['intranet', ''],
        ['app.localhost', ''],
      ]);
    });

    it('max_subdomains_per_domain counts the hosts under one registrable domain', async () => {
      const p = await project();
      const l = await billed(p.id, { has_paid: true, max_subdomains_per_domain: 1 });
      expectSuccess(await check(l.uuid, {}, 'a.example.com'));
      expectSuccess(await check(l.uuid, {}, 'example.com'));
      expect(expectError(await check(l.uuid, {}, 'b.example.com'), 403).message).toBe(
        'This license has reached its limit of 1 subdomain for example.com.',
      );
      expectSuccess(await check(l.uuid, {}, 'b.example.net'));
      // Freed as any activation: by the holder, then the slot is free.
      const freed = await t
        .http()
        .post('/api/v1/license/deactivate')
        .set('X-LICENSE-KEY', l.uuid)
        .set('X-Service-Domain', 'a.example.com');
      expect(expectSuccess(freed)).toEqual({ deactivated: 1 });
      expectSuccess(await check(l.uuid, {}, 'b.example.com'));
    });

    it('pinned: only from its domain or a subdomain, never check_project; its own flag answers', async () => {
      const p = await project();
      const domain = await makeDomain(t, key, p.id, {
        domain: `pin-${uniqueToken()}.example.com`,
        has_paid: false,
      });
      const l = await billed(p.id, { has_paid: true, domain_id: domain.id });
      expect(expectSuccess(await check(l.uuid, {}, domain.domain)).has_paid).toBe(true);
      expect(expectSuccess(await check(l.uuid, {}, `www.${domain.domain}`)).has_paid).toBe(true);
      expect(expectError(await check(l.uuid, {}, 'elsewhere.example.org'), 403).message).toBe(
        'This license is pinned to another domain.',
      );
      expect(expectError(await check(l.uuid, { action: 'check_project' }), 403).message).toBe(
        PINNED_CHECK_PROJECT,
      );
      expect(expectError(await check(l.uuid), 400).message).toBe(NO_DOMAIN);
    });

    it('no calling domain: 400, except with check_project', async () => {
      const p = await project();
      const l = await billed(p.id, { has_paid: true });
      const refused = expectError(await check(l.uuid), 400);
      expect(refused.message).toBe(NO_DOMAIN);
      expect(expectSuccess(await check(l.uuid, { action: 'check_project' }))).toEqual({
        has_paid: true,
        is_test_license: false,
      });
    });

    it('a test license on a local host answers its own flag and takes no slot', async () => {
      const p = await project({ has_paid: true });
      const l = await billed(p.id, { is_test_license: true, max_domains: 0 });
      for (const host of ['localhost', '127.0.0.1', 'shop.test'])
        expect(expectSuccess(await check(l.uuid, {}, host))).toEqual({
          has_paid: false,
          redirect_url: REDIRECT,
          is_test_license: true,
        });
      expect(await activations(p.id, l.id)).toEqual([]);
      expect(expectError(await check(l.uuid, {}, 'real.example.com'), 403).message).toBe(
        'This license has reached its limit of 0 domains.',
      );
    });

    it('signed answers, offline tokens, injectables and the stream follow the license’s flag', async () => {
      const p = await project({ has_paid: true, offline_grace_hours: 72 });
      await paidOnly(p.id);
      const publicKey = createPublicKey(
        expectSuccess(await api().get(`/project/${p.id}/signing-key`)).public_key_pem,
      );
      const unpaid = await billed(p.id);
      const paid = await billed(p.id, { has_paid: true });
      const site = 'shop.buyer.example';

      // Signed: the signature covers the license's answer.
      const nonce = randomBytes(18).toString('base64url');
      const signed = await check(unpaid.uuid, {}, site, { 'X-Service-Nonce': nonce });
      expect(signed.body.data.has_paid).toBe(false);
      const date = signed.headers['x-service-date'];
      const [version, signature] = signed.headers['x-service-signature'].split(',');
      expect(version).toBe('v1');
      const covered = `LG1-ANSWER\n${date}\n${nonce}\nPOST ${RUNTIME}\n${sha256(unpaid.uuid)}\n${site}\n${sha256(Buffer.from(signed.text))}`;
      expect(verify(null, Buffer.from(covered), publicKey, Buffer.from(signature, 'base64'))).toBe(true);

      // An unpaid license: no payloads, no token, though the project is paid.
      expect(expectSuccess(await check(unpaid.uuid, { include: 'injectables,token' }, site))).toEqual({
        has_paid: false,
        redirect_url: REDIRECT,
        is_test_license: false,
      });
      const streamed = async (license: string) =>
        (expectSuccess(await stream(license)).injectables as Json[]).length;
      expect(await streamed(unpaid.uuid)).toBe(0);
      expect(await streamed(paid.uuid)).toBe(1);

      // A paid license of an unpaid project: payloads and a token, for 72 hours.
      expectSuccess(await api().patch(`/project/${p.id}`, { has_paid: false }));
      const data = expectSuccess(await check(paid.uuid, { include: 'injectables,token' }, site));
      expect(data.injectables).toHaveLength(1);
      const token = openToken(data.token, publicKey);
      expect(token).toMatchObject({ license_id: paid.id, domain: site, has_paid: true });
      expect(token.iat).toBe(Math.floor(clock.nowMs() / 1000));
      expect(token.exp).toBe(token.iat + 72 * 3600);
      expect(await streamed(paid.uuid)).toBe(1);
    });

    it('a grace answers paid with grace_until until it passes, then unpaid (never revoked); tokens end with it', async () => {
      const p = await project({ offline_grace_hours: 72 });
      await paidOnly(p.id);
      const publicKey = createPublicKey(
        expectSuccess(await api().get(`/project/${p.id}/signing-key`)).public_key_pem,
      );
      const inGrace = await billed(p.id, { has_paid: true });
      const graceUntil = new Date(clock.nowMs() + 2 * HOUR);
      await setGrace(inGrace.id, graceUntil);
      const site = 'grace.example.com';
      const data = expectSuccess(await check(inGrace.uuid, { include: 'injectables,token' }, site));
      expect(data).toMatchObject({
        has_paid: true,
        grace_until: graceUntil.toISOString().replace('.000Z', 'Z'),
      });
      expect(data.injectables).toHaveLength(1);
      expect(openToken(data.token, publicKey).exp).toBe(Math.floor(graceUntil.getTime() / 1000));

      // expires_at (by the wall clock) sooner than the offline grace ends the token.
      const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 5 * HOUR);
      const expiring = await billed(p.id, { has_paid: true, expires_at: expiresAt.toISOString() });
      const tokenOf = expectSuccess(await check(expiring.uuid, { include: 'token' }, site)).token;
      expect(openToken(tokenOf, publicKey).exp).toBe(expiresAt.getTime() / 1000);

      clock.advance(2 * HOUR);
      try {
        expect(expectSuccess(await check(inGrace.uuid, { include: 'injectables,token' }, site))).toEqual({
          has_paid: false,
          redirect_url: REDIRECT,
          is_test_license: false,
        });
        expect((expectSuccess(await stream(inGrace.uuid)).injectables as Json[]).length).toBe(0);
      } finally {
        clock.advance(-2 * HOUR);
      }
    });

    it('the fast path and the Nest route answer a billing: license license with the same bytes', async () => {
      const p = await project({ has_paid: true });
      await paidOnly(p.id);
      const domain = await makeDomain(t, key, p.id, { domain: `par-${uniqueToken()}.example.com` });
      const paid = await billed(p.id, { has_paid: true, max_domains: 2 });
      const unpaid = await billed(p.id);
      const pinned = await billed(p.id, { has_paid: true, domain_id: domain.id });
      const test = await billed(p.id, { is_test_license: true, has_paid: true });
      const calls: Array<[string, Record<string, string>, string | undefined]> = [
        [paid.uuid, {}, 'a.shop.example.co.uk'],
        [paid.uuid, { include: 'injectables' }, 'me.github.io'],
        [paid.uuid, {}, 'you.github.io'],
        [paid.uuid, { action: 'check_project' }, undefined],
        [paid.uuid, {}, undefined],
        [paid.uuid, {}, '203.0.113.7'],
        [unpaid.uuid, { include: 'injectables' }, 'b.example.org'],
        [unpaid.uuid, { action: 'check_project' }, undefined],
        [pinned.uuid, {}, domain.domain],
        [pinned.uuid, {}, 'other.example.org'],
        [pinned.uuid, { action: 'check_project' }, undefined],
        [test.uuid, {}, 'localhost'],
      ];
      for (const [license, query, host] of calls) {
        const fast = await send(t, license, query, host);
        const viaNest = await send(routed, license, query, host);
        expect({ call: [query, host], status: viaNest.status, body: viaNest.text }).toEqual({
          call: [query, host],
          status: fast.status,
          body: fast.text,
        });
      }
    });
  });
});
