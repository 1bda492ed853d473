import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ApiError } from '../common/errors.js';
import { ThrottleAs } from '../common/throttling.js';
import { API_KEY_SCHEME } from '../openapi.js';
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
    ApiUnauthorizedResponse({ description: 'Missing API key' }),
    ApiForbiddenResponse({ description: 'Invalid, revoked or expired key, or no access to the resource' }),
  );
