import type { Server } from 'node:http';
import { connect, Socket } from 'node:net';
import { makeProject } from '../factories/index.js';
import { expectSuccess } from './envelope.js';
import type { TestApp } from './test-app.js';

/** Clients that stall (send and never read), for the connection-timeout tests. */

export const portOf = (t: TestApp) => Number(new URL(t.url).port);

/** How long after accepting its next connection the server closes it (rejects when it is still open after `ms`). */
export function nextConnectionClosed(server: Server, ms: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('connection', (socket: Socket) => {
      const at = Date.now();
      const timer = setTimeout(
        () => reject(new Error(`the server kept the connection open for ${ms} ms`)),
        ms,
      );
      socket.once('close', () => {
        clearTimeout(timer);
        resolve(Date.now() - at);
      });
    });
  });
}

/**
 * An injectable whose answer is about 11 MB (a 4 MB payload, twice in base64): more than the kernel
 * buffers of a loopback connection hold, so a client that does not read leaves most of it in the server.
 */
export async function bigInjectable(t: TestApp, key: string): Promise<string> {
  const project = await makeProject(t, key);
  const res = await t
    .http()
    .post(`/api/v1/project/${project.id}/injectables`)
    .set('X-API-KEY', key)
    .send({ slug: 'big', secret: 's3cret-s3cret', content: 'x'.repeat(4 * 1024 * 1024) });
  return `/api/v1/project/${project.id}/injectables/${expectSuccess(res, 201).id}`;
}

/** Sends a GET for `path` and never reads a byte of the answer; resolves with how long until the server dropped the connection. */
export async function neverRead(t: TestApp, path: string, key: string, ms: number): Promise<number> {
  const closed = nextConnectionClosed(t.app.getHttpServer() as Server, ms);
  const socket = connect(portOf(t), '127.0.0.1', () => {
    socket.pause();
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${key}\r\n\r\n`);
  });
  socket.on('error', () => undefined);
  try {
    return await closed;
  } finally {
    socket.destroy();
  }
}
