import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiCookieAuth } from '@nestjs/swagger';
import type { Request } from 'express';
import type { AuditContext } from '../audit/audit-context.js';
import { readCookie } from '../auth/session.guard.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError, forbidden } from '../common/http/errors.js';
import { ApiErrors, PORTAL_SCHEME } from '../common/openapi/decorators.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { SESSION_COOKIE } from '../auth/sessions.service.js';
import {
  NOT_A_PORTAL_CREDENTIAL,
  NOT_IN_PORTAL,
  PORTAL_CSRF_REFUSED,
  PORTAL_SESSION_ENDED,
  type PortalPrincipal,
  PortalService,
} from './portal.service.js';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const MAX_USER_AGENT = 512;

export type PortalRequest = Request & { portal?: PortalPrincipal; id?: string };

/**
 * Admits a request by the portal's cookie alone (docs/portal.md): an API key or a console session
 * opens nothing here, and the portal's cookie opens nothing elsewhere (ApiKeyGuard and SessionGuard
 * read only theirs). A write also carries the session's CSRF token in X-CSRF-Token.
 */
@Injectable()
export class PortalGuard implements CanActivate {
  constructor(
    private readonly portal: PortalService,
    private readonly failures: AuthFailures,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<PortalRequest>();
    const token = readCookie(req.headers.cookie, this.portal.cookieName);
    // A script's key or a vendor's console session has no buyer behind it: say so, rather than ask for a link.
    if (!token && (req.headers['x-api-key'] || readCookie(req.headers.cookie, SESSION_COOKIE)))
      throw forbidden(NOT_A_PORTAL_CREDENTIAL);
    if (!token) throw new ApiError(401, NOT_IN_PORTAL);
    const principal = await this.portal.authenticate(token);
    if (principal === null) {
      // Made-up tokens count with made-up keys against the address (docs/security.md).
      await this.failures.failed(req, sha256Hex(token));
      throw new ApiError(401, PORTAL_SESSION_ENDED);
    }
    if (!READS.has(req.method)) {
      const sent = req.headers['x-csrf-token'];
      if (!this.portal.csrfMatches(principal.session, Array.isArray(sent) ? sent[0] : sent))
        throw forbidden(PORTAL_CSRF_REFUSED);
    }
    req.portal = principal;
    return true;
  }
}

/** The request part of a portal write's audit context; PortalService adds the portal actor. */
export function portalRequest(req: PortalRequest): Omit<AuditContext, 'actor'> {
  const ip = req.ip ?? null;
  return {
    request_id: req.id ?? null,
    ip: ip && ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip,
    user_agent: req.headers['user-agent']?.slice(0, MAX_USER_AGENT) ?? null,
  };
}

/** The customer portal's routes: the portal cookie only, counted per portal session, documented. */
export const PortalAuth = () =>
  applyDecorators(
    ThrottleAs('api'),
    UseGuards(PortalGuard),
    ApiCookieAuth(PORTAL_SCHEME),
    ApiErrors(
      {
        status: 401,
        description:
          'No portal cookie (API keys and console sessions open nothing here), or the portal session has ended',
        message: NOT_IN_PORTAL,
      },
      {
        status: 403,
        description: 'An API key or a console session was sent instead of the portal cookie',
        message: NOT_A_PORTAL_CREDENTIAL,
      },
      {
        status: 429,
        description:
          'Rate limited (THROTTLE_API_LIMIT per portal session), or too many unknown portal tokens from this address',
      },
    ),
  );
