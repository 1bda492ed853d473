import { Body, Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiProperty, ApiSchema, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { type AuditContext, clientAddress, inAuditContext } from '../audit/audit-context.js';
import { ApiError, forbidden } from '../common/http/errors.js';
import {
  ApiBodyErrors,
  ApiEnvelope,
  ApiErrors,
  DATABASE_AWAY,
  type ErrorSpec,
} from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AppConfig } from '../config/app-config.js';
import { answer, openSession, userAgentOf } from './auth.controller.js';
import {
  AcceptInvitationDto,
  PasswordResetDto,
  PasswordResetRequestDto,
  SetupDto,
} from './dto/members.dto.js';
import { SessionResponse } from './dto/session.dto.js';
import { LoginLimits } from './login-limits.js';
import {
  INVITATION_EXPIRED,
  INVITATION_INVALID,
  INVITATION_USED,
  MembersService,
  SIGN_IN_TO_ACCEPT,
} from './members.service.js';
import { PasswordResetsService, RESET_INVALID, resetInvalid } from './password-resets.service.js';
import { readCookie } from './session.guard.js';
import { ACCOUNT_EXISTS } from './auth.service.js';
import { SetupService, WRONG_SETUP_CODE } from './setup.service.js';
import { CSRF_REFUSED, SESSION_COOKIE, SessionsService, tooManyLogins } from './sessions.service.js';
import { UserEntity } from './user.entity.js';

/** What the limits count these public routes under, beside failed sign-ins (docs/security.md#sessions). */
const INVITATION_TRIES = 'invitation';
const RESET_TRIES = 'password-reset';
const SETUP_TRIES = 'setup';

/** The 429 of the routes that count tries from an address (checkLimit): setup, invitations, reset links. */
const TOO_MANY_TRIES = {
  status: 429,
  description: 'Too many tries from this address',
  message: tooManyLogins(900),
  retryAfter: true,
} satisfies ErrorSpec;

@ApiSchema({ name: 'SignInOptions' })
export class SignInOptionsResponse {
  @ApiProperty({ description: 'Email and password (always on)' })
  password: boolean;

  @ApiProperty({
    description: 'Sign in with SSO: OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set',
  })
  sso: boolean;

  @ApiProperty({ description: 'The console offers signing in with an API key (CONSOLE_API_KEY_SIGN_IN)' })
  api_key: boolean;

  @ApiProperty({ description: 'Forgotten passwords are reset by mail (SMTP_URL is set)' })
  password_reset: boolean;
}

@ApiSchema({ name: 'SetupState' })
export class SetupStateResponse {
  @ApiProperty({
    description:
      'No user exists yet: the first account is made with the setup link the server printed at start',
  })
  needed: boolean;
}

/**
 * The public ways in (docs/security.md#members-and-invitations): accepting an invitation, resetting a
 * forgotten password, making the first account, and what the console's sign-in offers. Each try counts against the sign-in limits.
 */
@ApiTags('auth')
@ApiErrors(500, DATABASE_AWAY)
@Controller('auth')
export class JoiningController {
  private readonly secure: boolean;

  constructor(
    private readonly members: MembersService,
    private readonly resets: PasswordResetsService,
    private readonly sessions: SessionsService,
    private readonly limits: LoginLimits,
    private readonly setup: SetupService,
    private readonly config: AppConfig,
  ) {
    this.secure = config.publicUrl.startsWith('https:');
  }

  @Get('config')
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'How the console may sign in',
    operationId: 'getSignInOptions',
    description: 'Public: what the sign-in page offers (SSO, an API key, password reset by mail).',
  })
  @ApiEnvelope(SignInOptionsResponse)
  @ApiErrors(429)
  async signInOptions(): Promise<SignInOptionsResponse> {
    return {
      password: true,
      sso: this.config.oidcEnabled,
      api_key: await this.apiKeySignIn(),
      password_reset: Boolean(this.config.env.SMTP_URL),
    };
  }

  /**
   * CONSOLE_API_KEY_SIGN_IN when set; else on, and in production only until a person can sign in
   * otherwise (a user with a password, or SSO).
   */
  private async apiKeySignIn(): Promise<boolean> {
    const set = this.config.env.CONSOLE_API_KEY_SIGN_IN;
    if (set !== undefined) return set;
    if (!this.config.isProduction) return true;
    if (this.config.oidcEnabled) return false;
    return !(await this.sessions.usersWithPasswordExist());
  }

  @Get('setup')
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Whether the first account is still to be made',
    operationId: 'getSetupState',
    description:
      'Public: true while no user exists, when the server printed a setup link at start (docs/security.md#the-first-account).',
  })
  @ApiEnvelope(SetupStateResponse)
  @ApiErrors(429)
  async setupState(): Promise<SetupStateResponse> {
    return { needed: await this.setup.needed() };
  }

  @Post('setup')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Create the first account',
    operationId: 'createFirstAccount',
    description:
      'With the code of the setup link the server printed at start, while no user exists: creates the user ' +
      '(owner of a new account, as the CLI users:create) and signs them in (the lg_session cookie), as ' +
      'POST /auth/login answers. A wrong code counts as a failed sign-in from this address.',
  })
  @ApiEnvelope(SessionResponse)
  @ApiBodyErrors(
    { status: 403, description: 'Not the code the server printed', message: WRONG_SETUP_CODE },
    { status: 409, description: 'A user exists already', message: ACCOUNT_EXISTS },
    TOO_MANY_TRIES,
  )
  async createFirstAccount(
    @Body() body: SetupDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResponse> {
    await this.checkLimit(SETUP_TRIES, req.ip);
    let user: UserEntity;
    try {
      user = await this.setup.createFirstUser(body.code, body.email, body.password);
    } catch (error) {
      if (error instanceof ApiError && error.getStatus() === 403)
        await this.limits.failed(SETUP_TRIES, req.ip);
      throw error;
    }
    return openSession(this.sessions, user, req, res, this.secure);
  }

  @Post('invitations/:token/accept')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Accept an invitation',
    operationId: 'acceptInvitation',
    description:
      'A new user with `password` joins and is signed in (the lg_session cookie). An email that already has a ' +
      'user accepts while signed in as that user (cookie and X-CSRF-Token), without a password. The link works once.',
  })
  @ApiParam({ name: 'token', description: 'The token of the invitation URL' })
  @ApiEnvelope(SessionResponse)
  @ApiBodyErrors(
    { status: 401, description: 'The email has a user who is not signed in', message: SIGN_IN_TO_ACCEPT },
    {
      status: 403,
      description: 'Signed in as another user, or a write without X-CSRF-Token',
      message: CSRF_REFUSED,
    },
    { status: 404, description: 'Unknown or revoked invitation', message: INVITATION_INVALID },
    { status: 409, description: 'Already used', message: INVITATION_USED },
    { status: 410, description: 'Expired', message: INVITATION_EXPIRED },
    TOO_MANY_TRIES,
  )
  async accept(
    @Param('token') token: string,
    @Body() body: AcceptInvitationDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResponse> {
    await this.checkLimit(INVITATION_TRIES, req.ip);
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    const signedIn = cookie ? await this.sessions.authenticate(cookie) : null;
    if (signedIn) {
      const sent = req.headers['x-csrf-token'];
      if (!this.sessions.csrfMatches(signedIn.member!.session, Array.isArray(sent) ? sent[0] : sent))
        throw forbidden(CSRF_REFUSED);
    }
    let joined: { user: UserEntity };
    try {
      // The person is named once they exist (member.joined); the request is known now.
      const context: AuditContext = {
        actor: { type: 'user', api_key_id: null, api_key_prefix: null, user_id: null },
        request_id: (req as Request & { id?: string }).id ?? null,
        ip: clientAddress(req.ip),
        user_agent: userAgentOf(req),
      };
      joined = await inAuditContext(context, () =>
        this.members.accept(token, { password: body.password, signedIn: signedIn?.member?.user ?? null }),
      );
    } catch (error) {
      if (error instanceof ApiError && [404, 409, 410].includes(error.getStatus()))
        await this.limits.failed(INVITATION_TRIES, req.ip);
      throw error;
    }
    if (signedIn) {
      const session = signedIn.member!.session!;
      return answer(
        signedIn.member!.user,
        await this.sessions.membershipsOf(signedIn.member!.user.id),
        session,
        this.sessions.csrfToken(session.token_hash),
      );
    }
    return openSession(this.sessions, joined.user, req, res, this.secure);
  }

  @Post('password-reset')
  @HttpCode(202)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Ask for a password reset link',
    operationId: 'requestPasswordReset',
    description:
      'Always 202, whether the email has a user or not. With SMTP_URL set, a user of that email is mailed a ' +
      'link that works once, for an hour; without it, an operator resets with the CLI (users:set-password).',
  })
  @ApiEnvelope(null, { status: 202 })
  @ApiBodyErrors({
    status: 429,
    description: 'Too many requests for this email or address',
    message: tooManyLogins(900),
    retryAfter: true,
  })
  async requestReset(@Body() body: PasswordResetRequestDto, @Req() req: Request): Promise<null> {
    const key = `${RESET_TRIES}:${body.email.trim().toLowerCase()}`;
    await this.checkLimit(key, req.ip);
    await this.limits.failed(key, req.ip);
    await this.resets.request(body.email);
    return null;
  }

  @Post('password-reset/:token')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Set a new password with a reset link',
    operationId: 'completePasswordReset',
    description:
      'The link works once; every session of the user ends, and they sign in with the new password.',
  })
  @ApiParam({ name: 'token', description: 'The token of the mailed link' })
  @ApiEnvelope(null)
  @ApiBodyErrors(
    { status: 404, description: 'Unknown, used, replaced or expired link', message: RESET_INVALID },
    TOO_MANY_TRIES,
  )
  async completeReset(
    @Param('token') token: string,
    @Body() body: PasswordResetDto,
    @Req() req: Request,
  ): Promise<null> {
    await this.checkLimit(RESET_TRIES, req.ip);
    if (!(await this.resets.complete(token, body.password))) {
      await this.limits.failed(RESET_TRIES, req.ip);
      throw resetInvalid();
    }
    return null;
  }

  private async checkLimit(key: string, ip: string | undefined): Promise<void> {
    const wait = await this.limits.retryAfterMs(key, ip);
    if (wait <= 0) return;
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    throw new ApiError(429, tooManyLogins(seconds), null, null, { 'Retry-After': String(seconds) });
  }
}
