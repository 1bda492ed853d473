import { expect } from '@jest/globals';
import { type OutgoingHttpHeaders, request } from 'node:http';
import type { Response } from 'supertest';
import { expectError } from './envelope.js';
import type { TestApp } from './test-app.js';

/** Requests under /api/v1 with `Accept: application/json` and, when given, X-API-KEY. */
export function apiAs(t: TestApp, key?: string) {
  const wrap = <R extends { set(name: string, value: string): R }>(req: R): R => {
    req.set('Accept', 'application/json');
    if (key !== undefined) req.set('X-API-KEY', key);
    return req;
  };
  return {
    get: (path: string) => wrap(t.http().get(`/api/v1${path}`)),
    post: (path: string, body?: unknown) => {
      const req = wrap(t.http().post(`/api/v1${path}`));
      return body === undefined ? req : req.send(body as object);
    },
    patch: (path: string, body: unknown) => wrap(t.http().patch(`/api/v1${path}`)).send(body as object),
    put: (path: string, body: unknown) => wrap(t.http().put(`/api/v1${path}`)).send(body as object),
    delete: (path: string) => wrap(t.http().delete(`/api/v1${path}`)),
  };
}

/** Any 4xx, in the error envelope. */
export function expectClientError(res: Response) {
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expectError(res, res.status);
}

/**
 * A POST sent with node's own client, as given: what supertest would change goes out unchanged (a
 * URL's fragment, which it drops; a header given as a list, which it joins into one line). The answer
 * in supertest's shape: status, headers, text, and body when the text is JSON.
 */
export function postAsIs(t: TestApp, path: string, headers: OutgoingHttpHeaders): Promise<Response> {
  return new Promise((done, fail) => {
    const { port } = new URL(t.url);
    const req = request({ host: '127.0.0.1', port: Number(port), method: 'POST', path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined; // not JSON: the text alone
        }
        done({ status: res.statusCode, headers: res.headers, text, body } as unknown as Response);
      });
    });
    req.on('error', fail).end();
  });
}
