import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Response } from 'supertest';
import {
  makeAccount,
  makeLicense,
  makeProject,
  makeUser,
  makeApiKey,
  makeDomain,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { WebhookTargetHost1732000000004 } from '../../src/database/migrations/1732000000004-WebhookTargetHost.js';
import { WebhookTargets } from '../../src/webhooks/ssrf.js';
import { WebhookDeliveryEntity } from '../../src/webhooks/webhook-delivery.entity.js';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.service.js';
import { ManualClock } from '../utils/clock.js';
import { databaseBefore } from '../utils/upgrade.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';
import { sleep, waitFor } from '../utils/wait.js';
import { Hit, Receiver, Script, startReceiver as listen } from '../utils/webhook-receiver.js';

/** Under test settings: private targets allowed (the receiver is on 127.0.0.1), 1 s retries. */
const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1,2,3',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_TIMEOUT_MS: '1000',
  THROTTLE_API_LIMIT: '100000',
  THROTTLE_RUNTIME_LIMIT: '100000',
};
/** Timestamps as the API writes them: UTC, whole seconds (`2025-12-01T10:12:47Z`). */
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
/** Keys that must never appear anywhere in an event body. */
const SECRET_KEYS = [
  'webhook_secret',
  'signing_private_key',
  'signing_public_key',
  'secret',
  'content',
  'encrypted_content',
  'file_path',
  'uuid_hash',
  'claimed_by',
];

/** `n` calls made at once; each answer must be a success. */
const burst = async (n: number, call: (i: number) => PromiseLike<Response>) => {
  for (const res of await Promise.all(Array.from({ length: n }, (_, i) => call(i)))) expectOk(res);
};

// ---------------------------------------------------------------------------------------------
// The receiver (test/utils/webhook-receiver.ts), closed after each test.

const receivers: Receiver[] = [];
async function startReceiver(script?: Script): Promise<Receiver> {
  const rx = await listen(script);
  receivers.push(rx);
  return rx;
}

/** A whsec_ secret as Standard Webhooks issues them: base64 of random bytes. */
const newWhsec = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * Checks one received delivery: POST, JSON, Standard Webhooks headers, a signature that
 * `standardwebhooks` accepts with `secret`, a body {id,type,timestamp,data} carrying no secrets.
 * Returns the parsed body.
 */
function verifyHit(hit: Hit, secret: string, forbidden: string[] = []): Record<string, any> {
  expect(hit.method).toBe('POST');
  expect(hit.path).toBe('/hook');
  expect(hit.headers['content-type']).toMatch(/^application\/json\b/);
  const id = hit.headers['webhook-id'];
  const ts = hit.headers['webhook-timestamp'];
  const sig = hit.headers['webhook-signature'];
  expect(typeof id).toBe('string');
  expect((id as string).length).toBeGreaterThan(0);
  expect(ts).toMatch(/^\d+$/);
  expect(Math.abs(Number(ts) - hit.at / 1000)).toBeLessThan(5);
  for (const s of String(sig).split(' ')) expect(s).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);

  // Throws WebhookVerificationError on a bad signature or a stale timestamp.
  let verified: unknown;
  try {
    verified = new Webhook(secret).verify(hit.body, hit.headers as Record<string, string>);
  } catch (error) {
    throw new Error(
      `standardwebhooks refused delivery ${String(id)}: ${(error as Error).message}\nheaders: ${JSON.stringify(hit.headers)}\nbody: ${hit.body}`,
      { cause: error },
    );
  }
  const body = JSON.parse(hit.body) as Record<string, any>;
  expect(verified).toEqual(body);
  expectEventShape(body, forbidden);
  expect(body.id).toBe(id);
  return body;
}

function expectEventShape(body: Record<string, any>, forbidden: string[] = []) {
  expect(Object.keys(body).sort()).toEqual(['data', 'id', 'timestamp', 'type']);
  expect(typeof body.id).toBe('string');
  expect(typeof body.type).toBe('string');
  expect(body.type).toMatch(/^(project|domain|license|injectable)\.[a-z_]+$/);
  expect(body.timestamp).toMatch(ISO);
  // The resource's own timestamps too.
  for (const quoted of JSON.stringify(body.data).match(/"\d{4}-\d\d-\d\dT[^"]*"/g) ?? [])
    expect(JSON.parse(quoted)).toMatch(ISO);
  expect(Math.abs(Date.parse(body.timestamp) - Date.now())).toBeLessThan(120_000);
  expect(body.data).toEqual(expect.any(Object));
  expectNoSecrets(body, forbidden);
}

/** No secret-bearing key at any depth, and none of the `forbidden` strings anywhere in the JSON. */
function expectNoSecrets(body: unknown, forbidden: string[] = []) {
  const keys: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        keys.push(k);
        walk(child);
      }
    }
  };
  walk(body);
  for (const k of SECRET_KEYS) expect(keys).not.toContain(k);
  const raw = JSON.stringify(body);
  expect(raw).not.toMatch(/PRIVATE KEY|PUBLIC KEY/);
  for (const f of forbidden.filter(Boolean)) expect(raw).not.toContain(f);
}

/** Standard Webhooks by hand: key = UTF-8 bytes of a secret without the whsec_ prefix. */
function handSignature(secret: string, hit: Hit): string {
  const key = secret.startsWith('whsec_')
    ? Buffer.from(secret.slice(6), 'base64')
    : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key)
    .update(`${String(hit.headers['webhook-id'])}.${String(hit.headers['webhook-timestamp'])}.${hit.body}`)
    .digest('base64')}`;
}

function expectOk(res: Response) {
  if (res.status >= 300) throw new Error(`expected 2xx, got HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body?.data;
}

const countBy = (xs: string[]) =>
  xs.reduce<Record<string, number>>((acc, x) => ({ ...acc, [x]: (acc[x] ?? 0) + 1 }), {});

// ---------------------------------------------------------------------------------------------

describe('webhooks', () => {
  let t: TestApp;
  const extraDbs: Array<{ drop: () => Promise<void> }> = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    t = await createTestApp(ENV);
  }, 120_000);

  afterEach(async () => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const rx of receivers.splice(0)) await rx.close();
  });

  afterAll(async () => {
    await t?.close();
    for (const db of extraDbs.splice(0)) await db.drop().catch(() => undefined);
  });

  /** Requests with a key against an app (t unless given). */
  const api = (key?: string, app: TestApp = t) => {
    const wrap = (req: ReturnType<ReturnType<TestApp['http']>['get']>) => {
      req.set('Accept', 'application/json');
      if (key !== undefined) req.set('X-API-KEY', key);
      return req;
    };
    return {
      get: (path: string) => wrap(app.http().get(`/api/v1${path}`)),
      post: (path: string, body?: unknown) => {
        const req = wrap(app.http().post(`/api/v1${path}`));
        return body === undefined ? req : req.send(body as object);
      },
      patch: (path: string, body: unknown) => wrap(app.http().patch(`/api/v1${path}`)).send(body as object),
      put: (path: string, body: unknown) => wrap(app.http().put(`/api/v1${path}`)).send(body as object),
      delete: (path: string) => wrap(app.http().delete(`/api/v1${path}`)),
    };
  };

  /** Every delivery of a project (all pages), newest first as listed. */
  async function deliveries(
    key: string,
    projectId: number,
    app: TestApp = t,
  ): Promise<Array<Record<string, any>>> {
    const all: Array<Record<string, any>> = [];
    let cursor: string | null = null;
    do {
      const page = expectSuccess(
        await api(key, app).get(
          `/project/${projectId}/webhook-deliveries?per_page=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        ),
      );
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  }

  async function deliveryOf(key: string, projectId: number, eventId: string, app: TestApp = t) {
    return (await deliveries(key, projectId, app)).find((d) => d.event_id === eventId);
  }

  /** A receiver, an owner and a project whose webhook_url points at the receiver. */
  async function setup(
    options: { script?: Script; secret?: string; app?: TestApp; project?: Record<string, unknown> } = {},
  ) {
    const app = options.app ?? t;
    const rx = await startReceiver(options.script);
    const secret = options.secret ?? newWhsec();
    const { user, key } = await makeAccount(app.app);
    const project = await makeProject(app, key, {
      webhook_url: rx.url,
      webhook_secret: secret,
      ...options.project,
    });
    return { rx, secret, user, key, project, pid: project.id as number };
  }

  /** Waits until the receiver holds `n` distinct webhook-ids, then returns the verified bodies. */
  async function received(
    rx: Receiver,
    n: number,
    secret: string,
    forbidden: string[] = [],
    timeoutMs = 10_000,
  ) {
    await waitFor(
      () => new Set(rx.ids()).size >= n,
      timeoutMs,
      `${n} distinct events at the receiver (have ${new Set(rx.ids()).size})`,
    );
    return rx.hits.map((h) => verifyHit(h, secret, forbidden));
  }

  // -------------------------------------------------------------------------------------------
  describe('payload, headers and signature', () => {
    it('sends {id,type,timestamp,data} with Standard Webhooks headers, verifiable with standardwebhooks', async () => {
      const { rx, secret, pid, project } = await setup();
      const [event] = await received(rx, 1, secret, [secret, secret.slice(6)]);
      const hit = rx.hits[0];
      expect(event.type).toBe('project.created');
      expect(event.data).toMatchObject({
        id: pid,
        name: project.name,
        slug: project.slug,
        webhook_url: rx.url,
      });
      // Timestamps in the API's form, whole seconds: the event's and the resource's, as the API wrote it.
      expect(event.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(event.data.created_at).toBe(project.created_at);
      expect(hit.headers['webhook-id']).toBe(event.id);
      expect(Math.abs(Number(hit.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
      expect(String(hit.headers['webhook-signature'])).toContain(handSignature(secret, hit));
      // A different secret does not verify.
      expect(() => new Webhook(newWhsec()).verify(hit.body, hit.headers as Record<string, string>)).toThrow();
      // Nor does a tampered body.
      expect(() =>
        new Webhook(secret).verify(
          hit.body.replace(project.name, 'tampered'),
          hit.headers as Record<string, string>,
        ),
      ).toThrow();
    });

    it('signs with the UTF-8 bytes of a secret that does not start with whsec_ (hand-computed HMAC)', async () => {
      const plain = `plain-sécret-${uniqueToken()}`;
      const { rx, pid, key } = await setup({ secret: plain });
      await waitFor(() => rx.hits.length >= 1, 10_000, 'first delivery');
      const hit = rx.hits[0];
      const body = JSON.parse(hit.body);
      expectEventShape(body, [plain]);
      expect(body.id).toBe(hit.headers['webhook-id']);
      expect(String(hit.headers['webhook-signature']).split(' ')).toContain(handSignature(plain, hit));
      // The same key, expressed as whsec_ + base64 of those bytes, is what standardwebhooks expects.
      expect(
        new Webhook(`whsec_${Buffer.from(plain, 'utf8').toString('base64')}`).verify(
          hit.body,
          hit.headers as Record<string, string>,
        ),
      ).toEqual(body);
      const [delivery] = await deliveries(key, pid);
      expect(delivery.event_id).toBe(body.id);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('events emitted by writes', () => {
    it('project.created/updated/paid/unpaid/locked/unlocked/deleted', async () => {
      const { rx, secret, key, pid, project } = await setup();
      expectOk(await api(key).patch(`/project/${pid}`, { description: 'changed' }));
      expectOk(await api(key).patch(`/project/${pid}`, { has_paid: true }));
      expectOk(await api(key).patch(`/project/${pid}`, { has_paid: false }));
      expectOk(await api(key).post(`/project/${pid}/lock`, { reason: 'overdue' }));
      expectOk(await api(key).post(`/project/${pid}/unlock`));
      expectOk(await api(key).delete(`/project/${pid}`));
      const events = await received(rx, 9, secret, [secret.slice(6)]);
      expect(countBy(events.map((e) => e.type))).toEqual({
        'project.created': 1,
        'project.updated': 3,
        'project.paid': 1,
        'project.unpaid': 1,
        'project.locked': 1,
        'project.unlocked': 1,
        'project.deleted': 1,
      });
      for (const e of events) expect(e.data.id).toBe(pid);
      const of = (type: string) => events.filter((e) => e.type === type);
      expect(of('project.paid')[0].data.has_paid).toBe(true);
      expect(of('project.unpaid')[0].data.has_paid).toBe(false);
      expect(of('project.locked')[0].data.locked_at).toMatch(ISO);
      expect(of('project.unlocked')[0].data.locked_at).toBeNull();
      expect(of('project.updated').map((e) => e.data.description)).toContain('changed');
      expect(of('project.deleted')[0].data).toMatchObject({ id: pid, slug: project.slug });
      expect(new Set(events.map((e) => e.id)).size).toBe(9);
    });

    it('domain.created/updated/paid/unpaid/deleted', async () => {
      const { rx, secret, key, pid } = await setup();
      const domain = await makeDomain(t, key, pid);
      expectOk(await api(key).patch(`/project/${pid}/domains/${domain.id}`, { has_paid: true }));
      expectOk(await api(key).patch(`/project/${pid}/domains/${domain.id}`, { has_paid: false }));
      expectOk(await api(key).delete(`/project/${pid}/domains/${domain.id}`));
      const events = (await received(rx, 7, secret, [secret.slice(6)])).filter((e) =>
        e.type.startsWith('domain.'),
      );
      expect(countBy(events.map((e) => e.type))).toEqual({
        'domain.created': 1,
        'domain.updated': 2,
        'domain.paid': 1,
        'domain.unpaid': 1,
        'domain.deleted': 1,
      });
      for (const e of events) expect(e.data).toMatchObject({ id: domain.id, domain: domain.domain });
      expect(events.find((e) => e.type === 'domain.paid')?.data.has_paid).toBe(true);
      expect(events.find((e) => e.type === 'domain.unpaid')?.data.has_paid).toBe(false);
    });

    it('license.created/updated/revoked/reactivated/deleted', async () => {
      const { rx, secret, key, pid } = await setup();
      const license = await makeLicense(t, key, pid);
      expectOk(
        await api(key).patch(`/project/${pid}/licenses/${license.id}`, { title: `Renamed ${uniqueToken()}` }),
      );
      expectOk(await api(key).post(`/project/${pid}/licenses/${license.id}/revoke`));
      expectOk(await api(key).post(`/project/${pid}/licenses/${license.id}/reactivate`));
      expectOk(await api(key).delete(`/project/${pid}/licenses/${license.id}`));
      const events = (await received(rx, 6, secret, [secret.slice(6)])).filter((e) =>
        e.type.startsWith('license.'),
      );
      expect(countBy(events.map((e) => e.type))).toEqual({
        'license.created': 1,
        'license.updated': 1,
        'license.revoked': 1,
        'license.reactivated': 1,
        'license.deleted': 1,
      });
      for (const e of events) expect(e.data.id).toBe(license.id);
      expect(events.find((e) => e.type === 'license.revoked')?.data.revoked_at).toMatch(ISO);
      expect(events.find((e) => e.type === 'license.reactivated')?.data.revoked_at).toBeNull();
    });

    it('racing revokes and reactivations of one license: one event per state change, as committed', async () => {
      const { rx, key, pid } = await setup();
      const license = await makeLicense(t, key, pid);
      const racing = (action: string) =>
        burst(8, () => api(key).post(`/project/${pid}/licenses/${license.id}/${action}`));
      await racing('revoke');
      const revoked = expectSuccess(await api(key).get(`/project/${pid}/licenses/${license.id}`)).revoked_at;
      await racing('reactivate');
      // A closing change, so that everything before it has been delivered once it arrives.
      expectOk(
        await api(key).patch(`/project/${pid}/licenses/${license.id}`, { title: `Renamed ${uniqueToken()}` }),
      );
      await waitFor(() => rx.events().some((e) => e.type === 'license.updated'), 10_000, 'license.updated');
      await sleep(300);
      const events = rx
        .events()
        .filter((e) => e.type === 'license.revoked' || e.type === 'license.reactivated');
      expect(countBy(events.map((e) => e.type))).toEqual({ 'license.revoked': 1, 'license.reactivated': 1 });
      expect(events.find((e) => e.type === 'license.revoked')?.data.revoked_at).toBe(revoked);
    });

    it('racing payment flips, locks and "make primary" calls: one event per state change, no deadlock', async () => {
      const { rx, key, pid } = await setup();
      const [a, b] = [await makeDomain(t, key, pid), await makeDomain(t, key, pid)];
      await burst(6, () => api(key).patch(`/project/${pid}`, { has_paid: true }));
      await burst(6, () => api(key).patch(`/project/${pid}/domains/${a.id}`, { has_paid: true }));
      // Two domains made primary at once, both ways round: each call answers, one of them wins.
      await burst(6, (i) =>
        api(key).patch(`/project/${pid}/domains/${i % 2 ? a.id : b.id}`, { is_primary: true }),
      );
      await burst(6, () => api(key).post(`/project/${pid}/lock`, { reason: 'overdue' }));
      await burst(6, () => api(key).post(`/project/${pid}/unlock`));
      const domains = expectSuccess(await api(key).get(`/project/${pid}/domains`)).data as Array<{
        is_primary: boolean;
      }>;
      expect(domains.filter((d) => d.is_primary)).toHaveLength(1);
      expectOk(await api(key).patch(`/project/${pid}`, { description: `closing ${uniqueToken()}` }));
      await waitFor(
        () =>
          rx.events().some((e) => e.type === 'project.updated' && e.data.description?.startsWith('closing')),
        10_000,
        'closing update',
      );
      await sleep(300);
      const flips = rx
        .events()
        .filter((e) =>
          ['project.paid', 'domain.paid', 'project.locked', 'project.unlocked'].includes(e.type),
        );
      expect(countBy(flips.map((e) => e.type))).toEqual({
        'project.paid': 1,
        'domain.paid': 1,
        'project.locked': 1,
        'project.unlocked': 1,
      });
    });

    it('racing deletes: one answers, the others 404, and each thing is announced deleted once', async () => {
      const { rx, key, pid } = await setup();
      const domain = await makeDomain(t, key, pid);
      const license = await makeLicense(t, key, pid);
      const injectable = expectOk(
        await api(key).post(`/project/${pid}/injectables`, {
          slug: `inj-${uniqueToken()}`,
          content: 'x',
          secret: 's3cret-s3cret',
          type: 'snippet',
        }),
      );
      const racing = async (path: string) => {
        const answers = await Promise.all(Array.from({ length: 6 }, () => api(key).delete(path)));
        const statuses = answers.map((res) => res.status).sort();
        expect(statuses.filter((s) => s < 300)).toHaveLength(1);
        expect(statuses.filter((s) => s >= 300)).toEqual([404, 404, 404, 404, 404]);
      };
      await racing(`/project/${pid}/domains/${domain.id}`);
      await racing(`/project/${pid}/licenses/${license.id}`);
      await racing(`/project/${pid}/injectables/${injectable.id}`);
      // The project last: its deletion is the closing change (a deleted project sends nothing more).
      await racing(`/project/${pid}`);
      await waitFor(() => rx.events().some((e) => e.type === 'project.deleted'), 10_000, 'project.deleted');
      await sleep(300);
      const deleted = rx.events().filter((e) => e.type.endsWith('.deleted'));
      expect(countBy(deleted.map((e) => e.type))).toEqual({
        'domain.deleted': 1,
        'license.deleted': 1,
        'injectable.deleted': 1,
        'project.deleted': 1,
      });
    });

    it('license.usage_limit_reached: once, when the last daily use is taken — not again on the refused call', async () => {
      const { rx, secret, key, pid } = await setup({ project: { has_paid: true } });
      const license = await makeLicense(t, key, pid, { max_usage_per_day: 2 });
      const check = () =>
        t
          .http()
          .post('/api/v1/project/has-paid?action=check_project')
          .set('Accept', 'application/json')
          .set('X-LICENSE-KEY', license.uuid as string);
      await received(rx, 2, secret); // project.created, license.created
      expect(expectSuccess(await check()).has_paid).toBe(true);
      await sleep(300);
      expect(rx.events().map((e) => e.type)).not.toContain('license.usage_limit_reached');
      expect(expectSuccess(await check()).has_paid).toBe(true);
      await received(rx, 3, secret);
      expectError(await check(), 429);
      await sleep(500);
      const events = rx.hits.map((h) => verifyHit(h, secret, [secret.slice(6)]));
      const reached = events.filter((e) => e.type === 'license.usage_limit_reached');
      expect(reached).toHaveLength(1);
      expect(reached[0].data).toMatchObject({
        license_id: license.id,
        project_id: pid,
        max_usage_per_day: 2,
      });
      expect(
        (await deliveries(key, pid)).filter((d) => d.type === 'license.usage_limit_reached'),
      ).toHaveLength(1);
    });

    it('license.usage_limit_reached under racing calls: one event, committed with the last use (limits 1 and 5)', async () => {
      const { rx, secret, key, pid } = await setup({ project: { has_paid: true } });
      await received(rx, 1, secret); // project.created
      for (const max of [1, 5]) {
        const license = await makeLicense(t, key, pid, { max_usage_per_day: max });
        const statuses = await Promise.all(
          Array.from({ length: 12 }, () =>
            t
              .http()
              .post('/api/v1/project/has-paid?action=check_project')
              .set('X-LICENSE-KEY', license.uuid as string),
          ),
        );
        expect(statuses.filter((r) => r.status === 200)).toHaveLength(max);
        expect(statuses.filter((r) => r.status === 429)).toHaveLength(12 - max);
        // One more event per license: the first license's, then the second's.
        const reached = (await deliveries(key, pid)).filter((d) => d.type === 'license.usage_limit_reached');
        expect(reached).toHaveLength(max === 1 ? 1 : 2);
      }
    });

    it('injectable.created/updated/deleted, without the content or its secret', async () => {
      const { rx, secret, key, pid } = await setup();
      const content = `<b>very secret payload ${uniqueToken()}</b>`;
      const injSecret = `inj-secret-${uniqueToken()}`;
      const created = expectSuccess(
        await api(key).post(`/project/${pid}/injectables`, {
          slug: `inj-${uniqueToken()}`,
          content,
          secret: injSecret,
          type: 'snippet',
        }),
        201,
      );
      const content2 = `<i>second secret payload ${uniqueToken()}</i>`;
      const injSecret2 = `inj-secret2-${uniqueToken()}`;
      const updated = expectOk(
        await api(key).put(`/project/${pid}/injectables/${created.id}`, {
          title: 'Renamed',
          content: content2,
          secret: injSecret2,
        }),
      );
      expectOk(await api(key).delete(`/project/${pid}/injectables/${created.id}`));
      const forbidden = [
        secret.slice(6),
        content,
        injSecret,
        content2,
        injSecret2,
        created.encrypted_content,
        updated.encrypted_content,
        created.content,
        updated.content,
      ];
      const events = (await received(rx, 4, secret, forbidden)).filter((e) =>
        e.type.startsWith('injectable.'),
      );
      expect(countBy(events.map((e) => e.type))).toEqual({
        'injectable.created': 1,
        'injectable.updated': 1,
        'injectable.deleted': 1,
      });
      for (const e of events)
        expect(e.data).toMatchObject({ id: created.id, slug: created.slug, project_id: pid });
      expect(events.find((e) => e.type === 'injectable.updated')?.data.title).toBe('Renamed');
      // The resource as the API returns it, timestamps included, less the payload.
      const {
        encrypted_content: _payload,
        content: _content,
        file_path: _file,
        ...shown
      } = created as Record<string, unknown>;
      expect(events.find((e) => e.type === 'injectable.created')?.data).toEqual(shown);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('when nothing is sent', () => {
    it('no webhook_url, or the owner has webhooks off: no outbox rows, nothing received', async () => {
      const rx = await startReceiver();
      // A project without a webhook_url.
      const { key } = await makeAccount(t.app);
      const bare = await makeProject(t, key, { webhook_secret: newWhsec() });
      await makeLicense(t, key, bare.id);
      expectOk(await api(key).patch(`/project/${bare.id}`, { has_paid: true }));
      // An owner with webhooks off, with a project pointing at the receiver.
      const off = await makeUser(t.app, { webhooks_enabled: false });
      const offKey = await makeApiKey(t.app, off);
      const muted = await makeProject(t, offKey, { webhook_url: rx.url, webhook_secret: newWhsec() });
      await makeLicense(t, offKey, muted.id);
      await makeDomain(t, offKey, muted.id);
      expectOk(await api(offKey).patch(`/project/${muted.id}`, { has_paid: true }));
      // A control event after them on the same receiver proves the dispatcher ran meanwhile.
      const secret = newWhsec();
      const { key: controlKey } = await makeAccount(t.app);
      const control = await makeProject(t, controlKey, { webhook_url: rx.url, webhook_secret: secret });
      // A refused write records nothing either.
      expectError(await api(controlKey).patch(`/project/${control.id}`, { name: '' }), 422);
      expectError(await api(controlKey).patch(`/project/${control.id}`, { slug: bare.slug }), 422);
      await received(rx, 1, secret);
      await sleep(300);
      expect(rx.hits).toHaveLength(1);
      expect(rx.events()[0].type).toBe('project.created');
      expect((await deliveries(controlKey, control.id)).map((d) => d.type)).toEqual(['project.created']);
      expect(await deliveries(key, bare.id)).toEqual([]);
      expect(await deliveries(offKey, muted.id)).toEqual([]);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('retries and the delivery log', () => {
    // The schedule's seconds pass on a clock the tests move: an app of its own, whose dispatcher
    // decides what is due by that clock (its polls go on every WEBHOOK_POLL_MS as usual).
    const clock = new ManualClock(Date.now());
    let c: TestApp;
    beforeAll(async () => {
      c = await createTestApp(ENV, { clock });
    }, 120_000);
    afterAll(async () => c?.close());
    // Each test starts at the real time: events are stamped by the clock.
    beforeEach(() => clock.set(new Date()));

    /** One fill at the clock's now, after which nothing due is left unclaimed. */
    const poll = () => c.app.get(WebhookDispatcher).fillNow();
    /** The delivery once `attempts` attempts are recorded and none is under way. */
    const attempted = (key: string, pid: number, id: string, attempts: number) =>
      waitFor(
        async () => {
          const d = await deliveryOf(key, pid, id, c);
          return d && d.attempts === attempts && d.status !== 'delivering' ? d : null;
        },
        5_000,
        `attempt ${attempts} recorded`,
      );
    /** Not sent before `at` (the clock just short of it), then sent at `at`: the next attempt. */
    async function dueAt(rx: Receiver, at: number) {
      const hits = rx.hits.length;
      clock.set(new Date(at - 500));
      await poll();
      expect(rx.hits).toHaveLength(hits);
      clock.set(new Date(at));
      await poll();
      await waitFor(() => rx.hits.length > hits, 5_000, `attempt ${hits + 1}`);
    }

    it('fails twice (500) then succeeds: 3 attempts, the same webhook-id, a full attempt log', async () => {
      const started = clock.nowMs();
      const { rx, secret, key, pid } = await setup({
        app: c,
        script: (hit) => ({ status: hit.n <= 2 ? 500 : 200 }),
      });
      await waitFor(() => rx.hits.length >= 1, 10_000, 'the first attempt');
      const id = rx.hits[0].id;
      const next = async (attempts: number) =>
        Date.parse((await attempted(key, pid, id, attempts)).next_attempt_at as string);
      // The schedule (here 1 s, 2 s, 3 s) counts from the first try, −10 % jitter at most.
      const second = await next(1);
      expect(second - started).toBeGreaterThanOrEqual(900);
      await dueAt(rx, second);
      const third = await next(2);
      expect(third - started).toBeGreaterThanOrEqual(1_800);
      await dueAt(rx, third);
      const delivery = await waitFor(
        async () => {
          const d = await deliveryOf(key, pid, id, c);
          return d?.status === 'succeeded' ? d : null;
        },
        5_000,
        'delivery succeeded',
      );
      for (const hit of rx.hits) verifyHit(hit, secret);
      expect(rx.ids()).toEqual([id, id, id]);
      expect(delivery).toMatchObject({
        project_id: pid,
        event_id: id,
        type: 'project.created',
        status: 'succeeded',
        attempts: 3,
      });
      expect(delivery.payload).toEqual(JSON.parse(rx.hits[0].body));
      expect(delivery).not.toHaveProperty('claimed_by');
      expect(delivery).not.toHaveProperty('claimed_until');
      const log = delivery.attempt_log as Array<Record<string, any>>;
      expect(log).toHaveLength(3);
      expect(log.map((a) => a.outcome)).toEqual(['retrying', 'retrying', 'succeeded']);
      expect(log.map((a) => a.response_code)).toEqual([500, 500, 200]);
      expect(log.map((a) => a.attempt)).toEqual([1, 2, 3]);
      for (const a of log) {
        expect(typeof a.duration_ms).toBe('number');
        expect(a.duration_ms).toBeGreaterThanOrEqual(0);
        expect(a.url).toBe(rx.url);
      }
      expect(log[0].next_attempt_at).toMatch(ISO);
      expect(log[1].next_attempt_at).toMatch(ISO);
      expect(Date.parse(log[0].next_attempt_at)).toBe(second);
      expect(Date.parse(log[1].next_attempt_at)).toBe(third);
      expect(log[2].next_attempt_at).toBeNull();
      expect(log[2].error).toBeNull();
    });

    it('exhausted retries → failed; manual retry → pending, then succeeded; 404 unknown, 403 other owner', async () => {
      let answer = 500;
      const { rx, secret, key, pid } = await setup({ app: c, script: () => ({ status: answer }) });
      await waitFor(() => rx.hits.length >= 1, 10_000, 'the first attempt');
      const id = rx.hits[0].id;
      for (let attempts = 1; attempts < 4; attempts++)
        await dueAt(rx, Date.parse((await attempted(key, pid, id, attempts)).next_attempt_at as string));
      const failed = await waitFor(
        async () => {
          const d = await deliveryOf(key, pid, id, c);
          return d?.status === 'failed' ? d : null;
        },
        5_000,
        'delivery failed',
      );
      expect(rx.hits).toHaveLength(4);
      expect(rx.ids()).toEqual([id, id, id, id]);
      expect(failed).toMatchObject({ status: 'failed', attempts: 4, last_status_code: 500 });
      expect(failed.attempt_log.map((a: any) => a.outcome)).toEqual([
        'retrying',
        'retrying',
        'retrying',
        'failed',
      ]);
      expect(failed.attempt_log[3].next_attempt_at).toBeNull();
      expect(failed.next_attempt_at).toBeNull();

      // Not retried on its own, however long after.
      clock.advance(60 * 60_000);
      await poll();
      expect(rx.hits).toHaveLength(4);

      // Access rules first (they must not queue anything).
      expectError(await api(key, c).post(`/project/${pid}/webhook-deliveries/99999999/retry`), 404);
      const other = await makeAccount(c.app);
      expectError(await api(other.key, c).post(`/project/${pid}/webhook-deliveries/${failed.id}/retry`), 403);
      expectError(await api(other.key, c).get(`/project/${pid}/webhook-deliveries`), 403);
      // A delivery of another project of the same owner is not found under this one.
      const sibling = await makeProject(c, key);
      expectError(
        await api(key, c).post(`/project/${sibling.id}/webhook-deliveries/${failed.id}/retry`),
        404,
      );
      await poll();
      expect(rx.hits).toHaveLength(4);

      answer = 200;
      const res = await api(key, c).post(`/project/${pid}/webhook-deliveries/${failed.id}/retry`);
      const queued = expectSuccess(res, 200);
      expect(queued).toMatchObject({ id: failed.id, event_id: id, status: 'pending' });
      const done = await waitFor(
        async () => {
          const d = await deliveryOf(key, pid, id, c);
          return d?.status === 'succeeded' ? d : null;
        },
        5_000,
        'delivery succeeded after retry',
      );
      expect(rx.hits).toHaveLength(5);
      expect(rx.hits[4].id).toBe(id);
      for (const hit of rx.hits) verifyHit(hit, secret);
      expect(done.attempts).toBe(5);
      expect(done.attempt_log.map((a: any) => a.outcome)).toEqual([
        'retrying',
        'retrying',
        'retrying',
        'failed',
        'succeeded',
      ]);
      expect(done.attempt_log[4].response_code).toBe(200);
    });

    it('honours Retry-After when longer than the schedule (503, Retry-After: 3)', async () => {
      const started = clock.nowMs();
      const { rx, secret, key, pid } = await setup({
        app: c,
        script: (hit) => (hit.n === 1 ? { status: 503, headers: { 'Retry-After': '3' } } : { status: 200 }),
      });
      await waitFor(() => rx.hits.length >= 1, 10_000, 'the first attempt');
      const id = rx.hits[0].id;
      const next = Date.parse((await attempted(key, pid, id, 1)).next_attempt_at as string);
      // The schedule alone would retry after ≤ 1.1 s; Retry-After says 3 s, counted from the answer.
      expect(next - started).toBeGreaterThanOrEqual(3_000);
      await dueAt(rx, next);
      for (const hit of rx.hits) verifyHit(hit, secret);
      const d = await waitFor(
        async () => {
          const x = await deliveryOf(key, pid, id, c);
          return x?.status === 'succeeded' ? x : null;
        },
        5_000,
        'delivery succeeded',
      );
      expect(d.attempt_log.map((a: any) => a.response_code)).toEqual([503, 200]);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('answers cut short: the status decides', () => {
    it('a 200 whose body is cut off (Content-Length not reached, or a chunked body reset) counts as delivered, once', async () => {
      const cuts: Array<(res: ServerResponse) => void> = [
        (res) => {
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
          res.write('ok');
          setTimeout(() => res.destroy(), 50);
        },
        (res) => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial');
          setTimeout(() => res.destroy(), 50);
        },
        // The status line and headers, then the connection dropped at once.
        (res) => {
          res.socket?.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok');
          res.socket?.destroy();
        },
      ];
      for (const cut of cuts) {
        const { rx, secret, key, pid } = await setup({ script: () => ({ custom: cut }) });
        const done = await waitFor(
          async () => {
            const d = rx.hits[0] && (await deliveryOf(key, pid, rx.hits[0].id));
            return d?.status === 'succeeded' ? d : null;
          },
          10_000,
          'delivery succeeded',
        );
        await sleep(300);
        expect(rx.hits).toHaveLength(1);
        verifyHit(rx.hits[0], secret);
        expect(done.attempt_log.map((a: any) => [a.outcome, a.response_code, a.error])).toEqual([
          ['succeeded', 200, null],
        ]);
      }
    });

    it('a 200 whose body stops arriving counts as delivered at once, without waiting for the timeout', async () => {
      const { rx, key, pid } = await setup({
        script: () => ({
          custom: (res) => {
            res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(1 << 20) });
            res.write('ok'); // and never more
          },
        }),
      });
      const done = await waitFor(
        async () => {
          const [d] = await deliveries(key, pid);
          return d?.status === 'succeeded' ? d : null;
        },
        10_000,
        'delivery succeeded',
      );
      expect(rx.hits).toHaveLength(1);
      expect(done.attempt_log.map((a: any) => [a.outcome, a.response_code, a.error])).toEqual([
        ['succeeded', 200, null],
      ]);
      expect(done.attempt_log[0].duration_ms).toBeLessThan(1_000);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('SSRF (WEBHOOK_ALLOW_PRIVATE off, the default)', () => {
    /** Every private form, literal or by name, with the reason the 422 gives. */
    const PRIVATE: Array<[string, string]> = [
      ['http://127.0.0.1:1234/x', 'points at a private address (127.0.0.1)'],
      ['http://10.0.0.5/x', 'points at a private address (10.0.0.5)'],
      ['http://169.254.169.254/latest', 'points at a private address (169.254.169.254)'],
      ['http://100.64.0.1/x', 'points at a private address (100.64.0.1)'],
      ['http://0.0.0.0/x', 'points at a private address (0.0.0.0)'],
      ['http://localhost/x', 'points at localhost'],
      ['http://[::1]/x', 'points at a private address (::1)'],
      ['http://[fd00::1]/x', 'points at a private address (fd00::1)'],
      ['http://[fe80::1]/x', 'points at a private address (fe80::1)'],
      ['http://[::ffff:127.0.0.1]/x', 'points at a private address (::ffff:7f00:1)'],
      ['http://[::127.0.0.1]/x', 'points at a private address (::7f00:1)'],
      ['http://[64:ff9b::10.0.0.1]/x', 'points at a private address (64:ff9b::a00:1)'],
      ['http://[2002:c0a8:101::]/x', 'points at a private address (2002:c0a8:101::)'],
      ['https://intranet.example.test/x', 'resolves to a private address (10.1.2.3)'],
      ['https://mapped.example.test/x', 'resolves to a private address (::ffff:127.0.0.1)'],
    ];
    const PUBLIC = [
      'https://93.184.216.34/hook',
      'http://8.8.8.8/hook',
      'https://[2606:4700:4700::1111]/hook',
      'https://hooks.example.test/hook',
    ];
    /** The test's DNS: name → addresses, or a function of how many times it was asked. */
    let dns: Record<string, LookupAddress[] | ((asked: number) => LookupAddress[] | 'hang')> = {};
    const asked: string[] = [];
    let s: TestApp;
    beforeAll(async () => {
      const { WEBHOOK_ALLOW_PRIVATE: _drop, ...rest } = ENV;
      s = await createTestApp(rest);
      expect(s.config.env.WEBHOOK_ALLOW_PRIVATE).toBe(false);
      // Every lookup, on write and when a delivery connects, goes through here.
      s.app.get(WebhookTargets).resolve = (host: string) => {
        asked.push(host);
        const entry = dns[host];
        const answer = typeof entry === 'function' ? entry(asked.filter((h) => h === host).length) : entry;
        if (answer === 'hang') return new Promise<never>(() => undefined);
        if (!answer)
          return Promise.reject(
            Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }),
          );
        return Promise.resolve(answer);
      };
    });
    afterAll(async () => s?.close());
    afterEach(() => {
      dns = {};
      asked.length = 0;
    });
    const at = (address: string): LookupAddress[] => [{ address, family: address.includes(':') ? 6 : 4 }];

    it('refuses every private form on create, PATCH and PUT with 422 errors.webhook_url, naming the address', async () => {
      dns = {
        'intranet.example.test': at('10.1.2.3'),
        'mapped.example.test': [...at('93.184.216.34'), ...at('::ffff:127.0.0.1')],
      };
      const { key } = await makeAccount(s.app);
      const expectRefused = (res: Response, url: string, reason: string) => {
        expect({ url, status: res.status }).toEqual({ url, status: 422 });
        expectError(res, 422, ['webhook_url']);
        expect(res.body.errors.webhook_url).toContain(
          `The webhook url ${reason}; set WEBHOOK_ALLOW_PRIVATE=true to allow it.`,
        );
      };
      for (const [url, reason] of PRIVATE)
        expectRefused(
          await api(key, s).post('/project', { name: `P ${uniqueToken()}`, webhook_url: url }),
          url,
          reason,
        );
      expect(expectSuccess(await api(key, s).get('/project')).data).toEqual([]);
      const project = await makeProject(s, key);
      for (const [url, reason] of PRIVATE) {
        expectRefused(await api(key, s).patch(`/project/${project.id}`, { webhook_url: url }), url, reason);
        expectRefused(
          await api(key, s).put(`/project/${project.id}`, { name: project.name, webhook_url: url }),
          url,
          reason,
        );
      }
      expect(expectSuccess(await api(key, s).get(`/project/${project.id}`)).webhook_url).toBeNull();
    });

    it('accepts public IPv4 and IPv6 addresses, and names that resolve to them, on create, PATCH and PUT', async () => {
      dns = { 'hooks.example.test': [...at('93.184.216.34'), ...at('2606:2800:220:1:248:1893:25c8:1946')] };
      // Webhooks off for this owner: nothing is sent to these real public addresses.
      const { key } = await makeAccount(s.app, { webhooks_enabled: false });
      for (const url of PUBLIC) {
        const created = await api(key, s).post('/project', { name: `P ${uniqueToken()}`, webhook_url: url });
        expect({ url, status: created.status }).toEqual({ url, status: 201 });
        const id = created.body.data.id as number;
        expect(
          expectSuccess(await api(key, s).patch(`/project/${id}`, { webhook_url: url })).webhook_url,
        ).toBe(url);
        expect(
          expectSuccess(
            await api(key, s).put(`/project/${id}`, { name: `P ${uniqueToken()}`, webhook_url: url }),
          ).webhook_url,
        ).toBe(url);
      }
      expect(asked.filter((h) => h === 'hooks.example.test')).toHaveLength(3);
    });

    it('delivers to a public receiver, signed, and refuses a private one with the documented message', async () => {
      const rx = await startReceiver();
      dns = { 'public.example.test': at('93.184.216.34'), 'private.example.test': at('10.1.2.3') };
      // The network stand-in: the connection's own lookup checks the public address as it always does,
      // then the socket is routed to the receiver on loopback, as the internet would route it there.
      const targets = s.app.get<WebhookTargets, { lookup: LookupFunction }>(WebhookTargets);
      const checked = targets.lookup;
      const handed: string[] = [];
      targets.lookup = (host, options, callback) =>
        checked(host, options, (error, address, family) => {
          if (error) return callback(error, '', 0);
          handed.push(...(Array.isArray(address) ? address.map((a) => a.address) : [address]));
          return options.all
            ? callback(null, [{ address: '127.0.0.1', family: 4 }])
            : callback(null, '127.0.0.1', family ?? 4);
        });
      try {
        const secret = newWhsec();
        const { key } = await makeAccount(s.app);
        const url = `http://public.example.test:${rx.port}/hook`;
        const project = await makeProject(s, key, { webhook_url: url, webhook_secret: secret });
        const [event] = await received(rx, 1, secret);
        expect(event).toMatchObject({ type: 'project.created', data: { id: project.id, webhook_url: url } });
        expect(rx.hits[0].headers.host).toBe(`public.example.test:${rx.port}`);
        expect(handed).toEqual(['93.184.216.34']);
        const [delivery] = await deliveries(key, project.id, s);
        expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200 });
        // Checked on write, and again by the connection's lookup.
        expect(asked.filter((h) => h === 'public.example.test')).toHaveLength(2);

        const message =
          'The webhook url resolves to a private address (10.1.2.3); set WEBHOOK_ALLOW_PRIVATE=true to allow it.';
        const refused = await api(key, s).patch(`/project/${project.id}`, {
          webhook_url: 'https://private.example.test/hook',
        });
        expectError(refused, 422, ['webhook_url']);
        expect({ message: refused.body.message, errors: refused.body.errors }).toEqual({
          message,
          errors: { webhook_url: [message] },
        });
        expect(expectSuccess(await api(key, s).get(`/project/${project.id}`)).webhook_url).toBe(url);
        // The refused write announced nothing: the receiver still has its one event.
        await sleep(300);
        expect(rx.hits).toHaveLength(1);
      } finally {
        targets.lookup = checked;
      }
    });

    it('a name that does not resolve, or not within WEBHOOK_DNS_TIMEOUT_MS, is accepted on write; its deliveries fail closed', async () => {
      dns = { 'slow.example.test': () => 'hang' };
      expect(s.config.env.WEBHOOK_DNS_TIMEOUT_MS).toBe(2000);
      const { key } = await makeAccount(s.app);
      const missing = await makeProject(s, key, { webhook_url: 'https://missing.example.test/hook' });
      const started = Date.now();
      const slow = await makeProject(s, key, { webhook_url: 'https://slow.example.test/hook' });
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(1_900);
      expect(took).toBeLessThan(6_000);
      const first = async (projectId: number) =>
        waitFor(
          async () => {
            const [d] = await deliveries(key, projectId, s);
            return d && d.attempts >= 1 ? d : null;
          },
          10_000,
          'first attempt logged',
        );
      const lost = await first(missing.id);
      expect(lost.attempt_log[0]).toMatchObject({ response_code: null, outcome: 'retrying' });
      expect(lost.attempt_log[0].error).toMatch(/ENOTFOUND/);
      const timedOut = await first(slow.id);
      expect(timedOut.attempt_log[0]).toMatchObject({ response_code: null, outcome: 'retrying' });
      // WEBHOOK_TIMEOUT_MS here (1 s) ends the attempt before the 2 s DNS bound.
      expect(timedOut.attempt_log[0].error).toBe('Timed out after 1000 ms');
    });

    it('DNS rebinding: a name that resolved to a public address on write and to a private one at delivery is refused as the socket connects', async () => {
      const rx = await startReceiver();
      // Public when the write checks it, the receiver's loopback address ever after.
      dns = { 'rebind.example.test': (n) => (n === 1 ? at('93.184.216.34') : at('127.0.0.1')) };
      const { key } = await makeAccount(s.app);
      const project = await makeProject(s, key, {
        webhook_url: `http://rebind.example.test:${rx.port}/hook`,
        webhook_secret: newWhsec(),
      });
      const refused = await waitFor(
        async () => {
          const [d] = await deliveries(key, project.id, s);
          return d && d.attempts >= 2 ? d : null;
        },
        10_000,
        'two attempts logged',
      );
      expect(refused.type).toBe('project.created');
      for (const attempt of refused.attempt_log.slice(0, 2)) {
        expect(attempt).toMatchObject({
          response_code: null,
          outcome: 'retrying',
          url: `http://rebind.example.test:${rx.port}/hook`,
        });
        expect(attempt.error).toBe(
          'Refused: the webhook URL resolves to a private address (127.0.0.1) (set WEBHOOK_ALLOW_PRIVATE=true to allow).',
        );
      }
      // One lookup on write and exactly one per attempt: the connection's own, nothing that could answer differently.
      expect(asked.filter((h) => h === 'rebind.example.test').length).toBe(1 + refused.attempts);
      await sleep(300);
      expect(rx.hits).toHaveLength(0);
      expect(rx.maxOpen).toBe(0);
    });

    it('a private address written straight into the DB is refused at delivery: literal or by name, the receiver gets nothing', async () => {
      const rx = await startReceiver();
      dns = { 'inside.example.test': at('127.0.0.1') };
      const { key } = await makeAccount(s.app);
      const cases: Array<[string, string]> = [
        [`http://127.0.0.1:${rx.port}/hook`, 'points at a private address (127.0.0.1)'],
        [`http://[::ffff:127.0.0.1]:${rx.port}/hook`, 'points at a private address (::ffff:7f00:1)'],
        [`http://[::127.0.0.1]:${rx.port}/hook`, 'points at a private address (::7f00:1)'],
        [`http://inside.example.test:${rx.port}/hook`, 'resolves to a private address (127.0.0.1)'],
      ];
      for (const [url, reason] of cases) {
        const project = await makeProject(s, key, { webhook_secret: newWhsec() });
        await s.dataSource.query('UPDATE projects SET webhook_url = ? WHERE id = ?', [url, project.id]);
        await makeLicense(s, key, project.id);
        const delivery = await waitFor(
          async () => {
            const [d] = await deliveries(key, project.id, s);
            return d && d.attempts >= 1 ? d : null;
          },
          10_000,
          `first attempt to ${url} logged`,
        );
        expect(delivery.type).toBe('license.created');
        expect(delivery.attempt_log[0].response_code).toBeNull();
        expect(delivery.attempt_log[0].error).toBe(
          `Refused: the webhook URL ${reason} (set WEBHOOK_ALLOW_PRIVATE=true to allow).`,
        );
        expect(delivery.last_error).toBe(delivery.attempt_log[0].error);
        expect(delivery.status).not.toBe('succeeded');
      }
      await sleep(300);
      expect(rx.hits).toHaveLength(0);
      expect(rx.maxOpen).toBe(0);
    });
  });

  describe('connect-time lookup (WEBHOOK_ALLOW_PRIVATE=true)', () => {
    it('the socket connects to the address the lookup handed over, and sends the URL host name', async () => {
      const targets = t.app.get(WebhookTargets);
      const asked: string[] = [];
      const real = targets.resolve.bind(targets);
      targets.resolve = (host: string) => {
        asked.push(host);
        return Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
      };
      try {
        const rx = await startReceiver();
        const secret = newWhsec();
        const { key } = await makeAccount(t.app);
        await makeProject(t, key, {
          webhook_url: `http://receiver.example.test:${rx.port}/hook`,
          webhook_secret: secret,
        });
        const [event] = await received(rx, 1, secret);
        expect(event.type).toBe('project.created');
        expect(rx.hits[0].headers.host).toBe(`receiver.example.test:${rx.port}`);
        // No lookup on write (private targets are allowed), one as the delivery connected.
        expect(asked).toEqual(['receiver.example.test']);
      } finally {
        targets.resolve = real;
      }
    });
  });

  // -------------------------------------------------------------------------------------------
  describe('durability and concurrency', () => {
    /** A fresh database of this test's own, dropped in afterAll. */
    async function ownDatabase() {
      const db = await createTestDatabase();
      extraDbs.push(db);
      return db.url;
    }
    // Each test's apps are closed when it ends: their dispatchers would poll on through the next
    // tests, and every open app holds a listener per shutdown signal on this process.
    const apps: TestApp[] = [];
    afterEach(async () => {
      for (const a of apps.splice(0).reverse()) await a.close().catch(() => undefined);
    });
    async function app(env: Record<string, string>, databaseUrl: string, clock?: ManualClock) {
      const a = await createTestApp(env, { databaseUrl, clock });
      apps.push(a);
      return a;
    }

    it('a restart loses nothing: events recorded with no dispatcher are all delivered, once, by the next instance', async () => {
      const url = await ownDatabase();
      const a = await app({ ...ENV, WEBHOOK_DISPATCHER: 'false' }, url);
      const { rx, secret, key, pid } = await setup({ app: a });
      for (let i = 0; i < 4; i++) await makeLicense(a, key, pid);
      expectOk(await api(key, a).patch(`/project/${pid}`, { has_paid: true }));
      // 1 project.created + 4 license.created + project.updated + project.paid
      const recorded = await deliveries(key, pid, a);
      expect(recorded).toHaveLength(7);
      expect(recorded.every((d) => d.status === 'pending' && d.attempts === 0)).toBe(true);
      await sleep(500);
      expect(rx.hits).toHaveLength(0);
      await a.app.close();
      apps.splice(apps.indexOf(a), 1);

      const b = await app(ENV, url);
      await received(rx, 7, secret);
      await waitFor(
        async () => (await deliveries(key, pid, b)).every((d) => d.status === 'succeeded'),
        5_000,
        'all succeeded',
      );
      await sleep(300);
      expect(rx.hits).toHaveLength(7);
      expect(new Set(rx.ids())).toEqual(new Set(recorded.map((d) => d.event_id)));
      expect(countBy(rx.events().map((e) => e.type))).toEqual({
        'project.created': 1,
        'license.created': 4,
        'project.updated': 1,
        'project.paid': 1,
      });
    });

    it('a dispatcher killed mid-delivery: the claim expires and another delivers the same webhook-id', async () => {
      const url = await ownDatabase();
      const a = await app({ ...ENV, WEBHOOK_DISPATCHER: 'false' }, url);
      const { rx, secret, key, pid } = await setup({
        app: a,
        script: (hit) => (hit.n === 1 ? { hang: true } : { status: 200 }),
      });
      const [recorded] = await deliveries(key, pid, a);
      expect(recorded).toMatchObject({ type: 'project.created', status: 'pending' });

      const child = spawn(process.execPath, ['dist/src/dispatcher.js'], {
        env: {
          ...process.env,
          NODE_ENV: 'test',
          DATABASE_URL: url,
          APP_KEY: a.config.appKey.toString('base64'),
          WEBHOOK_ALLOW_PRIVATE: 'true',
          WEBHOOK_TIMEOUT_MS: '1000',
          WEBHOOK_POLL_MS: '100',
          WEBHOOK_RETRY_SCHEDULE: '1,1,1',
          LOG_LEVEL: 'silent',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      try {
        await waitFor(() => rx.hits.length >= 1, 15_000, 'the child dispatcher to send');
      } catch (error) {
        throw new Error(`${(error as Error).message}; child exit=${child.exitCode} stderr=${stderr}`, {
          cause: error,
        });
      }
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      expect(rx.hits[0].id).toBe(recorded.event_id);
      const inFlight = await deliveryOf(key, pid, recorded.event_id, a);
      expect(inFlight?.status).toBe('delivering');

      // Another instance, on a clock it can move past the claim (WEBHOOK_TIMEOUT_MS + 5 s).
      const clock = new ManualClock(Date.now());
      const b = await app(ENV, url, clock);
      const { claimed_until: until } = await b.dataSource
        .getRepository(WebhookDeliveryEntity)
        .findOneByOrFail({ event_id: recorded.event_id as string });
      expect(until!.getTime()).toBeGreaterThan(clock.nowMs());
      await b.app.get(WebhookDispatcher).fillNow();
      expect(rx.hits).toHaveLength(1);
      clock.set(new Date(until!.getTime() + 1000));
      await b.app.get(WebhookDispatcher).fillNow();
      await waitFor(() => rx.hits.length >= 2, 5_000, 'redelivery after the claim expired');
      const done = await waitFor(
        async () => {
          const d = await deliveryOf(key, pid, recorded.event_id, a);
          return d?.status === 'succeeded' ? d : null;
        },
        5_000,
        'delivery succeeded',
      );
      await sleep(300);
      expect(rx.ids()).toEqual([recorded.event_id, recorded.event_id]);
      for (const hit of rx.hits) verifyHit(hit, secret);
      // The lost attempt is in the log, counted, and the redelivery is the next attempt.
      expect(done.attempts).toBe(2);
      expect(done.attempt_log).toHaveLength(2);
      expect(done.attempt_log[0]).toMatchObject({ attempt: 1, outcome: 'interrupted', response_code: null });
      expect(done.attempt_log[0].error).toMatch(/stopped before recording the outcome/);
      expect(done.attempt_log[1]).toMatchObject({ attempt: 2, outcome: 'succeeded', response_code: 200 });
    }, 40_000);

    it('a dispatcher whose claim was taken over records nothing of its late outcome', async () => {
      const url = await ownDatabase();
      const a = await app(ENV, url);
      const { rx, key, pid } = await setup({ app: a, script: () => ({ status: 200, delayMs: 600 }) });
      await waitFor(() => rx.hits.length >= 1, 10_000, 'the first send');
      const [sending] = await deliveries(key, pid, a);
      expect(sending.status).toBe('delivering');
      // Another dispatcher takes the row over while the first still waits for the receiver's answer.
      await a.dataSource.query(
        "UPDATE webhook_deliveries SET claimed_by = 'another-dispatcher' WHERE id = ?",
        [sending.id],
      );
      await sleep(1_200);
      const after = await deliveryOf(key, pid, sending.event_id, a);
      expect(after).toMatchObject({ status: 'delivering', attempts: 0, last_status_code: null });
      expect(after?.attempt_log).toEqual([]);
      const [row] = await a.dataSource.query('SELECT claimed_by FROM webhook_deliveries WHERE id = ?', [
        sending.id,
      ]);
      expect(row.claimed_by).toBe('another-dispatcher');
    });

    it('upgrading: outbox rows recorded before the per-host cap get their receiver host', async () => {
      const db = await databaseBefore(WebhookTargetHost1732000000004, async (before, { project }) => {
        await before.query(
          "UPDATE projects SET webhook_url = 'https://Hooks.Example.com:8443/x' WHERE id = ?",
          [project.id],
        );
        await before.query(
          "INSERT INTO webhook_deliveries (project_id, event_id, type, payload, status, attempts) VALUES (?, 'evt_old', 'project.created', '{}', 'pending', 0)",
          [project.id],
        );
      });
      extraDbs.push(db);
      const upgraded = await app({ ...ENV, WEBHOOK_DISPATCHER: 'false' }, db.url);
      expect(await upgraded.dataSource.query('SELECT event_id, target_host FROM webhook_deliveries')).toEqual(
        [{ event_id: 'evt_old', target_host: 'hooks.example.com:8443' }],
      );
    });

    it('a receiver that hangs until the timeout does not hold up another project: slots refill, at most WEBHOOK_CONCURRENCY_PER_HOST to one host', async () => {
      const url = await ownDatabase();
      const a = await app({ ...ENV, WEBHOOK_TIMEOUT_MS: '5000' }, url);
      expect(a.config.env.WEBHOOK_CONCURRENCY_PER_HOST).toBe(4);
      const hung = await setup({ app: a, script: () => ({ hang: true }) });
      for (let i = 0; i < 7; i++) await makeLicense(a, hung.key, hung.pid);
      // 8 events due to the hanging receiver: 4 under way, 4 waiting for a slot of that host.
      await waitFor(() => hung.rx.open >= 4, 10_000, 'four deliveries held by the hanging receiver');
      await sleep(300);
      expect(hung.rx.open).toBe(4);
      expect(hung.rx.hits).toHaveLength(4);

      const fast = await startReceiver();
      const { key } = await makeAccount(a.app);
      const started = Date.now();
      await makeProject(a, key, { webhook_url: fast.url, webhook_secret: newWhsec() });
      await waitFor(() => fast.hits.length >= 1, 20_000, "the other project's event");
      const took = fast.hits[0].at - started;
      expect({ took, under: took < 2_000 }).toEqual({ took, under: true });

      // Each slot the hanging receiver frees at its timeout goes to one of its waiting events.
      await waitFor(
        () => new Set(hung.rx.ids()).size >= 8,
        15_000,
        'all 8 events sent to the hanging receiver',
      );
      expect(hung.rx.maxOpen).toBe(4);
      const second = hung.rx.hits.filter(
        (h) => !hung.rx.hits.slice(0, 4).some((first) => first.id === h.id),
      )[0];
      expect(second.at - hung.rx.hits[0].at).toBeGreaterThanOrEqual(4_500);
    }, 40_000);

    it('a backlog to a host at its cap is looked through once a poll, not once per event or delivery', async () => {
      const url = await ownDatabase();
      // The default poll (the suite polls every 100 ms), so that once a poll is not every delivery.
      const { WEBHOOK_POLL_MS: _fast, ...defaults } = ENV as Record<string, string>;
      const a = await app({ ...defaults, WEBHOOK_DISPATCHER: 'false' }, url);
      expect(a.config.env.WEBHOOK_POLL_MS).toBe(1000);
      const slow = await setup({ app: a, script: () => ({ status: 200, delayMs: 40 }) });
      for (let i = 0; i < 39; i++) await makeLicense(a, slow.key, slow.pid);
      // 40 events for one host, 4 at a time: a backlog behind a host at its cap.
      const dispatcher = a.app.get(WebhookDispatcher);
      const due = dispatcher as unknown as { dueRows: (...args: unknown[]) => Promise<unknown[]> };
      const original = due.dueRows.bind(dispatcher);
      let emptyBeyondFull = 0;
      due.dueRows = async (...args) => {
        const rows = await original(...args);
        if ((args[1] as string[]).length > 0 && rows.length === 0) emptyBeyondFull++;
        return rows;
      };
      const started = Date.now();
      dispatcher.start();
      await waitFor(() => new Set(slow.rx.ids()).size >= 40, 20_000, 'all 40 events delivered');
      const polls = Math.floor((Date.now() - started) / 1000) + 1;
      expect(slow.rx.maxOpen).toBe(4);
      // Each delivery that ended frees a slot its host's next row fills at once; looking past the host
      // for other rows, found none, happens once a poll.
      expect({ emptyBeyondFull, atMost: emptyBeyondFull <= polls + 1 }).toEqual({
        emptyBeyondFull,
        atMost: true,
      });
    }, 40_000);

    it('WEBHOOK_CONCURRENCY caps the deliveries under way across receivers', async () => {
      const url = await ownDatabase();
      const a = await app(
        { ...ENV, WEBHOOK_TIMEOUT_MS: '1500', WEBHOOK_CONCURRENCY: '3', WEBHOOK_CONCURRENCY_PER_HOST: '2' },
        url,
      );
      const all = await Promise.all([0, 1, 2].map(() => setup({ app: a, script: () => ({ hang: true }) })));
      let most = 0;
      const sampler = setInterval(
        () =>
          (most = Math.max(
            most,
            all.reduce((n, x) => n + x.rx.open, 0),
          )),
        10,
      );
      try {
        for (const x of all) for (let i = 0; i < 2; i++) await makeLicense(a, x.key, x.pid);
        // 9 events, 3 slots: each receiver gets all 3 of its events, in turns as slots free.
        await waitFor(() => all.every((x) => new Set(x.rx.ids()).size >= 3), 20_000, 'every event sent');
      } finally {
        clearInterval(sampler);
      }
      expect(most).toBe(3);
      for (const x of all) expect(x.rx.maxOpen).toBeLessThanOrEqual(2);
    }, 40_000);

    it('two dispatchers on one outbox deliver each of 60 events to 3 receivers exactly once, within the per-host cap', async () => {
      const url = await ownDatabase();
      const a = await app(ENV, url);
      const b = await app(ENV, url);
      const secret = newWhsec();
      const { key } = await makeAccount(a.app);
      const targets = await Promise.all(
        [0, 1, 2].map(async () => {
          const rx = await startReceiver(() => ({ status: 200, delayMs: Math.floor(Math.random() * 60) }));
          const project = await makeProject(a, key, { webhook_secret: secret });
          // Pointed at the receiver behind the API's back, so the only events are the ones below.
          await a.dataSource.query('UPDATE projects SET webhook_url = ? WHERE id = ?', [rx.url, project.id]);
          return { rx, pid: project.id as number };
        }),
      );
      await Promise.all(
        Array.from({ length: 60 }, (_, i) => makeLicense(i % 2 ? b : a, key, targets[i % 3].pid)),
      );
      for (const { rx, pid } of targets) {
        await received(rx, 20, secret, [], 20_000);
        await waitFor(
          async () => {
            const list = await deliveries(key, pid, a);
            return list.length === 20 && list.every((d) => d.status === 'succeeded');
          },
          10_000,
          'all 20 succeeded',
        );
      }
      await sleep(500);
      for (const { rx, pid } of targets) {
        expect(rx.hits).toHaveLength(20);
        expect(new Set(rx.ids()).size).toBe(20);
        expect(countBy(rx.events().map((e) => e.type))).toEqual({ 'license.created': 20 });
        expect(new Set(rx.events().map((e) => e.data.project_id))).toEqual(new Set([pid]));
        // WEBHOOK_CONCURRENCY_PER_HOST (4) per dispatcher.
        expect(rx.maxOpen).toBeLessThanOrEqual(8);
        const list = await deliveries(key, pid, b);
        expect(list.every((d) => d.attempts === 1 && d.attempt_log.length === 1)).toBe(true);
      }
    }, 40_000);
  });
});
