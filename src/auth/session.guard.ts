import { sha256Hex } from '../common/crypto/crypto.js';
import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiCookieAuth } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiError, forbidden } from '../common/http/errors.js';
import { ApiErrors } from '../common/openapi/decorators.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AuthedRequest } from './principal.js';
import { CSRF_REFUSED, SESSION_COOKIE, SESSION_ENDED, SessionsService } from './sessions.service.js';

export const SESSION_SCHEME = 'session';
export const KEY_IS_NO_SESSION =
  'This route is for a person signed in with a session; an API key has none (see GET /api/v1/api-keys/current).';
export const NOT_SIGNED_IN = 'Not signed in: sign in with POST /api/v1/auth/login.';
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

type SessionRequest = AuthedRequest & {
  method: string;
  headers: Record<string, string | string[] | undefined>;
};

/**
 * Admits a request by its session cookie (docs/security.md#sessions): a valid session, and on a
 * state-changing request its CSRF token in X-CSRF-Token, which a page of another origin cannot read.
 * ApiKeyGuard hands cookie requests here; SessionAuth() routes (the signed-in person's own) take only this.
 */
@Injectable()
export class SessionGuard implements CanActivate {
  constructor(
    private readonly sessions: SessionsService,
    private readonly failures: AuthFailures,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<SessionRequest>();
    const token = readCookie(req.headers.cookie, SESSION_COOKIE);
    // A script with a key has no person behind it: say so, rather than ask it to sign in.
    if (!token && req.headers['x-api-key']) throw forbidden(KEY_IS_NO_SESSION);
    if (!token) throw new ApiError(401, NOT_SIGNED_IN);
    return this.admit(req, token);
  }

  async admit(req: SessionRequest, token: string): Promise<boolean> {
    const principal = await this.sessions.authenticate(token);
    if (principal === null) {
      // Made-up tokens count with made-up keys against the address, once each (docs/security.md).
      await this.failures.failed(req as unknown as Request, sha256Hex(token));
      throw new ApiError(401, SESSION_ENDED);
    }
    if (!READS.has(req.method)) {
      const sent = req.headers['x-csrf-token'];
      if (!this.sessions.csrfMatches(principal.member!.session, Array.isArray(sent) ? sent[0] : sent))
        throw forbidden(CSRF_REFUSED);
    }
    req.principal = principal;
    return true;
  }
}

/** One cookie's value from a Cookie header, or undefined. */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (!text) return undefined;
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Routes of the signed-in person themselves (GET /auth/me, logout, password): a session only.
 * `forbidden` describes the 403s of a write: the missing CSRF token, and what the route adds.
 */
export const SessionAuth = (forbidden?: string) =>
  applyDecorators(
    ThrottleAs('api'),
    UseGuards(SessionGuard),
    ApiCookieAuth(SESSION_SCHEME),
    ApiErrors(
      { status: 401, description: 'No session cookie, or the session has ended', message: NOT_SIGNED_IN },
      {
        status: 429,
        description:
          'Rate limited (THROTTLE_API_LIMIT per session), or too many unknown session tokens from this address',
      },
      forbidden
        ? {
            status: 403,
            description: `${forbidden}; or an API key was sent instead of a session`,
            message: CSRF_REFUSED,
          }
        : {
            status: 403,
            description: 'An API key was sent instead of a session',
            message: KEY_IS_NO_SESSION,
          },
    ),
  );

export const NO_CSRF_TOKEN = 'The session cookie came without its X-CSRF-Token';
