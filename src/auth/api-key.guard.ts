import {
  applyDecorators,
  CanActivate,
  ExecutionContext,
  Injectable,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';
import { AuditContextInterceptor } from '../audit/audit-context.js';
import { ApiError, forbidden } from '../common/http/errors.js';
import { ApiErrors, API_KEY_SCHEME } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AuthService } from './auth.service.js';
import { AuthedRequest } from './principal.js';

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly auth: AuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context
      .switchToHttp()
      .getRequest<
        AuthedRequest & { method: string; headers: Record<string, string | string[] | undefined> }
      >();
    const sent = req.headers['x-api-key'];
    const key = Array.isArray(sent) ? sent[0] : sent;
    if (!key) throw new ApiError(401, 'API key missing: send it in the X-API-KEY header.');
    req.principal = await this.auth.authenticate(key.trim());
    // Every management write is a POST, PUT, PATCH or DELETE, and no read is.
    if (req.principal.key.read_only && !READS.has(req.method)) throw forbidden(READ_ONLY);
    return true;
  }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const READ_ONLY = 'This API key is read-only.';

/** Guards a route with an API key, runs its writes in their audit context, and documents it. */
export const ApiKeyAuth = () =>
  applyDecorators(
    ThrottleAs('api'),
    UseGuards(ApiKeyGuard),
    UseInterceptors(AuditContextInterceptor),
    ApiSecurity(API_KEY_SCHEME),
    ApiErrors(
      { status: 401, description: 'Missing API key' },
      {
        status: 403,
        description:
          'Invalid, revoked or expired key, a read-only key on a write, or no access to the resource',
      },
      {
        status: 429,
        description: 'Rate limited (THROTTLE_API_LIMIT per API key); Retry-After says when to try again',
      },
    ),
  );
