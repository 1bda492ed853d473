import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { LOG_BUFFER_BYTES } from '../../src/common/logging/logging.js';
import { freePort, stop, waitFor } from '../utils/processes.js';
import { createTestDatabase } from '../utils/test-app.js';

type Server = ChildProcessByStdio<null, Readable, null>;

/** The built server with the environment `npm start` gives it (no LOG_LEVEL: the default, info). */
async function startServer(
  db: string,
  extra: Record<string, string> = {},
): Promise<{ server: Server; base: string; out: () => string }> {
  const port = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    DATABASE_URL: db,
    APP_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_DISPATCHER: 'false',
    ...extra,
  };
  delete env.LOG_LEVEL;
  if (extra.LOG_LEVEL) env.LOG_LEVEL = extra.LOG_LEVEL;
  const server = spawn(process.execPath, ['dist/src/main.js'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  server.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/api/v1/health/live`)).ok);
  return { server, base, out: () => out };
}

const metric = async (base: string, name: string) => {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
};

const lines = (out: string) =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);

describe('logs at the default level (info)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db.drop());

  it('writes a line per management call, none per runtime check, and never a license key', async () => {
    const { server, base, out } = await startServer(db.url);
    try {
      const runtime = (id: string, query = '') =>
        fetch(`${base}/api/v1/project/has-paid${query}`, {
          method: 'POST',
          headers: { 'X-Request-Id': id, 'X-LICENSE-KEY': 'key-in-header-never-logged' },
        });
      expect((await runtime('served-1')).status).toBe(403);
      expect((await runtime('served-2', '?license=key-in-query-never-logged')).status).toBe(403);
      // Through Express (trailing slash): still the runtime check, still no line of its own.
      expect(
        (
          await fetch(`${base}/api/v1/project/has-paid/?license=key-in-query-never-logged`, {
            method: 'POST',
            headers: { 'X-Request-Id': 'routed-1' },
          })
        ).status,
      ).toBe(403);
      const stream = await fetch(`${base}/api/v1/injectable/stream?a=1&license=key-in-query-never-logged`, {
        headers: {
          'X-Request-Id': 'stream-1',
          Referer: 'https://shop.example.com/?license=key-in-referer-never-logged',
        },
      });
      expect(stream.status).toBe(403);
      expect(
        (await fetch(`${base}/api/v1/project`, { headers: { 'X-Request-Id': 'managed-1' } })).status,
      ).toBe(401);
      await waitFor(async () => out().includes('managed-1') && out().includes('stream-1'));
      await new Promise((r) => setTimeout(r, 300));
      const ids = lines(out())
        .map((l) => l.req?.id)
        .filter(Boolean);
      expect(ids).toEqual(expect.arrayContaining(['stream-1', 'managed-1']));
      expect(ids).not.toEqual(expect.arrayContaining(['served-1']));
      expect(ids.filter((id) => ['served-1', 'served-2', 'routed-1'].includes(id))).toEqual([]);
      expect(out()).not.toContain('never-logged');
      const streamLine = lines(out()).find((l) => l.req?.id === 'stream-1')!;
      expect(streamLine.req.url).toBe('/api/v1/injectable/stream?a=1&license=[redacted]');
      expect(streamLine.req.query).toEqual({ a: '1', license: '[redacted]' });
      expect(streamLine.req.headers.referer).toBe('https://shop.example.com/?license=[redacted]');
      expect(streamLine.level).toBe(30);
    } finally {
      await stop(server);
    }
  });

  it('never logs a payment endpoint’s token or a provider’s signature', async () => {
    const { server, base, out } = await startServer(db.url);
    try {
      // The token is what endpoint_url ends with: logged, it would hand the endpoint to whoever reads the logs.
      const token = `tokenNeverLogged${randomBytes(20).toString('base64url')}`;
      const deliver = (path: string, id: string, headers: Record<string, string>) =>
        fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'X-Request-Id': id, 'Content-Type': 'application/json', ...headers },
          body: '{"id":"evt_1"}',
        });
      const answers = [
        await deliver(`/api/v1/payments/stripe/${token}`, 'payment-1', {
          'Stripe-Signature': 't=1,v1=stripeSignatureNeverLogged',
        }),
        await deliver(`/api/v1/payments/paddle/${token}/?x=1`, 'payment-2', {
          'Paddle-Signature': 'ts=1;h1=paddleSignatureNeverLogged',
        }),
        await deliver(`/api/v1/payments/lemonsqueezy/${token}`, 'payment-3', {
          'X-Signature': 'lemonSignatureNeverLogged',
        }),
        await deliver(`/api/v1/payments/standard/${token}`, 'payment-4', {
          'webhook-id': 'msg_1',
          'webhook-timestamp': '1',
          'webhook-signature': 'v1,standardSignatureNeverLogged',
        }),
      ];
      expect(answers.map((res) => res.status)).toEqual([404, 404, 404, 404]);
      await waitFor(async () =>
        ['payment-1', 'payment-2', 'payment-3', 'payment-4'].every((id) => out().includes(id)),
      );
      expect(out()).not.toMatch(/NeverLogged/i);
      const line = (id: string) => lines(out()).find((l) => l.req?.id === id)!;
      expect(line('payment-1').req).toMatchObject({
        url: '/api/v1/payments/stripe/[redacted]',
        headers: { 'stripe-signature': '[Redacted]' },
      });
      expect(line('payment-2').req.url).toBe('/api/v1/payments/paddle/[redacted]/?x=1');
      expect(line('payment-3').req.url).toBe('/api/v1/payments/lemonsqueezy/[redacted]');
      expect(line('payment-4').req.headers).toMatchObject({
        'webhook-id': 'msg_1',
        'webhook-signature': '[Redacted]',
      });
    } finally {
      await stop(server);
    }
  });

  it('at debug, writes the runtime check’s line too, the same for a served call as for a routed one', async () => {
    const { server, base, out } = await startServer(db.url, { LOG_LEVEL: 'debug' });
    try {
      const call = (path: string, id: string) =>
        fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'X-Request-Id': id, 'X-LICENSE-KEY': 'secret-key-never-logged' },
        });
      expect((await call('/api/v1/project/has-paid?action=check_project', 'served-call-1')).status).toBe(403);
      expect((await call('/api/v1/project/has-paid/?action=check_project', 'routed-call-1')).status).toBe(
        403,
      );
      await waitFor(async () => out().includes('served-call-1') && out().includes('routed-call-1'));
      expect(out()).not.toContain('secret-key-never-logged');
      const line = (id: string) => lines(out()).find((l) => l.req?.id === id)!;
      const served = line('served-call-1');
      const routed = line('routed-call-1');
      expect(served).toMatchObject({
        level: 20,
        reqId: 'served-call-1',
        req: { method: 'POST', url: '/api/v1/project/has-paid?action=check_project' },
        res: { statusCode: 403 },
      });
      expect(routed).toMatchObject({
        level: 20,
        reqId: 'routed-call-1',
        req: { method: 'POST' },
        res: { statusCode: 403 },
      });
      // Only a call that went through Express's router carries route params.
      expect(served.req.params).toBeUndefined();
      expect(routed.req.params).toBeDefined();
      const shape = (l: Record<string, any>) => ({
        line: Object.keys(l).sort(),
        req: Object.keys(l.req)
          .filter((k) => k !== 'params')
          .sort(),
        res: Object.keys(l.res).sort(),
        responseHeaders: Object.keys(l.res.headers).sort(),
        key: l.req.headers['x-license-key'],
        msg: l.msg,
      });
      expect(shape(served)).toEqual(shape(routed));
    } finally {
      await stop(server);
    }
  });

  it('drops and counts lines when stdout stops reading, instead of holding them in memory, and writes again when it reads', async () => {
    const { server, base, out } = await startServer(db.url);
    try {
      expect(await metric(base, 'licensegate_log_lines_dropped_total')).toBe(0);
      server.stdout.pause();
      // Each call writes a line of about 5 KB (the header is logged): several times the bound in all.
      const agent = 'x'.repeat(4000);
      const calls = Math.ceil((LOG_BUFFER_BYTES * 3) / 4000);
      for (let sent = 0; sent < calls; sent += 50) {
        await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`${base}/api/v1/health/live`, { headers: { 'User-Agent': agent } }),
          ),
        );
      }
      // At most LOG_BUFFER_BYTES wait (plus what the pipe holds): most of the rest was dropped.
      expect(await metric(base, 'licensegate_log_lines_dropped_total')).toBeGreaterThan(calls / 3);
      server.stdout.resume();
      const before = out().length;
      await waitFor(async () => {
        await fetch(`${base}/api/v1/health/live`, { headers: { 'X-Request-Id': 'after-resume' } });
        return out().slice(before).includes('after-resume');
      });
    } finally {
      await stop(server);
    }
  });
});
