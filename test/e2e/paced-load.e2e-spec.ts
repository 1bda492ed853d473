import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// The bench's load at a steady rate (npm run bench -- --only 'steady rate'): what it reports is only
// worth as much as the way it counts, so that is tested here against servers of known speed.
import { paced } from '../../scripts/paced-load.mjs';

let server: Server | null = null;
afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = null;
});

/** A server that answers every request after `delayMs` (the status from the path), and what it saw. */
async function serve(delayMs: number): Promise<{ port: number; bodies: string[] }> {
  const bodies: string[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      bodies.push(body);
      setTimeout(() => {
        res.statusCode = req.url === '/refuse' ? 429 : 200;
        res.end('{"status":"success"}');
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, bodies };
}

describe('paced load (scripts/paced-load.mjs)', () => {
  it('sends the rate asked, no faster, and reads every answer', async () => {
    const { port, bodies } = await serve(0);
    const started = performance.now();
    const r = await paced({
      port,
      requests: [
        {
          method: 'POST',
          path: '/',
          headers: { 'content-type': 'application/json' },
          body: '{"k":"[<id>]"}',
        },
      ],
      rate: 200,
      duration: 1,
      connections: 5,
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect(r).toMatchObject({ sent: 200, answered: 200, non2xx: 0, errors: 0 });
    expect(bodies).toHaveLength(200);
    // Every body got its own id.
    expect(new Set(bodies).size).toBe(200);
    expect(bodies[0]).toMatch(/^\{"k":"\d+-\d+"\}$/);
  });

  it('counts a call from when it was due: one connection to a server taking 20 ms, asked for a call every 10 ms', async () => {
    const { port } = await serve(20);
    const r = await paced({
      port,
      requests: [{ method: 'GET', path: '/', headers: {} }],
      rate: 100,
      duration: 1,
      connections: 1,
    });
    expect(r.answered).toBe(100);
    // The server answers one every 20 ms or slower, so the hundredth call, due at 990 ms, is answered at
    // 2 s or later: about 1 s after it was due. A closed loop (each call sent when the last is answered)
    // would say 20 ms for every call.
    expect(r.max).toBeGreaterThanOrEqual(950);
    expect(r.p50).toBeGreaterThanOrEqual(400);
    expect(r.late).toBeGreaterThanOrEqual(0.9);
  });

  it('counts answers outside 2xx', async () => {
    const { port } = await serve(0);
    const r = await paced({
      port,
      requests: [
        { method: 'GET', path: '/', headers: {} },
        { method: 'GET', path: '/refuse', headers: {} },
      ],
      rate: 100,
      duration: 0.5,
      connections: 2,
    });
    expect(r).toMatchObject({ answered: 50, non2xx: 25 });
  });

  it('ends at once with every call an error when nothing listens', async () => {
    const { port } = await serve(0);
    await new Promise((r) => server?.close(r));
    server = null;
    const started = performance.now();
    const r = await paced({
      port,
      requests: [{ method: 'GET', path: '/', headers: {} }],
      rate: 100,
      duration: 1,
      connections: 2,
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(r).toMatchObject({ answered: 0, errors: 100 });
  });
});
