import { describe, expect, it, jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../common/http/errors.js';
import { CONSOLE_CSP, consoleDir, serveConsole } from './console.js';

/** The console's answers are tested end to end in test/e2e/console.e2e-spec.ts; here, a missing build. */
describe('serveConsole without a build', () => {
  const warn = jest.fn();
  const serve = serveConsole(
    { warn } as unknown as Logger,
    join(mkdtempSync(join(tmpdir(), 'console-')), 'none'),
  );
  const call = (path: string) => {
    const headers: Record<string, string> = {};
    const res = {
      setHeader: (name: string, value: string) => (headers[name] = value),
    } as unknown as Response;
    let passed: unknown = 'not called';
    const next: NextFunction = (error?: unknown) => (passed = error);
    serve({ path, method: 'GET', originalUrl: path } as Request, res, next);
    return { passed, headers };
  };

  it('says so at start-up, and answers 503 under /console/ (with the CSP)', () => {
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^The console is not built .*npm run build\.$/));
    const { passed, headers } = call('/console/');
    expect(passed).toBeInstanceOf(ApiError);
    expect({ status: (passed as ApiError).getStatus(), message: (passed as ApiError).message }).toEqual({
      status: 503,
      message: 'The console is not built: run npm run build.',
    });
    expect(headers['Content-Security-Policy']).toBe(CONSOLE_CSP);
  });

  it('leaves every other path alone', () => {
    for (const path of ['/api/v1/', '/consoles', '/api/v1/console/'])
      expect(call(path).passed).toBeUndefined();
  });
});

describe('consoleDir', () => {
  it('is dist/console beside a running build, whatever the working directory', () => {
    expect(consoleDir('/srv/app/dist/src/main.js')).toBe('/srv/app/dist/console');
  });

  it('is dist/console under the working directory otherwise (the sources, under jest)', () => {
    expect(consoleDir('/usr/lib/node_modules/jest/bin/jest.js')).toBe(join(process.cwd(), 'dist', 'console'));
    expect(consoleDir('')).toBe(join(process.cwd(), 'dist', 'console'));
  });
});
