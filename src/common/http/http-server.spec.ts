import type { Logger } from '@nestjs/common';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { boundLargeAnswers, LARGE_ANSWER_BYTES } from './http-server.js';

/** A response to a request of its own, never sent anywhere: what `end` is given is what is read. */
function response(id: string): ServerResponse {
  const req = new IncomingMessage(new Socket()) as IncomingMessage & { id?: string };
  req.id = id;
  return new ServerResponse(req);
}

const quietLogger = () => {
  const warn = jest.fn();
  return { logger: { warn } as unknown as Logger, warn };
};

/**
 * A response whose `end` something replaced before the middleware ran (nothing in the app does; the
 * budget then wraps that `end`), mounted: what the budget passes on is what the spy was called with.
 */
function spied(middleware: ReturnType<typeof boundLargeAnswers>, id: string) {
  const res = response(id);
  const end = jest.fn(() => res);
  res.end = end;
  mount(middleware, res);
  return { res, end };
}

/** What `end` was last called with first: the bytes of the answer that went. */
const lastChunk = (end: jest.Mock) => (end.mock.lastCall as unknown[] | undefined)?.[0];

/** Runs the middleware on `res` and says whether it called next. */
function mount(middleware: ReturnType<typeof boundLargeAnswers>, res: ServerResponse): boolean {
  let nexted = false;
  middleware(res.req, res, () => (nexted = true));
  return nexted;
}

describe('boundLargeAnswers', () => {
  it("gives every response whose end is node's own the same function: no closure per request", () => {
    const bound = boundLargeAnswers(8 * LARGE_ANSWER_BYTES, quietLogger().logger);
    const [a, b] = [response('a'), response('b')];
    expect(mount(bound, a)).toBe(true);
    expect(mount(bound, b)).toBe(true);
    // Compared only, never called apart from their response.
    const ends = [a, b, ServerResponse.prototype].map((target) => Reflect.get(target, 'end') as unknown);
    expect(ends[0]).toBe(ends[1]);
    expect(ends[0]).not.toBe(ends[2]);
  });

  it('a large answer past the budget goes as the 503, through an end replaced before; small ones go as they are', () => {
    const { logger, warn } = quietLogger();
    const bound = boundLargeAnswers(LARGE_ANSWER_BYTES, logger);
    const large = 'x'.repeat(LARGE_ANSWER_BYTES);

    // The first large answer always goes; it holds its bytes until its client has them.
    const { res: first, end: firstEnd } = spied(bound, 'first');
    first.end(large);
    expect(lastChunk(firstEnd)).toBe(large);

    const { res: second, end: secondEnd } = spied(bound, 'second');
    second.setHeader('X-Service-Signature', 'v1,made-for-the-large-body');
    // A small answer is not counted, whatever is pending.
    const small = JSON.stringify({ status: 'success' });
    second.end(small);
    expect(lastChunk(secondEnd)).toBe(small);
    // A third of the bound in characters, three bytes each: counted by its bytes, and refused.
    const euros = Math.ceil(LARGE_ANSWER_BYTES / 3);
    second.end('€'.repeat(euros));
    const body = JSON.stringify({
      status: 'error',
      message: 'The service is sending too many large answers to slow clients: try again in a moment.',
      data: null,
      errors: null,
    });
    expect(lastChunk(secondEnd)).toBe(body);
    expect(second.statusCode).toBe(503);
    expect(second.getHeader('retry-after')).toBe('5');
    expect(second.getHeader('x-service-signature')).toBeUndefined();
    expect(second.getHeader('content-length')).toBe(Buffer.byteLength(body));
    expect(warn).toHaveBeenCalledWith(
      { req_id: 'second', bytes: 3 * euros, pending: LARGE_ANSWER_BYTES },
      'Large answer refused: too many bytes wait for slow clients',
    );

    // Once the first client has its answer, the next large one goes.
    first.emit('finish');
    const { res: third, end: thirdEnd } = spied(bound, 'third');
    third.end(large);
    expect(lastChunk(thirdEnd)).toBe(large);
    expect(third.statusCode).toBe(200);
  });

  it("with node's own end: the 503 past the budget, its log line with the request id, the bytes freed when a client goes", () => {
    const { logger, warn } = quietLogger();
    const bound = boundLargeAnswers(LARGE_ANSWER_BYTES, logger);
    const large = 'x'.repeat(LARGE_ANSWER_BYTES);
    const [first, second, third] = [response('first'), response('second'), response('third')];
    for (const res of [first, second]) mount(bound, res);
    // No socket: the first answer never finishes, so it holds its bytes.
    first.end(large);
    expect(first.statusCode).toBe(200);
    second.end(large);
    expect(second.statusCode).toBe(503);
    expect(second.getHeader('retry-after')).toBe('5');
    expect(warn).toHaveBeenCalledWith(
      { req_id: 'second', bytes: LARGE_ANSWER_BYTES, pending: LARGE_ANSWER_BYTES },
      'Large answer refused: too many bytes wait for slow clients',
    );
    // Its connection gone, the first answer's bytes are free again.
    first.emit('close');
    mount(bound, third);
    third.end(large);
    expect(third.statusCode).toBe(200);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
