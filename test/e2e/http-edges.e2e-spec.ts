import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import { connect, Socket } from 'node:net';
import { makeAccount, makeProject } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { bigInjectable, nextConnectionClosed, neverRead, portOf } from '../utils/stalling-clients.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { waitFor } from '../utils/wait.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what a connection received into its final HTTP/1.1 responses (100 Continue left out). */
function parseResponses(raw: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0)
      throw new Error(`incomplete response: ${JSON.stringify(rest.toString('latin1').slice(0, 200))}`);
    const [statusLine, ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = Number(statusLine.split(' ')[1]);
    // 100 Continue has no body; every other answer here has a Content-Length.
    const length = status < 200 ? 0 : Number(headers['content-length']);
    if (!Number.isInteger(length)) throw new Error(`no Content-Length: ${statusLine}`);
    if (status >= 200)
      out.push({ status, headers, body: rest.subarray(end + 4, end + 4 + length).toString('utf8') });
    rest = rest.subarray(end + 4 + length);
  }
  return out;
}

/**
 * Sends raw bytes on a new connection and collects everything until the server closes it, or until
 * `enough` of its answers have come (then hangs up itself), or 15 s.
 */
function converse(
  t: TestApp,
  chunks: Array<string | Buffer>,
  enough = Infinity,
): Promise<{ responses: RawResponse[]; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(portOf(t), '127.0.0.1');
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ responses: parseResponses(Buffer.concat(received)), closedByServer: false });
    }, 15_000);
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
    socket.on('data', (d) => {
      received.push(d);
      if (enough === Infinity) return;
      let responses: RawResponse[];
      try {
        responses = parseResponses(Buffer.concat(received));
      } catch {
        return; // an answer still on its way
      }
      if (responses.length < enough) return;
      clearTimeout(timer);
      socket.removeAllListeners('close');
      socket.destroy();
      resolve({ responses, closedByServer: false });
    });
    // The server may reset while a large request is still being written; what it answered first counts.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve({ responses: parseResponses(Buffer.concat(received)), closedByServer: true });
      } catch (error) {
        reject(error instanceof Error ? error : new Error('the responses could not be parsed'));
      }
    });
  });
}

const exchange = (t: TestApp, ...chunks: Array<string | Buffer>) => converse(t, chunks);

/** The first `count` answers to raw bytes sent on a new connection, which is then hung up. */
async function firstAnswers(t: TestApp, count: number, ...chunks: string[]): Promise<RawResponse[]> {
  const { responses } = await converse(t, chunks, count);
  expect(responses.length).toBeGreaterThanOrEqual(count);
  return responses.slice(0, count);
}

/** One error answer in the envelope, with a request id, on a connection the server then closed. */
async function expectEnvelope(t: TestApp, request: string | Buffer, status: number, message: string) {
  const { responses, closedByServer } = await exchange(t, request);
  expect(responses).toHaveLength(1);
  const [res] = responses;
  expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({
    status,
    body: { status: 'error', message, data: null, errors: null },
  });
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['x-request-id']).toMatch(UUID);
  expect(res.headers.connection).toBe('close');
  expect(closedByServer).toBe(true);
  return res;
}

describe('answers node writes itself are in the envelope', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('unknown method → 400', async () => {
    await expectEnvelope(
      t,
      'FOO /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n',
      400,
      'The request does not start with a known HTTP method.',
    );
    // TLS sent to the plain port is the same case.
    await expectEnvelope(
      t,
      Buffer.from('160301020001000001fc0303', 'hex'),
      400,
      'The request does not start with a known HTTP method.',
    );
  });

  it('bad Content-Length (not a number, negative, sent twice) → 400', async () => {
    const message = 'The Content-Length header must be a single non-negative integer.';
    await expectEnvelope(
      t,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
      400,
      message,
    );
    await expectEnvelope(
      t,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
      400,
      message,
    );
    await expectEnvelope(
      t,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      400,
      message,
    );
  });

  it('a declared Content-Length over what the route reads → 413 at once; the body dropped, or the connection closed if it never comes', async () => {
    const max = t.config.env.MAX_UPLOAD_BYTES;
    const declared = (path: string, length: number, type = 'application/json') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n{}`;
    const tooLarge = 'Request body is too large.';
    // The runtime fast path, a routed call, a payment provider's endpoint (1 MiB), an upload.
    const cases: [string, string][] = [
      [declared('/api/v1/project/has-paid', 99_000_000), tooLarge],
      [declared('/api/v1/project', max + 1), tooLarge],
      [declared(`/api/v1/payments/stripe/${'A'.repeat(43)}`, 1024 * 1024 + 1), tooLarge],
      [
        declared('/api/v1/project/1/injectables', max + 256 * 1024 + 1, 'multipart/form-data; boundary=x'),
        `The multipart body is larger than MAX_UPLOAD_BYTES (${max} bytes) and 256 KiB for the other fields.`,
      ],
    ];
    // Each declares more than it sends and never sends the rest: the parsers would have waited for it
    // until the idle timeout (30 s), then closed the connection without an answer. Now the answer
    // comes at once, and the connection is closed within seconds (exchange gives up at 15 s).
    const exchanges = await Promise.all(cases.map(([request]) => exchange(t, request)));
    exchanges.forEach(({ responses, closedByServer }, i) => {
      expect(responses.map((r) => [r.status, JSON.parse(r.body).message])).toEqual([[413, cases[i][1]]]);
      expect(closedByServer).toBe(true);
    });
    // A body no parser reads is not judged by its length: a text body is the 415 it always was.
    const text = await firstAnswers(
      t,
      1,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 99000000\r\n\r\nhi',
    );
    expect(text.map((r) => [r.status, JSON.parse(r.body).message])).toEqual([
      [
        415,
        'Unsupported content type: send application/json (or multipart/form-data where a file is uploaded).',
      ],
    ]);
    // A client that sends all of an oversized body reads the 413, on a connection that then serves
    // its next request: the body was read and dropped, not cut off with a reset.
    const body = `{"pad":"${'x'.repeat(max)}"}`;
    const answers = await firstAnswers(
      t,
      2,
      `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      'GET /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    expect(answers.map((r) => [r.status, JSON.parse(r.body).message])).toEqual([
      [413, tooLarge],
      [200, 'LicenseGate API v1'],
    ]);
  });

  it('Content-Length with Transfer-Encoding, or a malformed chunked body → 400', async () => {
    await expectEnvelope(
      t,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'The Transfer-Encoding header is invalid: send chunked as its last coding, and no Content-Length with it.',
    );
    // The route is under way (waiting for the body) when the body turns out broken: ours is its answer.
    await expectEnvelope(
      t,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      400,
      'The chunked request body is malformed.',
    );
  });

  it('a Transfer-Encoding not ending in chunked → 400 and closed, even where a middleware answers at once', async () => {
    const message =
      'The Transfer-Encoding header is invalid: send chunked as its last coding, and no Content-Length with it.';
    // node's parser refuses these once the request listener has run: a route still reading its body
    // gets node's answer, and the request sent after it on the connection is never read.
    for (const coding of ['gzip', 'identity', 'Chunked, gzip'])
      await expectEnvelope(
        t,
        `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\n\r\n{}GET /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n`,
        400,
        message,
      );
    // Without a Content-Type, the content type's 415 would come first: it is this 400 instead, on both paths.
    for (const path of ['/api/v1/project', '/api/v1/project/has-paid'])
      await expectEnvelope(
        t,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n`,
        400,
        message,
      );
    // Chunked last, in any case and with empty list elements around it, is read as ever; so is a body
    // framed by its Content-Length beside an empty Transfer-Encoding, which node reads as none.
    for (const head of [
      'Transfer-Encoding: gzip, CHUNKED',
      'Transfer-Encoding: , chunked',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: ',
    ]) {
      const [read] = await firstAnswers(
        t,
        1,
        `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${head}\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      );
      expect({ head, status: read.status, message: JSON.parse(read.body).message }).toEqual({
        head,
        status: 401,
        message: 'API key missing: send it in the X-API-KEY header.',
      });
    }
    const [framed] = await firstAnswers(
      t,
      1,
      'POST /api/v1/project HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: \r\nContent-Length: 2\r\n\r\n{}',
    );
    expect(framed.status).toBe(401);
  });

  it('NUL or another control character in a header → 400', async () => {
    const message =
      'A request header contains characters HTTP does not allow in a header name or value (such as NUL or other control characters).';
    await expectEnvelope(
      t,
      'GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nX-Thing: a\0b\r\n\r\n',
      400,
      message,
    );
    await expectEnvelope(
      t,
      'GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nX-Th\x01ing: ab\r\n\r\n',
      400,
      message,
    );
  });

  it('a malformed request line → 400', async () => {
    await expectEnvelope(
      t,
      'GET /api/v1/a b HTTP/1.1\r\nHost: x\r\n\r\n',
      400,
      'The request line is malformed: send METHOD /path HTTP/1.1 (percent-encode spaces in the path).',
    );
    await expectEnvelope(
      t,
      'GET /api/v1/ HTTP/7.0\r\nHost: x\r\n\r\n',
      400,
      'The request line is malformed or its HTTP version is not supported: send HTTP/1.1.',
    );
  });

  // Node counts the request line with the headers: a long URL is refused by the same limit, so the message names both.
  const TOO_LARGE =
    'The request line and headers are too large: at most 16384 bytes in all, the URL with its query string included.';
  it('a 70 kB header → 431, the answer read in full although the client was still sending', async () => {
    await expectEnvelope(
      t,
      `GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`,
      431,
      TOO_LARGE,
    );
  });

  it('a 20 kB URL → 431 saying the URL counts, on Express routes and on the runtime fast path', async () => {
    await expectEnvelope(
      t,
      `GET /api/v1/project?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      431,
      TOO_LARGE,
    );
    await expectEnvelope(
      t,
      `POST /api/v1/project/has-paid?domain=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`,
      431,
      TOO_LARGE,
    );
  });

  it('Host sent twice → 400 (RFC 9112: a proxy and this service could each read another one)', async () => {
    for (const path of ['/api/v1/health/live', '/api/v1/project/has-paid']) {
      const { responses } = await exchange(
        t,
        `${path.endsWith('has-paid') ? 'POST' : 'GET'} ${path} HTTP/1.1\r\nHost: a.example.com\r\nHost: b.example.com\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      expect(responses.map((r) => ({ status: r.status, body: JSON.parse(r.body) }))).toEqual([
        {
          status: 400,
          body: { status: 'error', message: 'The Host header must be sent once.', data: null, errors: null },
        },
      ]);
    }
  });

  it('Expect other than 100-continue → 417, echoing the request id; 100-continue still works', async () => {
    const res = await expectEnvelope(
      t,
      'GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nExpect: x\r\n\r\n',
      417,
      'The Expect header "x" is not supported: only 100-continue is.',
    );
    expect(res.headers['x-request-id']).toMatch(UUID);
    const echoed = await exchange(
      t,
      'GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nExpect: x\r\nX-Request-Id: mine-1\r\n\r\n',
    );
    expect(echoed.responses[0].headers['x-request-id']).toBe('mine-1');

    const body = '{"name":"Continued"}';
    const { key } = await makeAccount(t.app);
    const { responses } = await exchange(
      t,
      `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      body,
    );
    expect(responses.map((r) => r.status)).toEqual([201]);
  });

  it('HTTP/1.1 without Host → 400 from the app, like any other answer', async () => {
    const { responses } = await exchange(t, 'GET /api/v1/health/live HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(responses).toHaveLength(1);
    expect({ status: responses[0].status, body: JSON.parse(responses[0].body) }).toEqual({
      status: 400,
      body: { status: 'error', message: 'The Host header is required.', data: null, errors: null },
    });
    expect(responses[0].headers['x-request-id']).toMatch(UUID);
    // HTTP/1.0 needs none.
    expect(
      (await exchange(t, 'GET /api/v1/health/live HTTP/1.0\r\n\r\n')).responses.map((r) => r.status),
    ).toEqual([200]);
  });

  it('CONNECT → 405 with Allow', async () => {
    const res = await expectEnvelope(
      t,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      405,
      'The CONNECT method is not supported.',
    );
    expect(res.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
  });

  it('a malformed request pipelined after a good one is answered after it, in order', async () => {
    const { responses, closedByServer } = await exchange(
      t,
      'GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\n\r\nFOO / HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    expect(responses.map((r) => r.status)).toEqual([200, 400]);
    expect(JSON.parse(responses[0].body)).toMatchObject({ status: 'success' });
    expect(JSON.parse(responses[1].body).message).toBe(
      'The request does not start with a known HTTP method.',
    );
    expect(closedByServer).toBe(true);
  });
});

describe('connections that stall are closed (HTTP_IDLE_TIMEOUT_MS)', () => {
  let t: TestApp;
  let key: string;
  let injectablePath: string;
  beforeAll(async () => {
    t = await createTestApp({ HTTP_IDLE_TIMEOUT_MS: '1000', THROTTLE_API_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    injectablePath = await bigInjectable(t, key);
  }, 60_000);
  afterAll(async () => t.close());

  it('a client that sends its request and never reads the answer is dropped after the idle timeout; one that reads gets it all', async () => {
    expect(await neverRead(t, injectablePath, key, 20_000)).toBeGreaterThanOrEqual(900);
    const res = await t.http().get(injectablePath).set('X-API-KEY', key);
    expect(expectSuccess(res).content.length).toBeGreaterThan(5_000_000);
  }, 30_000);

  it('a client that stops sending its request half-way is dropped after the idle timeout', async () => {
    const closed = nextConnectionClosed(t.app.getHttpServer() as Server, 20_000);
    const socket = connect(portOf(t), '127.0.0.1', () => {
      socket.write(
        `POST /api/v1/project HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
    });
    socket.on('error', () => undefined);
    try {
      expect(await closed).toBeGreaterThanOrEqual(900);
    } finally {
      socket.destroy();
    }
  }, 30_000);

  it('an upload that keeps sending is never cut, however long it takes in all', async () => {
    const body = Buffer.from(
      JSON.stringify({ slug: 'slow', secret: 's3cret-s3cret', content: 'y'.repeat(600_000) }),
    );
    const project = await makeProject(t, key);
    const head = `POST /api/v1/project/${project.id}/injectables HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const started = Date.now();
    const responses = await new Promise<RawResponse[]>((resolve, reject) => {
      const socket = connect(portOf(t), '127.0.0.1');
      const received: Buffer[] = [];
      socket.on('data', (d) => received.push(d));
      socket.on('error', reject);
      socket.on('close', () => resolve(parseResponses(Buffer.concat(received))));
      const trickle = async () => {
        socket.write(head);
        // 20 pieces, 300 ms apart: 6 s in all, each gap well inside the 1 s idle timeout.
        for (let offset = 0; offset < body.length; offset += 30_000) {
          await new Promise((r) => setTimeout(r, 300));
          socket.write(body.subarray(offset, offset + 30_000));
        }
      };
      socket.on('connect', () => void trickle());
    });
    expect(Date.now() - started).toBeGreaterThan(5_000);
    expect(responses.map((r) => r.status)).toEqual([201]);
    expect(JSON.parse(responses[0].body).data.slug).toBe('slow');
  }, 30_000);
});

// The defaults (30 s idle timeout) are held by test/slow/connection-defaults.slow-spec.ts (npm run test:slow).

/**
 * Sends a GET for `path` and reads no further than its socket's own buffer (no `data` listener): the
 * rest of the answer waits in the server. The socket, to be destroyed by the caller.
 */
function stallingReader(t: TestApp, path: string, key: string): Socket {
  const socket = connect(portOf(t), '127.0.0.1', () => {
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\n\r\n`);
  });
  socket.on('error', () => undefined);
  return socket;
}

/**
 * Waits until the server has begun answering each of `sockets`: their first bytes wait unread in the
 * socket, so the whole answer has been handed to the server's `end()` and holds its reservation. (A
 * wait by time was not enough on a loaded machine: an 11 MB answer can take longer to make.)
 */
const answering = (sockets: Socket[]) =>
  waitFor(() => sockets.every((socket) => socket.readableLength > 0), 20_000, 'every slow reader answered');

/** The server's side of the next connection it accepts. */
const nextServerSocket = (t: TestApp) =>
  new Promise<Socket>((resolve) => (t.app.getHttpServer() as Server).once('connection', resolve));

/** Waits until the server has closed its side of a connection (its answer's reservation ends there). */
const closed = (socket: Socket) =>
  socket.closed ? Promise.resolve() : new Promise<void>((r) => socket.once('close', () => r()));

describe('large answers waiting for slow clients are bounded (MAX_PENDING_ANSWER_BYTES)', () => {
  let t: TestApp;
  let key: string;
  let injectablePath: string;
  beforeAll(async () => {
    t = await createTestApp({
      MAX_PENDING_ANSWER_BYTES: String(16 * 1024 * 1024),
      THROTTLE_API_LIMIT: '100000',
    });
    ({ key } = await makeAccount(t.app));
    injectablePath = await bigInjectable(t, key);
  }, 60_000);
  afterAll(async () => t.close());

  it('a large answer past the budget gets 503 with Retry-After; small answers still go; the budget frees when the slow client goes', async () => {
    const accepted = nextServerSocket(t);
    const slow = stallingReader(t, injectablePath, key);
    const serverSide = await accepted;
    try {
      await answering([slow]);
      const refused = await t
        .http()
        .get(injectablePath)
        .set('X-API-KEY', key)
        .set('X-Request-Id', 'over-budget');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.headers['x-request-id']).toBe('over-budget');
      expect(refused.body).toEqual({
        status: 'error',
        message: 'The service is sending too many large answers to slow clients: try again in a moment.',
        data: null,
        errors: null,
      });
      expectSuccess(
        await t
          .http()
          .get(injectablePath.replace(/\/injectables\/\d+$/, ''))
          .set('X-API-KEY', key),
      );
    } finally {
      slow.destroy();
    }
    await closed(serverSide);
    expect(
      expectSuccess(await t.http().get(injectablePath).set('X-API-KEY', key)).content.length,
    ).toBeGreaterThan(5_000_000);
  }, 30_000);

  it('one large answer always goes, even one larger than the budget', async () => {
    const small = await createTestApp({
      MAX_PENDING_ANSWER_BYTES: String(1024 * 1024),
      THROTTLE_API_LIMIT: '100000',
    });
    try {
      const { key: smallKey } = await makeAccount(small.app);
      const path = await bigInjectable(small, smallKey);
      expect(
        expectSuccess(await small.http().get(path).set('X-API-KEY', smallKey)).content.length,
      ).toBeGreaterThan(5_000_000);
    } finally {
      await small.close();
    }
  }, 30_000);
});

describe('large answers with the default budget (64 MiB)', () => {
  let t: TestApp;
  let key: string;
  let injectablePath: string;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
    ({ key } = await makeAccount(t.app));
    injectablePath = await bigInjectable(t, key);
  }, 60_000);
  afterAll(async () => t.close());

  it('five slow readers of an 11 MB answer are served; the sixth gets 503', async () => {
    expect(t.config.env.MAX_PENDING_ANSWER_BYTES).toBe(64 * 1024 * 1024);
    const slow: Socket[] = [];
    try {
      for (let i = 0; i < 5; i++) slow.push(stallingReader(t, injectablePath, key));
      await answering(slow);
      expect((await t.http().get(injectablePath).set('X-API-KEY', key)).status).toBe(503);
    } finally {
      for (const socket of slow) socket.destroy();
    }
  }, 30_000);
});

describe('bodies and paths the app cannot read: a clear 400 on Express routes and on the runtime fast path', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp();
    ({ key } = await makeAccount(t.app));
  });
  afterAll(async () => t.close());

  /** The management route (Express) and the runtime check (the fast path), with the same body. */
  const both = (headers: Record<string, string>, body: string | Buffer) =>
    Promise.all(
      ['/api/v1/api-keys', '/api/v1/project/has-paid'].map(async (path) => {
        const res = await fetch(`${t.url}${path}`, {
          method: 'POST',
          headers: { 'X-API-KEY': key, 'X-LICENSE-KEY': 'unknown', ...headers },
          body,
        });
        return { path, status: res.status, body: await res.json() };
      }),
    );
  const refusal = (status: number, message: string) =>
    ['/api/v1/api-keys', '/api/v1/project/has-paid'].map((path) => ({
      path,
      status,
      body: { status: 'error', message, data: null, errors: null },
    }));

  it.each(['gzip', 'deflate', 'br'])(
    'a body that is not valid %s data although Content-Encoding says so → 400 saying so',
    async (encoding) => {
      expect(
        await both({ 'Content-Type': 'application/json', 'Content-Encoding': encoding }, '{"name":"x"}'),
      ).toEqual(
        refusal(
          400,
          `The request body could not be decompressed: it is not valid ${encoding} data (Content-Encoding).`,
        ),
      );
    },
  );

  it('a compressed body that is valid is read as usual', async () => {
    const { gzipSync } = await import('node:zlib');
    const [created, checked] = await both(
      { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      gzipSync('{"name":"zipped"}'),
    );
    expect(created).toMatchObject({ status: 201, body: { data: { name: 'zipped' } } });
    expect(checked).toMatchObject({ status: 403, body: { message: 'Invalid license key.' } });
  });

  it.each(['"text"', '42', 'true', 'null'])(
    'valid JSON that is not an object (%s) → 400 "must be a JSON object", not "malformed"',
    async (body) => {
      expect(await both({ 'Content-Type': 'application/json' }, body)).toEqual(
        refusal(400, 'The request body must be a JSON object.'),
      );
    },
  );

  it('multipart/form-data where no endpoint takes a file → 415, not a 422 about fields it never read', async () => {
    const form = () => {
      const f = new FormData();
      f.set('name', 'Sent as a form');
      f.set('license', 'unknown');
      return f;
    };
    const message =
      'Unsupported content type: send application/json (multipart/form-data only where a file is uploaded: POST and PUT of injectables).';
    for (const [method, path] of [
      ['POST', '/api/v1/project'],
      ['POST', '/api/v1/api-keys'],
      ['POST', '/api/v1/project/has-paid'],
      ['POST', '/api/v1/project/has-paid/'],
      ['PATCH', '/api/v1/project/1'],
    ]) {
      const res = await fetch(`${t.url}${path}`, { method, headers: { 'X-API-KEY': key }, body: form() });
      expect({ method, path, status: res.status, body: await res.json() }).toEqual({
        method,
        path,
        status: 415,
        body: { status: 'error', message, data: null, errors: null },
      });
    }
    // Where a file is taken, a form still reaches the route.
    const project = await makeProject(t, key);
    const upload = new FormData();
    upload.set('slug', 'via-form');
    upload.set('secret', 's3cret-s3cret');
    upload.set('type', 'file');
    upload.set('file', new Blob(['hello']), 'hello.txt');
    const created = await fetch(`${t.url}/api/v1/project/${project.id}/injectables`, {
      method: 'POST',
      headers: { 'X-API-KEY': key },
      body: upload,
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { data: { id: number } }).data.id;
    const replaced = new FormData();
    replaced.set('secret', 's3cret-s3cret');
    replaced.set('file', new Blob(['again']), 'again.txt');
    expect(
      (
        await fetch(`${t.url}/api/v1/project/${project.id}/injectables/${id}`, {
          method: 'PUT',
          headers: { 'X-API-KEY': key },
          body: replaced,
        })
      ).status,
    ).toBe(200);
  });

  it.each([
    ['/api/v1/project/%zz', "The path contains an invalid percent-encoding: '%zz'."],
    ['/api/v1/project/1/domains/%E0%A4', "The path contains an invalid percent-encoding: '%E0%A4'."],
  ])('invalid percent-encoding in a path parameter (%s) → 400 saying so', async (path, message) => {
    const res = await fetch(`${t.url}${path}`, { headers: { 'X-API-KEY': key } });
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 400,
      body: { status: 'error', message, data: null, errors: null },
    });
  });
});
