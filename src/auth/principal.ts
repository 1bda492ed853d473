import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { MembershipEntity } from './account.entity.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import type { SessionEntity } from './session.entity.js';
import type { UserEntity } from './user.entity.js';

/** A person signed in with a session, acting in one account through their membership. */
export interface Member {
  /** The person signed in (not the account's holder). */
  user: UserEntity;
  membership: MembershipEntity;
  /** null when the member's API key made the call. */
  session: SessionEntity | null;
}

/** The caller behind a valid API key or session. */
export interface ApiPrincipal {
  /** The API key that made the call; null when a session did. */
  key: ApiKeyEntity | null;
  /** The account's holder: whose id the account's projects and keys carry (docs/security.md#accounts). */
  user: UserEntity;
  /** null for a global key */
  projectId: number | null;
  /** The projects a member's membership is limited to; null: every project of the account. */
  projectIds: number[] | null;
  /** Set when a session, or an API key a member made, made the call: it acts with the member's role. */
  member: Member | null;
}

export interface AuthedRequest {
  principal?: ApiPrincipal;
}

/** Hands the authenticated caller to a handler. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): ApiPrincipal => {
  const principal = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new Error('CurrentPrincipal used on a route without ApiKeyAuth()');
  return principal;
});
