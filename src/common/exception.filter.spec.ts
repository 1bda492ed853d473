import { describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { EntityNotFoundError } from 'typeorm';
import { writeError } from './exception.filter.js';

/** A response that records what writeError sends. */
function recorder() {
  const sent: { status?: number; body?: unknown; headers: Record<string, string> } = { headers: {} };
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => (sent.headers[name] = value),
    status(code: number) {
      sent.status = code;
      return res;
    },
    json(body: unknown) {
      sent.body = body;
      return res;
    },
  };
  return { res: res as unknown as Response, sent };
}

describe('writeError', () => {
  it('answers 404 in the envelope when a row vanished under a write (TypeORM EntityNotFoundError)', () => {
    const { res, sent } = recorder();
    const req = { method: 'PATCH', originalUrl: '/api/v1/project/1/domains/5', headers: {} } as unknown as Request;
    writeError(new EntityNotFoundError('DomainEntity', { id: 5 }), req, res, new Logger('test'));
    expect(sent.status).toBe(404);
    expect(sent.body).toMatchObject({ status: 'error', data: null, errors: null });
  });
});
