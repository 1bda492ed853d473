import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import request, { type Response } from 'supertest';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { freePort, stop, TEST_REDIS_URL } from '../utils/processes.js';
import { sleep, waitFor } from '../utils/wait.js';
import { Receiver, startReceiver, WebhookEvent } from '../utils/webhook-receiver.js';
import { createTestDatabase } from '../utils/test-app.js';

/** Another instance learns of a write within this bound (docs/decisions.md#caching); the writer at once. */
const FRESH_MS = 50;
const tally = (responses: Response[]) => {
  const out: Record<number, number> = {};
  for (const r of responses) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

/**
 * Two service instances (each with its own dispatcher and expiry scheduler) and two `npm run
 * dispatcher` processes, on one MariaDB database and one Redis: a freed slot is free on both
 * instances at once, the limits stay exact under races split over both, and every activation and
 * lifecycle event is sent exactly once.
 */
describe('activations across two instances and two dispatchers', () => {
  let db: { url: string; drop: () => Promise<void> };
  const processes: ChildProcess[] = [];
  const urls: string[] = [];
  const prefix = `lg-activations-${randomBytes(4).toString('hex')}:`;
  let apiKey = '';
  let projectId = 0;
  let receiver: Receiver;
  /** Every delivery the receiver got: the webhook-id and the event. */
  const hits = () => receiver.hits.map((h) => ({ ...(JSON.parse(h.body) as WebhookEvent), id: h.id }));
  const http = (i: number) => request(urls[i % 2]);
  const api = (i: number) => ({
    get: (path: string) => http(i).get(`/api/v1${path}`).set('X-API-KEY', apiKey),
    post: (path: string, body: object = {}) =>
      http(i).post(`/api/v1${path}`).set('X-API-KEY', apiKey).send(body),
    delete: (path: string) => http(i).delete(`/api/v1${path}`).set('X-API-KEY', apiKey),
  });
  const check = (i: number, uuid: string, domain: string) =>
    http(i).post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', domain);
  const deactivate = (i: number, uuid: string, domain: string) =>
    http(i).post('/api/v1/license/deactivate').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', domain);
  let seq = 0;
  const domain = async (i = 0) => {
    const name = `d${seq++}-${randomBytes(3).toString('hex')}.example.com`;
    expectSuccess(await api(i).post(`/project/${projectId}/domains`, { domain: name, has_paid: true }), 201);
    return name;
  };
  const license = async (i: number, body: Record<string, unknown> = {}) =>
    expectSuccess(
      await api(i).post(`/project/${projectId}/licenses`, {
        title: `l-${randomBytes(4).toString('hex')}`,
        ...body,
      }),
      201,
    );
  /** The first answer of `call` that `fresh` accepts, asking again for at most FRESH_MS; else the last answer. */
  const freshWithin = async (call: () => PromiseLike<Response>, fresh: (res: Response) => boolean) => {
    const until = Date.now() + FRESH_MS;
    for (;;) {
      const res = await call();
      if (fresh(res) || Date.now() > until) return res;
      await sleep(5);
    }
  };
  const activations = async (i: number, licenseId: number) =>
    expectSuccess(await api(i).get(`/project/${projectId}/licenses/${licenseId}/activations`)).data;

  beforeAll(async () => {
    receiver = await startReceiver();
    db = await createTestDatabase();
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      APP_KEY: randomBytes(32).toString('base64'),
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      THROTTLE_API_LIMIT: '100000',
      THROTTLE_RUNTIME_LIMIT: '100000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '100',
      LICENSE_EXPIRY_POLL_MS: '100',
    };
    // Migrations run once, before the processes start.
    execFileSync(
      process.execPath,
      ['dist/src/cli.js', 'users:create', '--email', 'activations@example.test'],
      { env },
    );
    apiKey = JSON.parse(
      execFileSync(
        process.execPath,
        ['dist/src/cli.js', 'keys:create', '--email', 'activations@example.test'],
        { env },
      ).toString(),
    ).key;
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      processes.push(
        spawn(process.execPath, ['dist/src/main.js'], {
          env: { ...env, PORT: String(port) },
          stdio: ['ignore', 'ignore', 'inherit'],
        }),
      );
      urls.push(`http://127.0.0.1:${port}`);
      processes.push(
        spawn(process.execPath, ['dist/src/dispatcher.js'], { env, stdio: ['ignore', 'ignore', 'inherit'] }),
      );
    }
    // Four processes starting at once on a shared machine may take a while.
    for (const url of urls) await waitFor(async () => (await fetch(`${url}/api/v1/health`)).ok, 90_000);
    const webhookUrl = receiver.url;
    projectId = expectSuccess(
      await api(0).post('/project', { name: 'Activations', has_paid: true, webhook_url: webhookUrl }),
      201,
    ).id;
  }, 240_000);

  afterAll(async () => {
    await Promise.all(processes.map(stop));
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await receiver?.close();
    await db?.drop();
  });

  it('a slot freed on one instance is free on the other at once, and the old place is refused there', async () => {
    const l = await license(0, { max_domains: 1 });
    const [a, b, c] = [await domain(), await domain(), await domain()];
    // Both instances know the activation from A (remembered in process).
    for (let i = 0; i < 4; i++) expectSuccess(await check(i, l.uuid, a));
    expectError(await check(0, l.uuid, b), 403);
    const [activation] = await activations(1, l.id);
    expectSuccess(await api(1).delete(`/project/${projectId}/licenses/${l.id}/activations/${activation.id}`));
    // A new domain is not answered from memory: the freed slot is free on the other instance at once.
    expectSuccess(await check(0, l.uuid, b));
    expect(expectError(await check(1, l.uuid, a), 403).message).toBe(
      'This license has reached its limit of 1 domain.',
    );
    // The old place was remembered on instance 0: forgotten there as a revoke is, within the bound.
    expect(
      expectError(
        await freshWithin(
          () => check(0, l.uuid, a),
          (res) => res.status === 403,
        ),
        403,
      ).message,
    ).toBe('This license has reached its limit of 1 domain.');
    // Self-service on one instance frees the slot for the other too.
    for (let i = 0; i < 2; i++) expectSuccess(await check(i, l.uuid, b));
    expect(expectSuccess(await deactivate(1, l.uuid, b))).toEqual({ deactivated: 1 });
    expectSuccess(await check(0, l.uuid, c));
    expectError(await check(1, l.uuid, b), 403);
  });

  it.each([1, 2])(
    'round %i: 60 racing calls from new domains over both instances after one deactivation take exactly one slot',
    async () => {
      const l = await license(0, { max_domains: 2 });
      const kept = [await domain(), await domain()];
      const fresh: string[] = [];
      for (let i = 0; i < 60; i++) fresh.push(await domain(i));
      for (let i = 0; i < 4; i++) expectSuccess(await check(i, l.uuid, kept[i % 2]));
      const [first] = await activations(0, l.id);
      expectSuccess(await api(1).delete(`/project/${projectId}/licenses/${l.id}/activations/${first.id}`));
      const answers = await Promise.all(fresh.map((d, i) => check(i, l.uuid, d)));
      expect(tally(answers)).toEqual({ 200: 1, 403: 59 });
      expect((await activations(1, l.id)).map((a: { domain: string }) => a.domain).sort()).toEqual(
        [kept[1], fresh[answers.findIndex((r) => r.status === 200)]].sort(),
      );
    },
  );

  it('racing self-service deactivations over both instances never exceed the daily allowance of 3', async () => {
    const l = await license(0);
    const hosts: string[] = [];
    for (let i = 0; i < 8; i++) {
      hosts.push(await domain(i));
      expectSuccess(await check(i, l.uuid, hosts[i]));
    }
    const answers = await Promise.all(hosts.map((h, i) => deactivate(i, l.uuid, h)));
    expect(tally(answers)).toEqual({ 200: 3, 429: 5 });
    expect(await activations(0, l.id)).toHaveLength(5);
  });

  it('sends each activation and lifecycle event exactly once across two instances and two dispatchers', async () => {
    const limited = await license(0, { max_domains: 1 });
    const [a, b] = [await domain(), await domain()];
    expectSuccess(await check(0, limited.uuid, a));
    // Refusals for one place, racing over both instances: one license.domain_limit_reached.
    const refusals = await Promise.all(Array.from({ length: 20 }, (_, i) => check(i, limited.uuid, b)));
    expect(tally(refusals)).toEqual({ 403: 20 });
    const [activation] = await activations(0, limited.id);
    expectSuccess(
      await api(1).delete(`/project/${projectId}/licenses/${limited.id}/activations/${activation.id}`),
    );
    expectSuccess(await check(1, limited.uuid, b));
    expect(expectSuccess(await deactivate(0, limited.uuid, b))).toEqual({ deactivated: 1 });
    // Licenses that enter the notice window at once and expire 4 s later.
    const expiring: Array<Record<string, any>> = [];
    for (let i = 0; i < 3; i++)
      expiring.push(await license(i, { expires_at: new Date(Date.now() + 4000).toISOString() }));

    const ofLicense = (id: number) =>
      hits().filter(
        (h) => h.data.license_id === id || (h.type.startsWith('license.expir') && h.data.id === id),
      );
    await waitFor(
      async () => expiring.every((l) => ofLicense(l.id).some((h) => h.type === 'license.expired')),
      20_000,
    );
    await waitFor(
      async () => ofLicense(limited.id).filter((h) => h.type !== 'license.created').length >= 3,
      10_000,
    );
    // Time for any duplicate to arrive: claims, polls and schedulers all run every 100 ms.
    await sleep(1500);
    // Dispatchers deliver side by side, so in any order.
    expect(
      ofLicense(limited.id)
        .map((h) => [h.type, h.data.domain, h.data.by ?? h.data.limit])
        .sort(),
    ).toEqual(
      [
        ['license.domain_limit_reached', b, 'max_domains'],
        ['license.deactivated', a, 'api_key'],
        ['license.deactivated', b, 'license'],
      ].sort(),
    );
    for (const l of expiring)
      expect(ofLicense(l.id).map((h) => h.type)).toEqual(['license.expiring', 'license.expired']);
    // No event was delivered twice.
    const ids = hits().map((h) => h.id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 60_000);
});
