import { describe, expect, it } from '@jest/globals';
import express, { type NextFunction, type Request, type Response } from 'express';
import { Writable } from 'node:stream';
import { pinoHttp } from 'pino-http';
import request from 'supertest';
import { loadConfig } from '../../config/app-config.js';
import { requestLogOptions } from './logging.js';
import { requestLineLogger } from './pino-nest.js';

/**
 * The request line is written with serializers of its own (request-serializers.ts); pino-http's
 * serializers with pino's redaction paths (requestLogOptions) are what it must equal, byte for byte.
 */
describe('the request line', () => {
  const written: string[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => (written.push(String(chunk)), done()) });
  const env = loadConfig(
    { NODE_ENV: 'test', APP_KEY: Buffer.alloc(32, 1).toString('base64'), LOG_LEVEL: 'info' },
    () => undefined,
  ).env;
  const generic = pinoHttp(requestLogOptions(env), sink).logger;
  const own = requestLineLogger(generic);

  /** Both lines of one request, written once the answer is done, as RequestLogModule writes them. */
  const app = express();
  app.use((req: Request, res: Response, next: NextFunction) => {
    (req as Request & { id: string }).id = String(req.headers['x-request-id'] ?? 'no-id');
    res.on('finish', () => {
      const fields = { reqId: (req as Request & { id: string }).id, req, res, responseTime: 3 };
      if (res.statusCode >= 500) {
        const err = new Error('failed with status code 500');
        generic.error({ ...fields, err }, 'request errored');
        own.error({ ...fields, err }, 'request errored');
      } else {
        generic.info(fields, 'request completed');
        own.info(fields, 'request completed');
      }
    });
    next();
  });
  const answer = (_req: Request, res: Response) => {
    res.setHeader('X-RateLimit-Limit-api', 600);
    res.json({ status: 'ok' });
  };
  app.get('/api/v1/', answer);
  app.get('/api/v1/project/:id/licenses', answer);
  app.post('/api/v1/payments/:provider/:token', answer);
  app.get('/api/v1/failing', (_req, res) => void res.status(500).json({ status: 'error' }));

  /** The two lines of the last request, their times made equal. */
  async function lines(call: request.Test): Promise<[string, string]> {
    written.length = 0;
    await call;
    expect(written).toHaveLength(2);
    const untimed = (line: string) => line.replace(/"time":\d+/, '"time":0');
    return [untimed(written[0]), untimed(written[1])];
  }

  it.each([
    ['GET /', (agent: request.Agent) => agent.get('/api/v1/').set('X-Request-Id', 'r-1')],
    [
      'keys in headers, query, URL and Referer',
      (agent: request.Agent) =>
        agent
          .get('/api/v1/project/7/licenses?per_page=5&license=SECRET-q&LICENSE=SECRET-Q&%6Cicense=SECRET-e')
          .set('X-Request-Id', 'r-2')
          .set('X-API-KEY', 'SECRET-api-key')
          .set('X-LICENSE-KEY', 'SECRET-license-key')
          .set('Authorization', 'Bearer SECRET')
          .set('Referer', 'https://shop.example.com/?license=SECRET-r#top'),
    ],
    [
      'a payment event, its endpoint token and signatures',
      (agent: request.Agent) =>
        agent
          .post('/api/v1/payments/stripe/SECRET-token?x=1')
          .set('Stripe-Signature', 't=1,v1=SECRET')
          .set('Paddle-Signature', 'ts=1;h1=SECRET')
          .set('X-Signature', 'SECRET')
          .set('webhook-signature', 'v1,SECRET')
          .set('webhook-id', 'msg_1')
          .send({ license: 'SECRET-body' }),
    ],
    ['a 5xx, with its error', (agent: request.Agent) => agent.get('/api/v1/failing').set('Referer', '/x')],
    ['an unknown route', (agent: request.Agent) => agent.get('/nowhere?license=SECRET')],
  ])('%s: the same line as pino-http’s serializers and pino’s redaction write', async (_name, call) => {
    const [theirs, ours] = await lines(call(request.agent(app)));
    expect(ours).toBe(theirs);
    expect(ours).not.toContain('SECRET');
  });

  it('says what was asked and answered, keys and signatures redacted', async () => {
    const [, ours] = await lines(
      request(app)
        .get('/api/v1/project/7/licenses?license=k&a=1')
        .set('X-Request-Id', 'r-3')
        .set('X-API-KEY', 'api-key')
        .set('Referer', 'https://shop.example.com/?license=k'),
    );
    const line = JSON.parse(ours);
    expect(Object.keys(line)).toEqual([
      'level',
      'time',
      'pid',
      'hostname',
      'reqId',
      'req',
      'res',
      'responseTime',
      'msg',
    ]);
    expect(line).toMatchObject({
      level: 30,
      reqId: 'r-3',
      req: {
        id: 'r-3',
        method: 'GET',
        url: '/api/v1/project/7/licenses?license=[redacted]&a=1',
        query: { license: '[redacted]', a: '1' },
        params: {},
        headers: { 'x-api-key': '[Redacted]', referer: 'https://shop.example.com/?license=[redacted]' },
        remoteAddress: expect.any(String),
        remotePort: expect.any(Number),
      },
      res: { statusCode: 200, headers: { 'x-ratelimit-limit-api': 600 } },
      responseTime: 3,
      msg: 'request completed',
    });
    expect(Object.keys(line.req)).toEqual([
      'id',
      'method',
      'url',
      'query',
      'params',
      'headers',
      'remoteAddress',
      'remotePort',
    ]);
  });
});
