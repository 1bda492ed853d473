import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';
import { ApiError } from '../common/http/errors.js';
import { ApiErrors, API_KEY_SCHEME } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AuthService } from './auth.service.js';
import { AuthedRequest } from './principal.js';

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly auth: AuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthedRequest & { headers: Record<string, string | string[] | undefined> }>();
    const sent = req.headers['x-api-key'];
    const key = Array.isArray(sent) ? sent[0] : sent;
    if (!key) throw new ApiError(401, 'API key missing: send it in the X-API-KEY header.');
    req.principal = await this.auth.authenticate(key.trim());
    return true;
  }
}

/** Guards a route with an API key and documents it. */
export const ApiKeyAuth = () =>
  applyDecorators(
    ThrottleAs('api'),
    UseGuards(ApiKeyGuard),
    ApiSecurity(API_KEY_SCHEME),
    ApiErrors(
      { status: 401, description: 'Missing API key' },
      { status: 403, description: 'Invalid, revoked or expired key, or no access to the resource' },
      { status: 429, description: 'Rate limited (THROTTLE_API_LIMIT per API key); Retry-After says when to try again' },
    ),
  );
