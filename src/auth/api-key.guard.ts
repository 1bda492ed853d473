import {
  applyDecorators,
  CanActivate,
  ExecutionContext,
  Injectable,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { ApiCookieAuth, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import { AuditContextInterceptor } from '../audit/audit-context.js';
import { ApiError, forbidden } from '../common/http/errors.js';
import { ApiErrors, API_KEY_SCHEME } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AuthService, INVALID_API_KEY } from './auth.service.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';
import { AuthedRequest } from './principal.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import { operationOf, reaches, requiredRole, roleRefusal } from './roles.js';
import { SESSION_COOKIE } from './sessions.service.js';
import { readCookie, SESSION_SCHEME, SessionGuard } from './session.guard.js';

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly failures: AuthFailures,
    private readonly sessions: SessionGuard,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context
      .switchToHttp()
      .getRequest<
        AuthedRequest & { method: string; headers: Record<string, string | string[] | undefined> }
      >();
    const sent = req.headers['x-api-key'];
    const key = Array.isArray(sent) ? sent[0] : sent;
    // The API key decides when both are sent: a script's key is not overruled by a browser's cookie.
    if (!key) {
      const token = readCookie(req.headers.cookie, SESSION_COOKIE);
      if (token) {
        await this.sessions.admit(req, token);
        return assertRole(req);
      }
    }
    if (!key)
      throw new ApiError(
        401,
        req.headers['x-license-key']
          ? 'API key missing: send it in the X-API-KEY header; this endpoint does not take license keys (X-LICENSE-KEY).'
          : 'API key missing: send it in the X-API-KEY header.',
      );
    const principal = await this.auth.authenticate(key.trim());
    if (principal === null) {
      // Counted per address only once known not to be a key: a valid key is never refused for its
      // address's guesses (docs/security.md#unknown-keys).
      await this.failures.failed(req as unknown as Request, sha256Hex(key.trim()));
      throw forbidden(LICENSE_KEY_SHAPE.test(key.trim()) ? LICENSE_KEY_AS_API_KEY : INVALID_API_KEY);
    }
    req.principal = principal;
    // Every management write is a POST, PUT, PATCH or DELETE, and no read is.
    if (req.principal.key?.read_only && !READS.has(req.method)) throw forbidden(READ_ONLY);
    return assertRole(req);
  }
}

/**
 * A member (signed in, or through a key they made) may call the route if their role reaches the
 * route's least role in ROUTE_ROLES; other keys act as the account's owner.
 */
function assertRole(req: AuthedRequest & { method: string; route?: { path?: string } }): boolean {
  const member = req.principal?.member;
  if (!member) return true;
  const least = requiredRole(operationOf(req.method, String(req.route?.path ?? '')));
  if (!reaches(member.membership.role, least)) throw forbidden(roleRefusal(least, member.membership.role));
  return true;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** A license key is a uuid; an API key starts with lg_: easy to tell apart, so the refusal says which header. */
const LICENSE_KEY_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const LICENSE_KEY_AS_API_KEY =
  'This is a license key, not an API key: license keys go in the X-LICENSE-KEY header of the runtime endpoints; X-API-KEY takes API keys (lg_…).';
export const READ_ONLY = 'This API key is read-only.';

/** Guards a route with an API key or a session (the key decides when both are sent), runs its writes in their audit context, and documents it. */
export const ApiKeyAuth = () =>
  applyDecorators(
    ThrottleAs('api'),
    UseGuards(ApiKeyGuard),
    UseInterceptors(AuditContextInterceptor),
    ApiSecurity(API_KEY_SCHEME),
    ApiCookieAuth(SESSION_SCHEME),
    ApiErrors(
      { status: 401, description: 'Missing API key' },
      {
        status: 403,
        description:
          'Invalid, revoked or expired key, a read-only key on a write, or no access to the resource',
      },
      {
        status: 429,
        description:
          'Rate limited (THROTTLE_API_LIMIT per API key), or too many unknown or malformed keys from this address (THROTTLE_AUTH_FAILURES_LIMIT); Retry-After says when to try again',
      },
    ),
  );
