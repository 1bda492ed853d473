import { BeforeApplicationShutdown, Injectable, type Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import {
  IncomingHttpHeaders,
  IncomingMessage,
  maxHeaderSize,
  STATUS_CODES,
  type Server,
  ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { Envelope } from './envelope.js';

const REQUEST_ID = /^[\w\-.:]{1,128}$/;

/** Request id: the client's when it sent a sane one, a new one otherwise. */
export function requestIdFrom(headers: IncomingHttpHeaders): string {
  const sent = headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** Connection limits (docs/operations.md, "Connections and timeouts"). The idle timeout is HTTP_IDLE_TIMEOUT_MS. */
export const HTTP_TIMEOUTS = {
  /** The request line and headers must arrive within this (slowloris). */
  headersMs: 20_000,
  /** The whole request, body included: 5 MB (MAX_UPLOAD_BYTES) at 17 kB/s. */
  requestMs: 300_000,
  /**
   * An idle keep-alive connection is closed after this; longer than the 60 s that proxies (nginx's
   * upstream keepalive, cloud load balancers) keep theirs open, so a proxy never sends a request
   * on a connection we are closing at that moment (a 502).
   */
  keepAliveMs: 65_000,
};

/** node's parser's answer to a Transfer-Encoding it refuses; transferEncoding (middlewares.ts) gives it too. */
export const INVALID_TRANSFER_ENCODING =
  'The Transfer-Encoding header is invalid: send chunked as its last coding, and no Content-Length with it.';

/** Parse errors answered with another status than 400, and the message of each (by llhttp's code). */
const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_INVALID_METHOD: { status: 400, message: 'The request does not start with a known HTTP method.' },
  HPE_INVALID_CONTENT_LENGTH: {
    status: 400,
    message: 'The Content-Length header must be a single non-negative integer.',
  },
  HPE_UNEXPECTED_CONTENT_LENGTH: {
    status: 400,
    message: 'The Content-Length header must be a single non-negative integer.',
  },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, message: INVALID_TRANSFER_ENCODING },
  HPE_INVALID_CHUNK_SIZE: { status: 400, message: 'The chunked request body is malformed.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    message: 'The chunk extensions of the request body are too large.',
  },
  HPE_INVALID_HEADER_TOKEN: {
    status: 400,
    message:
      'A request header contains characters HTTP does not allow in a header name or value (such as NUL or other control characters).',
  },
  // node counts the request line with the headers: a long URL hits the same limit.
  HPE_HEADER_OVERFLOW: {
    status: 431,
    message: `The request line and headers are too large: at most ${maxHeaderSize} bytes in all, the URL with its query string included.`,
  },
  HPE_INVALID_VERSION: {
    status: 400,
    message: 'The request line is malformed or its HTTP version is not supported: send HTTP/1.1.',
  },
  HPE_INVALID_CONSTANT: {
    status: 400,
    message: 'The request line is malformed: send METHOD /path HTTP/1.1 (percent-encode spaces in the path).',
  },
  HPE_INVALID_URL: { status: 400, message: 'The request target is not a valid path.' },
  HPE_PAUSED_H2_UPGRADE: { status: 400, message: 'HTTP/2 without TLS is not supported: use HTTP/1.1.' },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    message: `The request did not arrive in time: headers within ${HTTP_TIMEOUTS.headersMs / 1000} s, the whole request within ${HTTP_TIMEOUTS.requestMs / 1000} s.`,
  },
};
const MALFORMED = { status: 400, message: 'The request is not valid HTTP/1.1.' };

const envelope = (message: string): string =>
  JSON.stringify({ status: 'error', message, data: null, errors: null } satisfies Envelope);

/** A complete error answer in the envelope, for a socket node's parser gave up on (it has no response object). */
function rawAnswer(
  status: number,
  message: string,
  id: string,
  headers: Record<string, string> = {},
): string {
  const body = envelope(message);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${id}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** How long a refused connection may keep sending before it is cut (it may be mid-way through a large header). */
const LINGER_MS = 5_000;

/**
 * Answers on a socket, then closes it once the client has read the answer. Closing at once while the
 * client is still sending (the rest of a 70 kB header) would reset the connection, and the client
 * would see the reset instead of the answer.
 */
function answerAndClose(socket: Duplex, answer: string): void {
  socket.end(answer);
  const cut = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(cut));
}

/**
 * After an answer given before the request's body was read (a 413 on its declared length): node reads
 * and drops the body as it comes, and the connection is closed if it has not all come within
 * LINGER_MS. A client that declared bytes it never sends is not kept until the idle timeout; one still
 * sending is not cut before it can read the answer, nor at all once its body is in.
 */
export function closeIfBodyLingers(req: IncomingMessage): void {
  if (req.complete) return;
  const cut = setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
  const done = () => clearTimeout(cut);
  req.once('end', done);
  req.socket.once('close', done);
}

/**
 * Timeouts and the answers node's HTTP server would otherwise write itself, outside the envelope and
 * without X-Request-Id: malformed requests (`clientError`), an Expect other than 100-continue
 * (`checkExpectation`), CONNECT, and HTTP/1.1 without Host (left to the app's middleware).
 */
export function configureHttpServer(server: Server, idleTimeoutMs: number, logger: Logger): void {
  // A connection on which no byte moves either way for this long is closed: a client that stopped
  // reading its answer (which would otherwise stay in memory for as long as it keeps the socket open),
  // one that stopped sending its request, or one that connected and sent nothing. A write that
  // stopped moving is found stuck at node's second look, so a client that stops reading goes after
  // one to two idle timeouts.
  server.setTimeout(idleTimeoutMs);
  server.headersTimeout = HTTP_TIMEOUTS.headersMs;
  server.requestTimeout = HTTP_TIMEOUTS.requestMs;
  server.keepAliveTimeout = HTTP_TIMEOUTS.keepAliveMs;
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;

  // node's parser keeps reading after an error and reports it again for every later chunk: answer once.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer = () => {
      if (!socket.writable) return;
      const { status, message } = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
      const id = randomUUID();
      logger.log({ req_id: id, status, code: err.code }, 'Malformed request refused');
      answerAndClose(socket, rawAnswer(status, message, id));
    };
    // The response on this connection that node has not finished writing, if any (node's own
    // handler reads the same field; there is no public one).
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!inFlight) return answer();
    if (inFlight.req.complete) {
      // The error is in a later, pipelined request: its answer goes after the one being written.
      inFlight.once('finish', answer);
    } else if (!inFlight.headersSent) {
      // The error is in the body of the request being answered, which will not arrive: ours is its answer.
      answer();
    } else {
      // That request is being answered already, and its body is broken: bytes of ours would corrupt the answer.
      socket.destroy();
    }
  });

  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const id = requestIdFrom(req.headers);
    const body = envelope(
      `The Expect header ${JSON.stringify(req.headers.expect)} is not supported: only 100-continue is.`,
    );
    res.writeHead(417, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': id,
      Connection: 'close',
    });
    res.end(body);
  });

  // CONNECT (a proxy tunnel) has no response object either; unanswered, node just drops the connection.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    answerAndClose(
      socket,
      rawAnswer(405, 'The CONNECT method is not supported.', requestIdFrom(req.headers), {
        Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
      }),
    );
  });
}

/** Answers at least this large are counted against MAX_PENDING_ANSWER_BYTES; smaller ones never wait. */
export const LARGE_ANSWER_BYTES = 1024 * 1024;

type End = ServerResponse['end'];

/** An answer's last write: node's own `end`, or one a middleware put in its place. */
type EndFn = (
  this: ServerResponse,
  chunk?: unknown,
  encoding?: unknown,
  callback?: unknown,
) => ServerResponse;

// eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with a response as `this`
const nodeEnd = ServerResponse.prototype.end as EndFn;

/** Bytes of an answer's last chunk: a string of fewer than a third as many characters is surely small. */
function chunkBytes(chunk: unknown): number {
  if (typeof chunk === 'string') return chunk.length * 3 < LARGE_ANSWER_BYTES ? 0 : Buffer.byteLength(chunk);
  return Buffer.isBuffer(chunk) ? chunk.length : 0;
}

/**
 * Large answers (an injectable with its payload, a page of payloads) wait in memory until the client
 * has read them: a client that stops reading keeps its answer until the idle timeout drops it. At most
 * `budget` bytes of large answers wait at once; a large answer that would go past it gets 503 with
 * Retry-After instead of pinning more memory. One large answer may always go out, however big, so none
 * is refused for ever. Small answers are not counted. A reservation ends when the client has taken
 * the last byte (`finish`) or the connection is gone (`close`).
 *
 * Every response's `end` is replaced by one function made once (not a closure per request, which cost
 * the runtime check a few µs a call: docs/benchmarks.md); a response whose `end` something else
 * replaced before gets a function of its own around that one.
 */
export function boundLargeAnswers(budget: number, logger: Logger) {
  let pending = 0;
  const bounded = (end: EndFn): End =>
    function (this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
      const size = chunkBytes(chunk);
      if (size < LARGE_ANSWER_BYTES || this.headersSent) return end.call(this, chunk, encoding, callback);
      if (pending > 0 && pending + size > budget) {
        logger.warn(
          { req_id: (this.req as IncomingMessage & { id?: string }).id, bytes: size, pending },
          'Large answer refused: too many bytes wait for slow clients',
        );
        const body = envelope(
          'The service is sending too many large answers to slow clients: try again in a moment.',
        );
        // This answer replaces the one that was to go: a signature made for that body would not match.
        this.removeHeader('X-Service-Date');
        this.removeHeader('X-Service-Signature');
        this.statusCode = 503;
        this.setHeader('Retry-After', '5');
        this.setHeader('Content-Type', 'application/json; charset=utf-8');
        this.setHeader('Content-Length', Buffer.byteLength(body));
        return end.call(this, body);
      }
      pending += size;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        pending -= size;
      };
      this.once('finish', release);
      this.once('close', release);
      return end.call(this, chunk, encoding, callback);
    } as End;
  const boundedNodeEnd = bounded(nodeEnd);
  return (_req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared, and wrapped to be called with the response as this
    const end = res.end as EndFn;
    res.end = end === nodeEnd ? boundedNodeEnd : bounded(end);
    next();
  };
}

/**
 * Graceful stop (SIGTERM, SIGINT, app.close()): Nest's server.close() waits for every connection to
 * end, and a keep-alive connection whose request finished would hold the process for the whole
 * keep-alive timeout. From the moment the app starts closing, answers say `Connection: close`, and
 * connections are closed as soon as they are idle; requests in flight finish.
 */
@Injectable()
export class HttpDrain implements BeforeApplicationShutdown {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  beforeApplicationShutdown(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server?.listening) return;
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) =>
      res.setHeader('Connection', 'close'),
    );
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 100).unref();
    server.once('close', () => clearInterval(sweep));
  }
}
