import { describe, expect, it } from '@jest/globals';
import { Logger, NotFoundException } from '@nestjs/common';
import type { Request, Response } from 'express';
import { EntityNotFoundError, QueryFailedError } from 'typeorm';
import { errorEnvelope, writeError } from './exception.filter.js';

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

/** A logger that records what it is asked to write (and keeps a green run free of expected errors). */
const recordingLogger = () => {
  const lines: Array<{ level: string; args: unknown[] }> = [];
  const logger = {
    warn: (...args: unknown[]) => lines.push({ level: 'warn', args }),
    error: (...args: unknown[]) => lines.push({ level: 'error', args }),
  } as unknown as Logger;
  return { logger, lines };
};

describe('writeError', () => {
  it('answers 404 in the envelope when a row vanished under a write (TypeORM EntityNotFoundError)', () => {
    const { res, sent } = recorder();
    const req = {
      method: 'PATCH',
      originalUrl: '/api/v1/project/1/domains/5',
      headers: {},
    } as unknown as Request;
    const { logger, lines } = recordingLogger();
    writeError(new EntityNotFoundError('DomainEntity', { id: 5 }), req, res, logger);
    expect(sent.status).toBe(404);
    expect(lines).toEqual([]);
    expect(sent.body).toMatchObject({ status: 'error', data: null, errors: null });
  });

  it('answers 503 with Retry-After when the database is busy (lock wait timeout, deadlock past its retries, SQLite busy)', () => {
    const req = { method: 'PATCH', originalUrl: '/api/v1/project/1', headers: {} } as unknown as Request;
    const busy = [
      {
        errno: 1205,
        code: 'ER_LOCK_WAIT_TIMEOUT',
        message: 'Lock wait timeout exceeded; try restarting transaction',
      },
      {
        errno: 1213,
        code: 'ER_LOCK_DEADLOCK',
        message: 'Deadlock found when trying to get lock; try restarting transaction',
      },
      { code: 'SQLITE_BUSY', message: 'database is locked' },
    ];
    for (const driverError of busy) {
      const { res, sent } = recorder();
      const { logger, lines } = recordingLogger();
      writeError(
        new QueryFailedError(
          'UPDATE projects SET name = ?',
          ['x'],
          Object.assign(new Error(driverError.message), driverError),
        ),
        req,
        res,
        logger,
      );
      // One warning per busy answer, naming the driver's code and not the statement.
      expect(lines.map((line) => line.level)).toEqual(['warn']);
      expect(JSON.stringify(lines)).toContain(driverError.code);
      expect(JSON.stringify(lines)).not.toContain('UPDATE projects');
      expect({
        code: driverError.code,
        status: sent.status,
        retryAfter: sent.headers['Retry-After'],
      }).toEqual({ code: driverError.code, status: 503, retryAfter: '1' });
      expect(sent.body).toMatchObject({
        status: 'error',
        message: 'The database is busy: try again in a moment.',
        data: null,
        errors: null,
      });
    }
    // Any other failed statement stays a 500 with the generic message.
    const { res, sent } = recorder();
    const other = Object.assign(new Error("Unknown column 'x'"), { errno: 1054, code: 'ER_BAD_FIELD_ERROR' });
    const { logger, lines } = recordingLogger();
    writeError(new QueryFailedError('SELECT x', [], other), req, res, logger);
    expect(sent.status).toBe(500);
    expect(lines.map((line) => line.level)).toEqual(['error']);
    expect(sent.headers['Retry-After']).toBeUndefined();
  });
});

describe('a database that is away', () => {
  const req = {
    method: 'POST',
    originalUrl: '/api/v1/project/1/licenses',
    headers: {},
    id: 'req-1',
  } as unknown as Request;

  it('answers 503 with Retry-After and says so, logging one warning without the statement or its parameters', () => {
    const errors = [
      // No connection to be had: TypeORM passes mysql2's error on as it is.
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), {
        code: 'ECONNREFUSED',
        errno: -111,
        fatal: true,
      }),
      // The statement got no answer within its deadline.
      new QueryFailedError(
        'SELECT * FROM licenses WHERE uuid_hash = ?',
        ['key-hash-secret'],
        Object.assign(new Error('No answer from the database within 2500 ms.'), {
          code: 'STATEMENT_TIMEOUT',
        }),
      ),
      new QueryFailedError(
        'INSERT INTO `licenses` VALUES (?)',
        ['key-secret'],
        Object.assign(new Error('Connection lost: The server closed the connection.'), {
          code: 'PROTOCOL_CONNECTION_LOST',
          fatal: true,
        }),
      ),
    ];
    for (const error of errors) {
      const { res, sent } = recorder();
      const { logger, lines } = recordingLogger();
      writeError(error, req, res, logger);
      expect({ status: sent.status, retryAfter: sent.headers['Retry-After'], body: sent.body }).toEqual({
        status: 503,
        retryAfter: '1',
        body: {
          status: 'error',
          message: 'The database is unavailable: try again in a moment.',
          data: null,
          errors: null,
        },
      });
      expect(lines.map((line) => line.level)).toEqual(['warn']);
      expect(JSON.stringify(lines)).not.toMatch(/secret|SELECT|INSERT/);
      expect(lines[0].args[0]).toEqual({
        db: {
          code:
            (error as { code?: string }).code ??
            (error as { driverError?: { code: string } }).driverError?.code,
          message: expect.any(String),
        },
        req_id: 'req-1',
      });
    }
  });

  it('says that a change whose COMMIT went unanswered may or may not have been stored', () => {
    const { res, sent } = recorder();
    const timeout = Object.assign(new Error('No answer from the database within 2500 ms.'), {
      code: 'STATEMENT_TIMEOUT',
    });
    writeError(new QueryFailedError('COMMIT', [], timeout), req, res, recordingLogger().logger);
    expect({ status: sent.status, retryAfter: sent.headers['Retry-After'], body: sent.body }).toEqual({
      status: 503,
      retryAfter: '1',
      body: {
        status: 'error',
        message:
          'The database stopped answering while this change was being committed: it may or may not have been stored; check before sending it again.',
        data: null,
        errors: null,
      },
    });
  });
});

describe('errorEnvelope on a request Express never saw (RuntimeFastPath)', () => {
  it("answers a framework 404 from node's own request: no req.app, no req.originalUrl", () => {
    const { res } = recorder();
    const req = { method: 'POST', url: '/api/v1/project/has-paid?x=1', headers: {} } as unknown as Request;
    const answer = errorEnvelope(new NotFoundException(), req, res, new Logger('test'));
    expect(answer).toEqual({
      status: 404,
      body: {
        status: 'error',
        message: 'The route POST /api/v1/project/has-paid could not be found.',
        data: null,
        errors: null,
      },
    });
  });
});
