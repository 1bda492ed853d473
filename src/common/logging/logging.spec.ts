import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { pinoHttp } from 'pino-http';
import { QueryFailedError } from 'typeorm';
import { loadConfig } from '../../config/app-config.js';
import { logLinesDropped, runtimeChecks, countAnswer } from '../../metrics/metrics.js';
import { requestLogOptions, RuntimeActivityLog, safeError } from './logging.js';
import { redactLicenseInUrl } from './request-serializers.js';

describe('redactLicenseInUrl', () => {
  it.each([
    ['/api/v1/injectable/stream?license=abc', '/api/v1/injectable/stream?license=[redacted]'],
    ['/x?a=1&license=abc&b=2', '/x?a=1&license=[redacted]&b=2'],
    ['/x?LICENSE=abc', '/x?LICENSE=[redacted]'],
    ['/x?%6Cicense=abc', '/x?%6Cicense=[redacted]'],
    ['/x?license[0]=abc&license%5B1%5D=def', '/x?license[0]=[redacted]&license%5B1%5D=[redacted]'],
    ['/x?license', '/x?license=[redacted]'],
    ['/x?licenses=1&my_license=2', '/x?licenses=1&my_license=2'],
    ['/x?%E0%A4%A=1&license=abc', '/x?%E0%A4%A=1&license=[redacted]'],
    ['/x', '/x'],
    // The fragment goes with the value: it cannot be told from it.
    ['https://shop.example.com/page?license=abc#top', 'https://shop.example.com/page?license=[redacted]'],
  ])('%s → %s', (url, expected) => {
    expect(redactLicenseInUrl(url)).toBe(expected);
  });
});

describe('safeError', () => {
  it('keeps the message, codes and stack of a query error, never its SQL or parameters', () => {
    const driver = Object.assign(new Error("Duplicate entry 'a1b2c3-license-key' for key 'uuid'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sql: "INSERT INTO licenses (uuid, uuid_hash) VALUES ('a1b2c3-license-key', 'f00d')",
      sqlMessage: "Duplicate entry 'a1b2c3-license-key' for key 'uuid'",
    });
    const error = new QueryFailedError(
      'INSERT INTO licenses (uuid, uuid_hash) VALUES (?, ?)',
      ['a1b2c3-license-key', 'f00d'],
      driver,
    );
    const logged = JSON.stringify(
      safeError({ ...error, type: 'QueryFailedError', message: error.message, stack: error.stack }),
    );
    expect(logged).not.toContain('a1b2c3-license-key');
    expect(logged).not.toContain('f00d');
    expect(logged).not.toContain('INSERT INTO');
    expect(logged).toContain("Duplicate entry '[redacted]' for key 'uuid'");
    expect(logged).toContain('ER_DUP_ENTRY');
    expect(logged).toContain('1062');
  });
});

describe('the logger the app writes through', () => {
  it('logs a failed statement without its SQL or parameters', () => {
    const written: string[] = [];
    const sink = new Writable({ write: (chunk, _encoding, done) => (written.push(String(chunk)), done()) });
    const env = loadConfig(
      { NODE_ENV: 'test', APP_KEY: Buffer.alloc(32, 1).toString('base64'), LOG_LEVEL: 'info' },
      () => undefined,
    ).env;
    const { logger } = pinoHttp(requestLogOptions(env), sink);
    const driver = Object.assign(new Error('Lock wait timeout exceeded'), {
      errno: 1205,
      sql: "UPDATE license_usage SET count = count + 1 WHERE license_id = 7 AND day = '2026-11-23'",
    });
    logger.error(
      {
        err: new QueryFailedError(
          'UPDATE license_usage SET count = count + 1 WHERE license_id = ? AND day = ?',
          [7, 'uuid-hash-f00d'],
          driver,
        ),
        req_id: 'r1',
      },
      'Database busy',
    );
    const line = JSON.parse(written.join(''));
    expect(line.err.message).toBe('Lock wait timeout exceeded');
    expect(line.err.driverError.errno).toBe(1205);
    expect(JSON.stringify(line)).not.toContain('uuid-hash-f00d');
    expect(JSON.stringify(line)).not.toContain('UPDATE');
  });
});

describe('RuntimeActivityLog', () => {
  it('answers what the runtime checks did since the last call, and nothing twice', async () => {
    const activity = new RuntimeActivityLog();
    await activity.sinceLast();
    countAnswer(true);
    countAnswer(true);
    countAnswer(false);
    runtimeChecks.inc({ outcome: 'refused_403' });
    logLinesDropped.inc(3);
    expect(await activity.sinceLast()).toEqual({
      runtime_checks: { paid: 2, unpaid: 1, refused_403: 1 },
      log_lines_dropped: 3,
    });
    expect(await activity.sinceLast()).toEqual({ runtime_checks: {}, log_lines_dropped: 0 });
  });
});
