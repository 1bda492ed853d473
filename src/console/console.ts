import type { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ApiError } from '../common/http/errors.js';

/*
 * The console (docs/console.md): a single-page app built by console/build.mjs into dist/console/, served
 * here from memory, before the API's routers. It is a sibling of the API, not a tenant: it reaches the
 * API only through HTTP, like any other client. Its answers are not throttled (a page load is several
 * files, and the root limit of 60 a minute per IP is for GET /api/v1/); they cost a map lookup.
 */

export const CONSOLE_PATH = '/console';
/** Where `npm run build` writes the console: dist/console/, beside dist/src/. */
export const CONSOLE_DIST = 'dist/console';

/**
 * The built console beside the running build (dist/src/main.js → dist/console/), wherever the
 * process was started from; when the sources run (tests), dist/console/ under the working directory.
 */
export function consoleDir(entry = process.argv[1] ?? ''): string {
  const dir = dirname(resolve(entry));
  return basename(dir) === 'src' && basename(dirname(dir)) === 'dist'
    ? join(dirname(dir), 'console')
    : resolve(CONSOLE_DIST);
}

/** The console's own script, styles and API calls come from this origin only; nothing inline. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

export const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};
export const IMMUTABLE = 'public, max-age=31536000, immutable';

interface File {
  body: Buffer;
  type: string;
  cache: string;
}

/** index.html (revalidated on every load) and the hashed assets (cached for a year), by URL path. */
function load(dir: string): Map<string, File> | null {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) return null;
  const files = new Map<string, File>();
  const html = { body: readFileSync(index), type: TYPES['.html'], cache: 'no-cache' };
  files.set(`${CONSOLE_PATH}/`, html);
  files.set(`${CONSOLE_PATH}/index.html`, html);
  const assets = join(dir, 'assets');
  for (const name of existsSync(assets) ? readdirSync(assets) : []) {
    const type = TYPES[name.slice(name.lastIndexOf('.'))];
    if (type)
      files.set(`${CONSOLE_PATH}/assets/${name}`, {
        body: readFileSync(join(assets, name)),
        type,
        cache: IMMUTABLE,
      });
  }
  return files;
}

/**
 * GET /console redirects to /console/; GET and HEAD of /console/ and its assets answer the files;
 * another method is 405 and an unknown file 404, both in the envelope. Every answer under /console
 * carries the console's Content-Security-Policy.
 */
export function serveConsole(logger: Logger, dir = consoleDir()) {
  const files = load(dir);
  if (!files)
    logger.warn(`The console is not built (${join(dir, 'index.html')} is missing): run npm run build.`);
  return (req: Request, res: Response, next: NextFunction): void => {
    const path = req.path;
    if (path !== CONSOLE_PATH && !path.startsWith(`${CONSOLE_PATH}/`)) return next();
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return next(
        new ApiError(
          405,
          `The ${req.method} method is not supported for this route. Supported methods: GET, HEAD.`,
          null,
          null,
          { Allow: 'GET, HEAD' },
        ),
      );
    if (path === CONSOLE_PATH) {
      const query = req.originalUrl.indexOf('?');
      res.redirect(301, `${CONSOLE_PATH}/${query === -1 ? '' : req.originalUrl.slice(query)}`);
      return;
    }
    if (!files) return next(new ApiError(503, 'The console is not built: run npm run build.'));
    const file = files.get(path);
    if (!file) return next(new ApiError(404, `The route ${req.method} ${path} could not be found.`));
    res.setHeader('Content-Type', file.type);
    res.setHeader('Cache-Control', file.cache);
    res.setHeader('Content-Length', file.body.length);
    res.status(200);
    if (req.method === 'HEAD') res.end();
    else res.end(file.body);
  };
}
