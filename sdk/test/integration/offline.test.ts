/**
 * Signed answers and offline mode against a real LicenseGate server: verified online answers, a proxy
 * that alters bodies (refused), a revoked license (its token forgotten), the server stopped (answers
 * from the token), and the token's expiry (fails closed).
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as createTcpServer, Socket } from 'node:net';
import { makeAccount, makeDomain, makeLicense, makeProject } from '../../../test/factories/index.js';
import { apiAs } from '../../../test/utils/api.js';
import { expectSuccess } from '../../../test/utils/envelope.js';
import { createTestApp, TestApp } from '../../../test/utils/test-app.js';
import { ClientOptions, createClient, memoryStore } from '../../src/index.js';
import { caught } from '../helpers.js';

/** An HTTP proxy to `target` that passes each answer through `alter` (body and headers). */
async function proxy(
  target: string,
  alter: (body: string, headers: Record<string, string>) => string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
    fetch(`${target}${req.url}`, { method: req.method, headers })
      .then(async (upstream) => {
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'connection' && k !== 'keep-alive') out[k] = v;
        });
        const body = alter(await upstream.text(), out);
        res.writeHead(upstream.status, out).end(body);
      })
      .catch(() => res.writeHead(502).end());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

/**
 * A service that accepts connections and never finishes an answer: `silent` never writes a byte;
 * `stalled` sends the status line and headers of a 200 with a body that never comes.
 */
async function unresponsive(
  kind: 'silent' | 'stalled',
): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      if (kind === 'stalled')
        socket.write(
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"status":',
        );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((done) => server.close(() => done()));
    },
  };
}

describe('a service that accepts the connection and never answers', () => {
  it.each(['silent', 'stalled'] as const)(
    '%s: every call gives up after timeoutMs with code timeout',
    async (kind) => {
      const service = await unresponsive(kind);
      try {
        const client = createClient({
          baseUrl: service.url,
          licenseKey: 'b970e432-32a1-4029-994a-6f7c69120960',
          domain: 'shop.example.com',
          timeoutMs: 300,
        });
        for (const call of [
          () => client.hasPaid(),
          () => client.deactivate(),
          () => client.streamInjectables()[Symbol.asyncIterator]().next(),
        ]) {
          const started = Date.now();
          const err = await caught(call());
          expect(err).toMatchObject({
            status: 0,
            code: 'timeout',
            isRetryable: true,
            message: `LicenseGate at ${service.url} did not answer within 300 ms.`,
          });
          expect(Date.now() - started).toBeGreaterThanOrEqual(290);
          expect(Date.now() - started).toBeLessThan(3000);
        }
      } finally {
        await service.close();
      }
    },
  );
});

describe('signed answers and offline mode against a real server', () => {
  let t: TestApp;
  let key: string;
  let project: Record<string, any>;
  let publicKey: string;
  let paidDomain: string;
  let unpaidDomain: string;
  let stopped = false;

  const options = (overrides: Partial<ClientOptions> = {}): ClientOptions => ({
    baseUrl: `${t.url}/api/v1`,
    licenseKey: '',
    domain: paidDomain,
    publicKey,
    projectId: project.id,
    ...overrides,
  });

  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    project = await makeProject(t, key, { has_paid: true, offline_grace_hours: 1 });
    paidDomain = (await makeDomain(t, key, project.id, { has_paid: true })).domain;
    unpaidDomain = (await makeDomain(t, key, project.id, { has_paid: false })).domain;
    publicKey = expectSuccess(await apiAs(t, key).get(`/project/${project.id}/signing-key`)).public_key;
  }, 60_000);
  afterAll(async () => {
    if (!stopped) await t?.close();
  });

  it('verifies real answers: paid, unpaid, a signed refusal, the stream', async () => {
    // allow_configs: payloads from a project-level check without a domain (docs/decisions.md#runtime-checks).
    const license = await makeLicense(t, key, project.id, { allow_configs: true });
    const client = createClient(options({ licenseKey: license.uuid }));
    expect(await client.hasPaid()).toMatchObject({ hasPaid: true, offline: false });
    expect(await client.hasPaid({ domain: unpaidDomain })).toMatchObject({ hasPaid: false });
    expect(await client.hasPaid({ checkProject: true, includeInjectables: true })).toMatchObject({
      hasPaid: true,
      injectables: [],
    });
    const items = [];
    for await (const item of client.streamInjectables()) items.push(item);
    expect(items).toEqual([]);
    const refused = await caught(client.hasPaid({ domain: 'unknown.example.org' }));
    expect(refused).toMatchObject({
      status: 403,
      code: 'http',
      message: 'Domain is not registered under this project.',
    });
    // The wrong project's key: nothing verifies.
    const other = await makeProject(t, key);
    const otherKey = expectSuccess(await apiAs(t, key).get(`/project/${other.id}/signing-key`)).public_key;
    expect(
      (await caught(createClient(options({ licenseKey: license.uuid, publicKey: otherKey })).hasPaid())).code,
    ).toBe('bad_signature');
  });

  it('refuses answers a proxy altered, or stripped of their signature', async () => {
    const license = await makeLicense(t, key, project.id);
    const flip = await proxy(t.url, (body) => body.replace('"has_paid":false', '"has_paid":true'));
    const strip = await proxy(t.url, (body, headers) => {
      delete headers['x-service-signature'];
      return body;
    });
    const same = await proxy(t.url, (body) => body);
    try {
      const flipped = await caught(
        createClient(options({ licenseKey: license.uuid, baseUrl: flip.url })).hasPaid({
          domain: unpaidDomain,
        }),
      );
      expect(flipped).toMatchObject({ code: 'bad_signature', status: 200 });
      expect(flipped.message).toContain('does not verify');
      expect(
        (await caught(createClient(options({ licenseKey: license.uuid, baseUrl: strip.url })).hasPaid()))
          .code,
      ).toBe('bad_signature');
      // Without a public key the flipped answer would have been believed: what the signature is for.
      expect(
        await createClient({ baseUrl: flip.url, licenseKey: license.uuid, domain: unpaidDomain }).hasPaid(),
      ).toMatchObject({ hasPaid: true });
      // A proxy that changes nothing is fine.
      expect(
        await createClient(options({ licenseKey: license.uuid, baseUrl: same.url })).hasPaid(),
      ).toMatchObject({ hasPaid: true });
    } finally {
      await Promise.all([flip.close(), strip.close(), same.close()]);
    }
  });

  it('a revoked license loses its token at its next online call', async () => {
    const license = await makeLicense(t, key, project.id);
    const store = memoryStore();
    let down = false;
    const client = createClient(
      options({
        licenseKey: license.uuid,
        offline: { store },
        fetch: (url, init) => (down ? Promise.reject(new TypeError('fetch failed')) : fetch(url, init)),
      }),
    );
    await client.hasPaid();
    down = true;
    expect((await client.hasPaid()).offline).toBe(true);
    down = false;
    expectSuccess(await apiAs(t, key).post(`/project/${project.id}/licenses/${license.id}/revoke`));
    expect(await caught(client.hasPaid())).toMatchObject({
      status: 403,
      code: 'http',
      message: 'This license has been revoked.',
    });
    down = true;
    expect((await caught(client.hasPaid())).code).toBe('unreachable');
  });

  it.each(['silent', 'stalled'] as const)(
    'answers from the stored token when the service accepts the connection and never answers (%s)',
    async (kind) => {
      const license = await makeLicense(t, key, project.id);
      const store = memoryStore();
      expect(
        await createClient(options({ licenseKey: license.uuid, offline: { store } })).hasPaid(),
      ).toMatchObject({ hasPaid: true, offline: false });
      const service = await unresponsive(kind);
      try {
        const client = createClient(
          options({ licenseKey: license.uuid, offline: { store }, baseUrl: service.url, timeoutMs: 300 }),
        );
        const started = Date.now();
        expect(await client.hasPaid()).toMatchObject({
          hasPaid: true,
          offline: true,
          expiresAt: expect.any(Date),
          graceUntil: null,
        });
        expect(Date.now() - started).toBeLessThan(3000);
        // Without a token for the domain: the timeout itself, not a hang.
        expect(await caught(client.hasPaid({ domain: unpaidDomain }))).toMatchObject({
          status: 0,
          code: 'timeout',
        });
      } finally {
        await service.close();
      }
    },
  );

  it('answers from the token once the server is stopped, until the token expires (then fails closed)', async () => {
    const license = await makeLicense(t, key, project.id);
    const client = createClient(options({ licenseKey: license.uuid, offline: true, timeoutMs: 2000 }));
    const online = await client.hasPaid();
    expect(online).toMatchObject({ hasPaid: true, offline: false });

    await t.close();
    stopped = true;
    const before = Date.now();
    const offline = await client.hasPaid();
    expect(offline).toMatchObject({ hasPaid: true, offline: true, isTestLicense: false, injectables: [] });
    const expiresAt = (offline.expiresAt as Date).getTime();
    // offline_grace_hours is 1.
    expect(expiresAt).toBeGreaterThan(before + 3595_000);
    expect(expiresAt).toBeLessThanOrEqual(before + 3601_000);
    // Another domain has no token.
    expect((await caught(client.hasPaid({ domain: unpaidDomain }))).code).toBe('unreachable');

    jest.spyOn(Date, 'now').mockReturnValue(expiresAt + 1000);
    try {
      const err = await caught(client.hasPaid());
      expect(err).toMatchObject({ status: 0, code: 'unreachable' });
      expect(err.message).toContain('Could not reach LicenseGate');
    } finally {
      jest.restoreAllMocks();
    }
  });
});
