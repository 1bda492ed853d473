import {
  Body,
  CanActivate,
  Controller,
  HttpCode,
  Injectable,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiSchema, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiBodyErrors, ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { RequiredString } from '../common/http/validators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { AppConfig } from '../config/app-config.js';
import { openSession } from './auth.controller.js';
import { Password, SessionResponse } from './dto/session.dto.js';
import { readCookie } from './session.guard.js';
import { SessionsService, WRONG_CREDENTIALS } from './sessions.service.js';
import {
  SSO_COOKIE,
  SSO_EMAIL_UNVERIFIED,
  SSO_LINK_COOKIE,
  SSO_LINK_EXPIRED,
  SSO_MISMATCH,
  SSO_NOT_CONFIGURED,
  SSO_PATH,
  SSO_PENDING_MS,
  SSO_UNREACHABLE,
  SsoService,
  ssoWrongAddress,
} from './sso.service.js';
import type { UserEntity } from './user.entity.js';

export class SsoCallbackDto {
  @ApiProperty({
    maxLength: 4096,
    example: '?code=3q2-7w&state=k4kJ9y&iss=https%3A%2F%2Fid.example.com',
    description: 'The query string the identity provider sent the browser back to the console with',
  })
  @RequiredString('query', 4096)
  query: string;
}

export class ConfirmSsoLinkDto {
  @ApiProperty({ format: 'password', example: 'correct horse battery' })
  @Password('password', 'password')
  password: string;
}

@ApiSchema({ name: 'SsoStarted' })
export class SsoStartedResponse {
  @ApiProperty({ description: 'Send the browser here: the identity provider' })
  authorization_url: string;
}

@ApiSchema({ name: 'SsoSignedIn' })
export class SsoSignedInResponse {
  @ApiProperty({
    enum: ['signed_in', 'confirm_password'],
    description:
      'signed_in: the lg_session cookie is set; confirm_password: a user with a password signs in with SSO for ' +
      'the first time, and confirms the password once with POST /auth/sso/link',
  })
  outcome: 'signed_in' | 'confirm_password';

  @ApiPropertyOptional({ type: SessionResponse, nullable: true })
  session: SessionResponse | null;
}

/**
 * With SSO off, its routes answer the 404 that says so before their body is validated: a callback
 * with a malformed body would otherwise get a 422 about a field of a flow that is not there. Runs
 * after the global ThrottleGuard, so the call is counted first.
 */
@Injectable()
export class SsoConfigured implements CanActivate {
  constructor(private readonly sso: SsoService) {}

  canActivate(): true {
    this.sso.assertConfigured();
    return true;
  }
}

/**
 * Single sign-on (docs/security.md#sso). The console starts it, sends the browser to the identity
 * provider, which sends it back to the console (the redirect_uri, PUBLIC_URL/console/); the console
 * hands the answer here, and the person is signed in.
 */
@ApiTags('auth')
@ApiErrors(500, DATABASE_AWAY)
@UseGuards(SsoConfigured)
@Controller('auth/sso')
export class SsoController {
  private readonly secure: boolean;

  constructor(
    private readonly sso: SsoService,
    private readonly sessions: SessionsService,
    config: AppConfig,
  ) {
    this.secure = config.publicUrl.startsWith('https:');
  }

  @Post('start')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Start a single sign-on',
    operationId: 'startSso',
    description:
      'Answers the identity provider’s authorization URL (code flow with PKCE, state and nonce; scopes openid email) ' +
      'and keeps what the callback checks in a sealed, HttpOnly cookie for 10 minutes. A browser asks from ' +
      'PUBLIC_URL: the provider sends it back to PUBLIC_URL/console/, where that cookie must be.',
  })
  @ApiEnvelope(SsoStartedResponse)
  @ApiErrors(
    {
      status: 400,
      description: 'Asked from a page at another address than PUBLIC_URL (its Origin header)',
      message: ssoWrongAddress('https://licenses.example.com/console/'),
    },
    { status: 404, description: 'SSO is not configured', message: SSO_NOT_CONFIGURED },
    { status: 429, description: 'Rate limited' },
    { status: 502, description: 'The identity provider could not be reached', message: SSO_UNREACHABLE },
  )
  async start(@Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<SsoStartedResponse> {
    const { url, cookie } = await this.sso.start(req.headers.origin);
    res.cookie(SSO_COOKIE, cookie, this.cookieOptions(SSO_PENDING_MS));
    return { authorization_url: url };
  }

  @Post('callback')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Finish a single sign-on',
    operationId: 'finishSso',
    description:
      'With the query the identity provider sent the browser back with, and the cookie of POST /auth/sso/start. ' +
      'Only an ID token with email_verified true counts. A linked identity (issuer, subject) signs in; else the ' +
      'email finds a member (a user with a password confirms it once), an open invitation, or an email domain ' +
      'of OIDC_ALLOWED_DOMAINS (joining the first account with OIDC_DEFAULT_ROLE).',
  })
  @ApiEnvelope(SsoSignedInResponse)
  @ApiBodyErrors(
    {
      status: 400,
      description:
        'Malformed JSON; or the sign-in is refused: the answer is not this sign-in’s (state, nonce or code; ' +
        `"${SSO_MISMATCH}"), the email is not verified ("${SSO_EMAIL_UNVERIFIED}"), or it is no member’s and ` +
        'its domain is not admitted',
    },
    { status: 404, description: 'SSO is not configured', message: SSO_NOT_CONFIGURED },
    { status: 429, description: 'Rate limited' },
    { status: 502, description: 'The identity provider could not be reached', message: SSO_UNREACHABLE },
  )
  async callback(
    @Body() body: SsoCallbackDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SsoSignedInResponse> {
    const cookie = readCookie(req.headers.cookie, SSO_COOKIE);
    res.clearCookie(SSO_COOKIE, this.cookieOptions());
    const outcome = await this.sso.callback(body.query, cookie);
    if ('confirm' in outcome) {
      res.cookie(SSO_LINK_COOKIE, outcome.confirm, this.cookieOptions(SSO_PENDING_MS));
      return { outcome: 'confirm_password', session: null };
    }
    return { outcome: 'signed_in', session: await this.signIn(outcome.user, req, res) };
  }

  @Post('link')
  @HttpCode(200)
  @ThrottleAs('api')
  @ApiOperation({
    summary: 'Confirm your password to link your SSO identity',
    operationId: 'confirmSsoLink',
    description:
      'Once, after the first SSO sign-in of a user who has a password: the identity is linked and the user ' +
      'signed in (lg_session); later SSO sign-ins need no password.',
  })
  @ApiEnvelope(SessionResponse)
  @ApiBodyErrors(
    {
      status: 401,
      description: `No SSO sign-in to confirm, or it expired; or the password is wrong ("${WRONG_CREDENTIALS}")`,
      message: SSO_LINK_EXPIRED,
    },
    { status: 404, description: 'SSO is not configured', message: SSO_NOT_CONFIGURED },
    { status: 429, description: 'Too many failed tries', retryAfter: true },
  )
  async link(
    @Body() body: ConfirmSsoLinkDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SessionResponse> {
    const user = await this.sso.confirmLink(
      readCookie(req.headers.cookie, SSO_LINK_COOKIE),
      body.password,
      req.ip,
    );
    res.clearCookie(SSO_LINK_COOKIE, this.cookieOptions());
    return this.signIn(user, req, res);
  }

  private async signIn(user: UserEntity, req: Request, res: Response): Promise<SessionResponse> {
    return openSession(this.sessions, user, req, res, this.secure);
  }

  /** Lax, not Strict: the browser arrives from the identity provider's site before the console sends it. */
  private cookieOptions(maxAge?: number) {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.secure, path: SSO_PATH, maxAge };
  }
}
