import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { ApiKeyEntity } from './api-key.entity.js';
import type { UserEntity } from './user.entity.js';

/** The caller behind a valid API key. */
export interface ApiPrincipal {
  key: ApiKeyEntity;
  user: UserEntity;
  /** null for a global key */
  projectId: number | null;
}

export interface AuthedRequest {
  principal?: ApiPrincipal;
}

/** Hands the authenticated API-key caller to a handler. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): ApiPrincipal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new Error('CurrentPrincipal used on a route without ApiKeyAuth()');
  return principal;
});
