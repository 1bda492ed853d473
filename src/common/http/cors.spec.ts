import { describe, expect, it } from '@jest/globals';
import cors from 'cors';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  CORS_ALLOWED_HEADERS,
  CORS_EXPOSED_HEADERS,
  CORS_MAX_AGE,
  CORS_METHODS,
  crossOrigin,
} from './cors.js';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** The headers a middleware sets, in order, and whether it passed the call on or answered it. */
function run(middleware: Middleware, method: string, headers: Record<string, string>) {
  const set: [string, unknown][] = [];
  let answered = false;
  let passed = false;
  const res = {
    statusCode: 200,
    setHeader: (name: string, value: unknown) => set.push([name, value]),
    getHeader: (name: string) => set.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1],
    end: () => (answered = true),
  } as unknown as ServerResponse;
  middleware({ method, headers } as IncomingMessage, res, () => (passed = true));
  return { set, statusCode: res.statusCode, answered, passed };
}

describe('crossOrigin', () => {
  const stock = cors({
    origin: '*',
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE,
  }) as Middleware;

  it.each([
    ['GET', {}],
    ['GET', { origin: 'https://shop.example.com' }],
    ['HEAD', {}],
    ['POST', { origin: 'https://shop.example.com', 'content-type': 'application/json' }],
    ['DELETE', {}],
    ['OPTIONS', { origin: 'https://shop.example.com', 'access-control-request-method': 'POST' }],
  ])('with *, %s %j: the headers cors() sets, in its order', (method, headers) => {
    const ours = run(crossOrigin('*'), method, headers);
    expect(ours).toEqual(run(stock, method, headers));
    expect(ours.set[0]).toEqual(['Access-Control-Allow-Origin', '*']);
  });
});
