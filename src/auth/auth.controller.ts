import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { ApiBodyErrors, ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AppConfig } from '../config/app-config.js';
import type { MembershipEntity } from './account.entity.js';
import { ChangePasswordDto, LoginDto, SessionResponse } from './dto/session.dto.js';
import { ApiPrincipal, CurrentPrincipal } from './principal.js';
import { NO_CSRF_TOKEN, SessionAuth } from './session.guard.js';
import type { SessionEntity } from './session.entity.js';
import {
  SESSION_ABSOLUTE_MS,
  SESSION_COOKIE,
  SessionsService,
  tooManyLogins,
  WRONG_CREDENTIALS,
  WRONG_CURRENT_PASSWORD,
} from './sessions.service.js';
import type { UserEntity } from './user.entity.js';

const MAX_USER_AGENT = 512;

/** What a session keeps of the browser that opened it: its User-Agent, bounded. */
export const userAgentOf = (req: Request): string | null =>
  req.headers['user-agent']?.slice(0, MAX_USER_AGENT) ?? null;

/** Signing in and out with email and password (docs/security.md#sessions). */
@ApiTags('auth')
@ApiErrors(500, DATABASE_AWAY)
@Controller('auth')
export class AuthController {
  private readonly secure: boolean;

  constructor(
    private readonly sessions: SessionsService,
    config: AppConfig,
  ) {
    // Secure only over https: a cookie marked Secure is not sent back over plain http (localhost).
    this.secure = config.publicUrl.startsWith('https:');
  }

  @Post('login')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Sign in with email and password',
    description:
      'Sets the lg_session cookie (HttpOnly, SameSite=Strict; 12 h idle, 7 days at most) and answers the ' +
      'user, their memberships and the csrf_token to send as X-CSRF-Token. A wrong email and a wrong ' +
      'password answer alike; 10 failures per email and address, or 30 per address, in 15 minutes → 429.',
  })
  @ApiEnvelope(SessionResponse)
  @ApiBodyErrors(
    { status: 401, description: 'Wrong email or password', message: WRONG_CREDENTIALS },
    { status: 429, description: 'Too many failed sign-ins', message: tooManyLogins(900), retryAfter: true },
  )
  async login(
    @Body() body: LoginDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResponse> {
    const signedIn = await this.sessions.login(body.email, body.password, req.ip ?? null, userAgentOf(req));
    setSessionCookie(res, signedIn.token, this.secure);
    return answer(signedIn.user, signedIn.memberships, signedIn.session, signedIn.csrf_token);
  }

  @Get('me')
  @SessionAuth()
  @ApiOperation({
    summary: 'The signed-in user',
    description: 'The user, their memberships and the csrf_token of this session.',
  })
  @ApiEnvelope(SessionResponse)
  async me(@CurrentPrincipal() principal: ApiPrincipal): Promise<SessionResponse> {
    const { user } = principal.member!;
    const session = principal.member!.session!;
    return answer(
      user,
      await this.sessions.membershipsOf(user.id),
      session,
      this.sessions.csrfToken(session.token_hash),
    );
  }

  @Post('logout')
  @HttpCode(200)
  @SessionAuth(NO_CSRF_TOKEN)
  @ApiOperation({ summary: 'Sign out', description: 'Ends this session and clears its cookie.' })
  @ApiEnvelope(null)
  async logout(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<null> {
    await this.sessions.logout(principal.member!.session!);
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', secure: this.secure, path: '/' });
    return null;
  }

  @Post('password')
  @HttpCode(200)
  @SessionAuth(`${NO_CSRF_TOKEN}, or the current password is wrong (${WRONG_CURRENT_PASSWORD})`)
  @ApiOperation({
    summary: 'Change your password',
    description:
      'Needs the current password; the new one has at least 12 characters. Every other session of the user ends.',
  })
  @ApiEnvelope(null)
  @ApiBodyErrors()
  async changePassword(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Body() body: ChangePasswordDto,
    @Req() req: Request,
  ): Promise<null> {
    await this.sessions.changePassword(
      principal.member!,
      body.current_password,
      body.new_password,
      req.ip ?? null,
    );
    return null;
  }
}

/** The lg_session cookie of a new session: HttpOnly, SameSite=Strict, Secure over https. */
export function setSessionCookie(res: Response, token: string, secure: boolean): void {
  res.cookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: '/',
    maxAge: SESSION_ABSOLUTE_MS,
  });
}

/**
 * Opens a session for `user` from this request (a setup, an accepted invitation, an SSO sign-in), sets
 * its cookie, and answers as POST /auth/login does.
 */
export async function openSession(
  sessions: SessionsService,
  user: UserEntity,
  req: Request,
  res: Response,
  secure: boolean,
): Promise<SessionResponse> {
  const opened = await sessions.open(
    user,
    await sessions.membershipsOf(user.id),
    req.ip ?? null,
    userAgentOf(req),
  );
  setSessionCookie(res, opened.token, secure);
  return answer(opened.user, opened.memberships, opened.session, opened.csrf_token);
}

export function answer(
  user: UserEntity,
  memberships: MembershipEntity[],
  session: SessionEntity,
  csrf_token: string,
): SessionResponse {
  return {
    user: { id: user.id, email: user.email, name: user.name },
    memberships: memberships.map(({ id, account_id, role, project_ids }) => ({
      id,
      account_id,
      role,
      project_ids,
    })),
    account_id: session.account_id,
    csrf_token,
    expires_at: toIsoTimestamp(session.expires_at)!,
  };
}
