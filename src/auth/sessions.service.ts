import {
  HttpStatus,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { LessThanOrEqual, Repository } from 'typeorm';
import { deriveKey, hmac, safeEqual, sha256Hex } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { AccountEntity, MembershipEntity } from './account.entity.js';
import { LoginLimits } from './login-limits.js';
import { AuthService } from './auth.service.js';
import { verifyPassword } from './passwords.js';
import { ApiPrincipal } from './principal.js';
import { SessionEntity } from './session.entity.js';
import { UserEntity } from './user.entity.js';

/** A session ends after this long without a request, and after ABSOLUTE_MS whatever happens. */
export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_ABSOLUTE_MS = 7 * 86_400_000;
/** last_seen_at is written at most this often: a busy console must not write on every request. */
const TOUCH_EVERY_MS = 60_000;
const PRUNE_EVERY_MS = 3_600_000;

export const SESSION_COOKIE = 'lg_session';
/** 32 random bytes, base64url: the only shape of token this service makes. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export const WRONG_CREDENTIALS = 'The email or password is incorrect.';
export const SESSION_ENDED = 'Your session has ended: sign in again.';
export const CSRF_REFUSED =
  'This request was made with a session cookie but without a valid X-CSRF-Token header: send the csrf_token of GET /api/v1/auth/me.';
export const WRONG_CURRENT_PASSWORD = 'The current password is incorrect.';

export const tooManyLogins = (seconds: number) =>
  `Too many failed sign-ins. Retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;

export interface SignedIn {
  token: string;
  session: SessionEntity;
  user: UserEntity;
  memberships: MembershipEntity[];
  csrf_token: string;
}

/**
 * Users' passwords and sessions (docs/security.md#sessions). A session is found by the SHA-256 of its
 * cookie's token; its CSRF token is an HMAC of that hash, so it is stored nowhere and ends with it.
 */
@Injectable()
export class SessionsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Sessions');
  private readonly csrfKey: Buffer;
  private readonly pruning = new PeriodicTask({
    name: 'prune expired sessions',
    logger: this.logger,
    everyMs: PRUNE_EVERY_MS,
    firstAfterMs: 60_000,
    run: async () => {
      await this.prune();
    },
  });

  constructor(
    @InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    @InjectRepository(MembershipEntity) private readonly memberships: Repository<MembershipEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    private readonly limits: LoginLimits,
    private readonly auth: AuthService,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.csrfKey = deriveKey(config.appKey, 'session-csrf');
  }

  onApplicationBootstrap(): void {
    this.pruning.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pruning.stop();
  }

  csrfToken(tokenHash: string): string {
    return hmac(this.csrfKey, tokenHash).toString('base64url');
  }

  /** Whether `sent` is the CSRF token of the session, compared in constant time. */
  csrfMatches(session: SessionEntity | null, sent: string | undefined): boolean {
    if (!session || !sent || sent.length > 128) return false;
    return safeEqual(Buffer.from(this.csrfToken(session.token_hash)), Buffer.from(sent));
  }

  /**
   * Signs in with email and password. Every failure answers alike and costs alike, whether the email
   * exists, has no password or the password is wrong; each counts against the limits first checked here.
   */
  async login(
    email: string,
    password: string,
    ip: string | null,
    userAgent: string | null,
  ): Promise<SignedIn> {
    const address = ip ?? undefined;
    const wait = await this.limits.retryAfterMs(email, address);
    if (wait > 0) throw tooMany(wait);
    const user = await this.userWithPassword(email);
    const ok = await verifyPassword(user?.password_hash, password);
    const memberships = ok && user ? await this.membershipsOf(user.id) : [];
    if (!ok || !user || memberships.length === 0) {
      await this.limits.failed(email, address);
      throw new ApiError(HttpStatus.UNAUTHORIZED, WRONG_CREDENTIALS);
    }
    await this.limits.succeeded(email, address);
    return this.open(user, memberships, ip, userAgent);
  }

  /** Opens a session for a user already proven (a password, an accepted invitation, SSO). */
  async open(
    user: UserEntity,
    memberships: MembershipEntity[],
    ip: string | null,
    userAgent: string | null,
  ): Promise<SignedIn> {
    const now = this.clock.nowMs();
    await this.sessions.delete({ user_id: user.id, expires_at: LessThanOrEqual(new Date(now)) });
    const token = randomBytes(32).toString('base64url');
    const result = await this.sessions.insert({
      user_id: user.id,
      account_id: memberships[0].account_id,
      token_hash: sha256Hex(token),
      last_seen_at: new Date(now),
      expires_at: new Date(now + SESSION_ABSOLUTE_MS),
      ip: ip?.slice(0, 64) ?? null,
      user_agent: userAgent?.slice(0, 512) ?? null,
      created_at: new Date(now),
    });
    const session = await this.sessions.findOneByOrFail({ id: result.identifiers[0].id as number });
    delete user.password_hash;
    return { token, session, user, memberships, csrf_token: this.csrfToken(session.token_hash) };
  }

  /**
   * The caller behind a session cookie; null when the token is malformed, unknown, past its idle or
   * absolute expiry (such a row is deleted), or its membership is gone.
   */
  async authenticate(token: string): Promise<ApiPrincipal | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const session = await this.sessions.findOneBy({ token_hash: sha256Hex(token) });
    if (!session) return null;
    const now = this.clock.nowMs();
    if (session.expires_at.getTime() <= now || session.last_seen_at.getTime() + SESSION_IDLE_MS <= now) {
      await this.sessions.delete({ id: session.id });
      return null;
    }
    const membership = await this.memberships.findOneBy({
      account_id: session.account_id,
      user_id: session.user_id,
    });
    const account = membership ? await this.accounts.findOneBy({ id: membership.account_id }) : null;
    const [user, holder] = await Promise.all([
      this.users.findOneBy({ id: session.user_id }),
      account ? this.users.findOneBy({ id: account.holder_user_id }) : null,
    ]);
    if (!membership || !user || !holder) {
      await this.sessions.delete({ id: session.id });
      return null;
    }
    if (now - session.last_seen_at.getTime() >= TOUCH_EVERY_MS) {
      session.last_seen_at = new Date(now);
      await this.sessions.update({ id: session.id }, { last_seen_at: session.last_seen_at });
    }
    return {
      key: null,
      user: holder,
      projectId: null,
      projectIds: membership.project_ids,
      member: { user, membership, session },
    };
  }

  async logout(session: SessionEntity): Promise<void> {
    await this.sessions.delete({ id: session.id });
  }

  /** Whether any user can sign in with a password. */
  async usersWithPasswordExist(): Promise<boolean> {
    const row = await this.users
      .createQueryBuilder('u')
      .select('u.id')
      .where('u.password_hash IS NOT NULL')
      .limit(1)
      .getOne();
    return row !== null;
  }

  membershipsOf(userId: number): Promise<MembershipEntity[]> {
    return this.memberships.find({ where: { user_id: userId }, order: { id: 'ASC' } });
  }

  /** A signed-in user's own change of password: the other sessions of the user end, this one stays. */
  async changePassword(
    member: { user: UserEntity; session: SessionEntity | null },
    current: string,
    next: string,
    ip: string | null,
  ): Promise<void> {
    const address = ip ?? undefined;
    const wait = await this.limits.retryAfterMs(member.user.email, address);
    if (wait > 0) throw tooMany(wait);
    const user = await this.userWithPassword(member.user.email);
    if (!(await verifyPassword(user?.password_hash, current))) {
      await this.limits.failed(member.user.email, address);
      throw new ApiError(HttpStatus.FORBIDDEN, WRONG_CURRENT_PASSWORD);
    }
    await this.auth.setPassword(member.user.id, next, {
      field: 'new_password',
      keepSession: member.session?.id,
    });
  }

  /** Deletes sessions past their absolute or idle expiry; returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.nowMs();
    const absolute = await this.sessions.delete({ expires_at: LessThanOrEqual(new Date(now)) });
    const idle = await this.sessions.delete({
      last_seen_at: LessThanOrEqual(new Date(now - SESSION_IDLE_MS)),
    });
    return (absolute.affected ?? 0) + (idle.affected ?? 0);
  }

  private userWithPassword(email: string): Promise<UserEntity | null> {
    return this.users
      .createQueryBuilder('u')
      .addSelect('u.password_hash')
      .where('u.email = :email', { email: email.trim().toLowerCase() })
      .getOne();
  }
}

function tooMany(ms: number): ApiError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ApiError(HttpStatus.TOO_MANY_REQUESTS, tooManyLogins(seconds), null, null, {
    'Retry-After': String(seconds),
  });
}
