import { HttpStatus, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type * as Oidc from 'openid-client';
import { Repository } from 'typeorm';
import { openSecret, sealSecret } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { loadedWhenUsed } from '../common/lazy-module.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { AccountEntity, MembershipEntity } from './account.entity.js';
import { InvitationEntity, UserIdentityEntity } from './invitation.entity.js';
import { LoginLimits } from './login-limits.js';
import { MembersService } from './members.service.js';
import { verifyPassword } from './passwords.js';
import type { Role } from './roles.js';
import { WRONG_CREDENTIALS } from './sessions.service.js';
import { UserEntity } from './user.entity.js';

/** A sign-in under way lasts this long: the person is at their identity provider meanwhile. */
export const SSO_PENDING_MS = 10 * 60_000;
export const SSO_COOKIE = 'lg_sso';
export const SSO_LINK_COOKIE = 'lg_sso_link';
export const SSO_PATH = '/api/v1/auth/sso';

export const SSO_NOT_CONFIGURED =
  'Single sign-on is not configured: set OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET.';
export const SSO_UNREACHABLE = 'The identity provider could not be reached: try again later.';
export const SSO_MISMATCH =
  'Single sign-on failed: the answer of the identity provider does not belong to this sign-in (state, nonce or code). Start again.';
export const SSO_EMAIL_UNVERIFIED =
  'Your identity provider has not verified your email address (email_verified), so it cannot sign you in.';
export const ssoUnknownEmail = (email: string) =>
  `No member has the email ${email}, and its domain is not admitted: ask an owner or admin of your account for an invitation.`;
export const ssoWrongAddress = (redirectUri: string) =>
  `Single sign-on works from ${redirectUri} only, where your identity provider sends you back: open the console at that address (or set PUBLIC_URL to the one you use).`;
export const SSO_LINK_EXPIRED = 'This single sign-on has expired: sign in with SSO again.';

/** openid-client, loaded with the first sign-in by SSO. */
const library = loadedWhenUsed((): Promise<typeof Oidc> => import('openid-client'));

/** openid-client counts its timeout in seconds; OIDC_TIMEOUT_MS is in milliseconds. */
export const oidcTimeoutSeconds = (ms: number) => ms / 1000;

/**
 * The provider did not answer (timed out, refused the connection, dropped it), as opposed to answering
 * something this sign-in does not accept.
 */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT') return true;
  // What fetch throws when the connection is refused or dropped.
  if (error instanceof TypeError && error.message === 'fetch failed') return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof TypeError || (cause instanceof DOMException && cause.name === 'TimeoutError');
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { message?: string } }).cause;
  return cause?.message ? `${(error as Error).message} (${cause.message})` : (error as Error).message;
}

interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  until: number;
}

interface PendingLink {
  user_id: number;
  issuer: string;
  subject: string;
  until: number;
}

/** What a callback came to: a user to sign in, or a password user who confirms their password once first. */
export type SsoOutcome = { user: UserEntity } | { confirm: string };

/**
 * Single sign-on with OpenID Connect (docs/security.md#sso): the authorization code flow with PKCE,
 * state and nonce, scopes `openid email`. The pending sign-in travels in a sealed cookie (AES-GCM
 * under APP_KEY), so nothing is stored until a person is known. Identities are linked by (issuer,
 * subject); the email finds a person only on their first sign-in.
 */
@Injectable()
export class SsoService {
  private readonly logger = new Logger('SSO');
  /** The provider's configuration, discovered once; a failed discovery is tried again next time. */
  private readonly discovered = loadedWhenUsed(() => this.discover());

  constructor(
    @InjectRepository(UserIdentityEntity) private readonly identities: Repository<UserIdentityEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly members: MembersService,
    private readonly limits: LoginLimits,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** The console's address: it hands the provider's answer (code, state) to POST /auth/sso/callback. */
  get redirectUri(): string {
    return `${this.config.publicUrl}/console/`;
  }

  /** Throws the 404 that says SSO is off (the routes' guard, SsoConfigured, and every step here). */
  assertConfigured(): void {
    if (!this.config.oidcEnabled) throw new ApiError(HttpStatus.NOT_FOUND, SSO_NOT_CONFIGURED);
  }

  /**
   * The provider's configuration (`discovered`). A library that cannot be loaded is the service's
   * fault, not the provider's: it fails as it is (500).
   */
  private configuration(): Promise<Oidc.Configuration> {
    this.assertConfigured();
    return this.discovered();
  }

  /** One discovery: the provider's failure is a 502; the library's, the service's own (500). */
  private async discover(): Promise<Oidc.Configuration> {
    const env = this.config.env;
    const oidc = await library();
    try {
      return await oidc.discovery(
        new URL(env.OIDC_ISSUER!),
        env.OIDC_CLIENT_ID!,
        undefined,
        oidc.ClientSecretBasic(env.OIDC_CLIENT_SECRET),
        {
          // An http issuer is for a provider on this host (tests, local setups); https everywhere else.
          execute: env.OIDC_ISSUER!.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
          // In seconds; it also bounds every later request of this configuration (token, keys).
          timeout: oidcTimeoutSeconds(env.OIDC_TIMEOUT_MS),
        },
      );
    } catch (error) {
      this.logger.warn(`OpenID discovery of ${env.OIDC_ISSUER} failed: ${(error as Error).message}`);
      throw new ApiError(HttpStatus.BAD_GATEWAY, SSO_UNREACHABLE);
    }
  }

  /**
   * The provider's URL to send the browser to, and the sealed cookie that remembers this sign-in.
   * `origin` is the page's that asks (a browser's Origin header). The cookie stays with that origin's
   * host while the provider sends the browser back to PUBLIC_URL: from any other address (127.0.0.1
   * for localhost, a LAN address) the callback would arrive without it and be refused as another
   * sign-in's, after the round trip. Refused here instead, saying where SSO works (before asking the
   * provider anything).
   */
  async start(origin?: string): Promise<{ url: string; cookie: string }> {
    this.assertConfigured();
    if (origin !== undefined && origin !== new URL(this.redirectUri).origin)
      throw new ApiError(HttpStatus.BAD_REQUEST, ssoWrongAddress(this.redirectUri));
    const configuration = await this.configuration();
    const oidc = await library();
    const pending: Pending = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      until: this.clock.nowMs() + SSO_PENDING_MS,
    };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri,
      scope: 'openid email',
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url: url.href, cookie: sealSecret(this.config.appKey, JSON.stringify(pending)) };
  }

  /** The provider sent the browser back with `query`: checks state, nonce and PKCE, then finds or admits the person. */
  async callback(query: string, cookie: string | undefined): Promise<SsoOutcome> {
    this.assertConfigured();
    const pending = this.open<Pending>(cookie);
    if (!pending) throw new ApiError(HttpStatus.BAD_REQUEST, SSO_MISMATCH);
    const configuration = await this.configuration();
    const oidc = await library();
    let claims: Oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(
        configuration,
        new URL(`${this.redirectUri}${query}`),
        {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        },
      );
      claims = tokens.claims();
    } catch (error) {
      if (unreachable(error)) {
        this.logger.warn(`SSO token exchange with ${this.config.env.OIDC_ISSUER} failed: ${describe(error)}`);
        throw new ApiError(HttpStatus.BAD_GATEWAY, SSO_UNREACHABLE);
      }
      this.logger.warn(`SSO callback refused: ${(error as Error).message}`);
      throw new ApiError(HttpStatus.BAD_REQUEST, SSO_MISMATCH);
    }
    if (!claims) throw new ApiError(HttpStatus.BAD_REQUEST, SSO_MISMATCH);
    if (claims.email_verified !== true || typeof claims.email !== 'string')
      throw new ApiError(HttpStatus.BAD_REQUEST, SSO_EMAIL_UNVERIFIED);
    return this.personOf(claims.iss, claims.sub, claims.email.trim().toLowerCase());
  }

  private async personOf(issuer: string, subject: string, email: string): Promise<SsoOutcome> {
    const linked = await this.identities.findOneBy({ issuer, subject });
    if (linked) {
      const user = await this.users.findOneBy({ id: linked.user_id });
      if (user && (await this.users.manager.existsBy(MembershipEntity, { user_id: user.id })))
        return { user };
    }
    const manager = this.users.manager;
    const existing = await manager
      .createQueryBuilder(UserEntity, 'u')
      .addSelect('u.password_hash')
      .where('u.email = :email', { email })
      .getOne();
    if (existing && (await manager.existsBy(MembershipEntity, { user_id: existing.id }))) {
      // Whoever controls the provider's account must also know the password, once, before it stands for it.
      if (existing.password_hash)
        return {
          confirm: this.seal<PendingLink>({
            user_id: existing.id,
            issuer,
            subject,
            until: this.clock.nowMs() + SSO_PENDING_MS,
          }),
        };
      await this.link(existing.id, issuer, subject);
      return { user: existing };
    }
    const invitation = await this.openInvitation(email);
    if (invitation) {
      const { user } = await this.members.join(invitation, existing, null);
      await this.link(user.id, issuer, subject);
      return { user };
    }
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (this.config.oidcAllowedDomains.includes(domain)) {
      // A self-hosted service has one account in the usual case: new people join the first one.
      const [account] = await manager.find(AccountEntity, { order: { id: 'ASC' }, take: 1 });
      if (account) {
        const user = await this.members.admit(account.id, email, this.config.env.OIDC_DEFAULT_ROLE as Role);
        await this.link(user.id, issuer, subject);
        return { user };
      }
    }
    throw new ApiError(HttpStatus.BAD_REQUEST, ssoUnknownEmail(email));
  }

  /** An existing password user confirms their password once: the identity is linked, and they sign in. */
  async confirmLink(
    cookie: string | undefined,
    password: string,
    ip: string | undefined,
  ): Promise<UserEntity> {
    // A link cookie made before SSO was turned off links nothing once it is off.
    this.assertConfigured();
    const pending = this.open<PendingLink>(cookie);
    if (!pending) throw new ApiError(HttpStatus.UNAUTHORIZED, SSO_LINK_EXPIRED);
    const user = await this.users
      .createQueryBuilder('u')
      .addSelect('u.password_hash')
      .where('u.id = :id', { id: pending.user_id })
      .getOne();
    if (!user) throw new ApiError(HttpStatus.UNAUTHORIZED, SSO_LINK_EXPIRED);
    const wait = await this.limits.retryAfterMs(user.email, ip);
    if (wait > 0) {
      const seconds = Math.max(1, Math.ceil(wait / 1000));
      throw new ApiError(
        HttpStatus.TOO_MANY_REQUESTS,
        `Too many failed sign-ins. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`,
        null,
        null,
        {
          'Retry-After': String(seconds),
        },
      );
    }
    if (!(await verifyPassword(user.password_hash, password))) {
      await this.limits.failed(user.email, ip);
      throw new ApiError(HttpStatus.UNAUTHORIZED, WRONG_CREDENTIALS);
    }
    await this.limits.succeeded(user.email, ip);
    await this.link(user.id, pending.issuer, pending.subject);
    delete user.password_hash;
    return user;
  }

  private async link(userId: number, issuer: string, subject: string): Promise<void> {
    if (await this.identities.existsBy({ issuer, subject })) return;
    await this.identities.insert({
      user_id: userId,
      issuer,
      subject,
      created_at: new Date(this.clock.nowMs()),
    });
  }

  private openInvitation(email: string): Promise<InvitationEntity | null> {
    return this.members.openInvitationFor(email);
  }

  private seal<T>(value: T): string {
    return sealSecret(this.config.appKey, JSON.stringify(value));
  }

  /** A sealed cookie's value, or null when missing, forged or past its time. */
  private open<T extends { until: number }>(cookie: string | undefined): T | null {
    if (!cookie) return null;
    try {
      const value = JSON.parse(openSecret(this.config.appKey, decodeURIComponent(cookie))) as T;
      return value.until > this.clock.nowMs() ? value : null;
    } catch {
      return null;
    }
  }
}
