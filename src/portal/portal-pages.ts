import type { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import type { AuthFailures } from '../common/throttling/auth-failures.js';
import { CONSOLE_CSP, consoleDir, IMMUTABLE, TYPES } from '../console/console.js';
import { LINK_UNKNOWN, PORTAL_SESSION_MS, PortalLinkRefused, type PortalService } from './portal.service.js';

/*
 * The customer portal's pages (docs/portal.md), outside the API like the console: /portal/ is the
 * portal's single-page app (console/build.mjs builds it beside the console, into dist/console/), and
 * /portal/<token> is a link the vendor's server made. GET of a link shows a Continue page and
 * consumes nothing (mail scanners open links); its POST (the Continue button, a plain form) opens
 * the portal. Every answer carries the console's Content-Security-Policy; none is cached.
 */

export const PORTAL_PATH = '/portal';
export const CROSS_SITE_OPEN =
  "This portal link was sent from another site's page: open the link itself, then press Continue.";
const TOKEN_PATH = /^\/portal\/([A-Za-z0-9_-]{1,200})$/;

interface File {
  body: Buffer;
  type: string;
  cache: string;
}

/** portal.html and the portal's hashed assets (portal-<hash>.js/.css, the favicon), by URL path. */
function load(dir: string): { files: Map<string, File>; style: string | null } | null {
  const index = join(dir, 'portal.html');
  if (!existsSync(index)) return null;
  const files = new Map<string, File>();
  const html = { body: readFileSync(index), type: TYPES['.html'], cache: 'no-cache' };
  files.set(`${PORTAL_PATH}/`, html);
  let style: string | null = null;
  const assets = join(dir, 'assets');
  for (const name of existsSync(assets) ? readdirSync(assets) : []) {
    const type = TYPES[name.slice(name.lastIndexOf('.'))];
    if (!type || !/^(portal|favicon)-/.test(name)) continue;
    if (/^portal-\w+\.css$/.test(name)) style = `${PORTAL_PATH}/assets/${name}`;
    files.set(`${PORTAL_PATH}/assets/${name}`, {
      body: readFileSync(join(assets, name)),
      type,
      cache: IMMUTABLE,
    });
  }
  return { files, style };
}

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/** A whole page: no script, no inline style (the CSP allows neither); the portal's stylesheet when built. */
function page(style: string | null, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escape(title)}</title>
${style ? `<link rel="stylesheet" href="${style}">\n` : ''}</head>
<body class="portal-page">
<main class="portal-gate">
${body}
</main>
</body>
</html>
`;
}

/**
 * GET /portal redirects to /portal/; /portal/ and its assets answer the built files; /portal/<token>
 * answers the Continue page (GET, HEAD) or opens the portal (POST). Anything else under /portal is a
 * 404 or 405 in the envelope.
 */
export function servePortal(
  portal: PortalService,
  failures: AuthFailures,
  logger: Logger,
  dir = consoleDir(),
) {
  const built = load(dir);
  if (!built)
    logger.warn(`The portal is not built (${join(dir, 'portal.html')} is missing): run npm run build.`);
  const style = built?.style ?? null;

  /** A refused link: a page for a browser, the envelope for a program that asks for JSON. */
  const refuse = (req: Request, res: Response, next: NextFunction, error: ApiError) => {
    if (req.accepts(['html', 'json']) === 'json') return next(error);
    const message = (error.getResponse() as { message?: string }).message ?? String(error.message);
    res.status(error.getStatus());
    res.setHeader('Content-Type', TYPES['.html']);
    res.end(page(style, 'Link not valid', `<h1>This link cannot be used</h1>\n<p>${escape(message)}</p>`));
  };

  const continuePage = async (req: Request, res: Response, next: NextFunction, token: string) => {
    try {
      const { link, project } = await portal.inspectLink(token);
      const until = toIsoTimestamp(link.expires_at) as string;
      res.status(200);
      res.setHeader('Content-Type', TYPES['.html']);
      const html = page(
        style,
        `Your licenses: ${project.name}`,
        `<h1>Your licenses for ${escape(project.name)}</h1>
<p>Continue to see your licenses, free a site you moved away from and download an offline token.</p>
<form method="post" action="${PORTAL_PATH}/${token}">
<button type="submit" class="primary">Continue</button>
</form>
<p class="muted">This link opens the portal once and works until <time datetime="${until}">${until.replace('T', ' ').replace('Z', ' UTC')}</time>.</p>`,
      );
      if (req.method === 'HEAD') res.end();
      else res.end(html);
    } catch (error) {
      await refused(req, res, next, token, error);
    }
  };

  const open = async (req: Request, res: Response, next: NextFunction, token: string) => {
    // Another site's form posting a link it made would sign this browser in to that site's portal.
    if (req.headers['sec-fetch-site'] === 'cross-site')
      return refuse(req, res, next, new ApiError(403, CROSS_SITE_OPEN));
    try {
      const { token: sessionToken } = await portal.openLink(token, {
        request_id: (req as { id?: string }).id ?? null,
        ip: req.ip ?? null,
        user_agent: req.headers['user-agent']?.slice(0, 512) ?? null,
      });
      res.cookie(portal.cookieName, sessionToken, {
        httpOnly: true,
        sameSite: 'lax',
        secure: portal.secure,
        path: '/',
        maxAge: PORTAL_SESSION_MS,
      });
      res.redirect(303, `${PORTAL_PATH}/`);
    } catch (error) {
      await refused(req, res, next, token, error);
    }
  };

  const refused = async (req: Request, res: Response, next: NextFunction, token: string, error: unknown) => {
    if (!(error instanceof PortalLinkRefused)) return next(error);
    if ((error.getResponse() as { message?: string }).message === LINK_UNKNOWN) {
      // Made-up links count with made-up keys against the address (a 429 past the allowance).
      try {
        await failures.failed(req, sha256Hex(token));
      } catch (tooMany) {
        return next(tooMany);
      }
    }
    refuse(req, res, next, error);
  };

  return (req: Request, res: Response, next: NextFunction): void => {
    const path = req.path;
    if (path !== PORTAL_PATH && !path.startsWith(`${PORTAL_PATH}/`)) return next();
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // The link's token is in the URL: no page sends it anywhere.
    res.setHeader('Referrer-Policy', 'no-referrer');
    const token = TOKEN_PATH.exec(path)?.[1];
    if (token && token !== 'assets') {
      res.setHeader('Cache-Control', 'no-store');
      if (req.method === 'GET' || req.method === 'HEAD') return void continuePage(req, res, next, token);
      if (req.method === 'POST') return void open(req, res, next, token);
      return next(notAllowed(req.method, 'GET, HEAD, POST'));
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return next(notAllowed(req.method, 'GET, HEAD'));
    if (path === PORTAL_PATH) {
      res.redirect(301, `${PORTAL_PATH}/`);
      return;
    }
    if (!built) return next(new ApiError(503, 'The portal is not built: run npm run build.'));
    const file = built.files.get(path);
    if (!file) return next(new ApiError(404, `The route ${req.method} ${path} could not be found.`));
    res.setHeader('Content-Type', file.type);
    res.setHeader('Cache-Control', file.cache);
    res.setHeader('Content-Length', file.body.length);
    res.status(200);
    if (req.method === 'HEAD') res.end();
    else res.end(file.body);
  };
}

const notAllowed = (method: string, allow: string) =>
  new ApiError(
    405,
    `The ${method} method is not supported for this route. Supported methods: ${allow}.`,
    null,
    null,
    { Allow: allow },
  );
