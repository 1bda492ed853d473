import { HttpStatus, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import cluster from 'node:cluster';
import { createHash, randomBytes } from 'node:crypto';
import { Repository } from 'typeorm';
import { safeEqual } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { ACCOUNT_EXISTS, AuthService } from './auth.service.js';
import { UserEntity } from './user.entity.js';

export const WRONG_SETUP_CODE =
  'This setup link is not the one the server printed: open the link from its output (it changes at each start).';

/**
 * Set by a cluster's primary for its workers, so that every worker takes the one code it printed
 * (docs/operations.md#the-first-account). Not a setting: nobody sets it by hand.
 */
export const SETUP_CODE_ENV = 'LICENSEGATE_SETUP_CODE';

const digest = (code: string) => createHash('sha256').update(code).digest();

/**
 * The first account, made in the browser (docs/security.md#the-first-account). A process that starts
 * on a database without any user holds a setup code (32 random bytes, in memory only) and prints the
 * console's link with it; whoever has the code creates the first user, owner of a new account.
 * Whether a user exists is decided again inside the unit of work that creates one (AuthService
 * createUser's `first`), so two setups, here or on two instances, cannot both make an owner.
 */
@Injectable()
export class SetupService implements OnApplicationBootstrap {
  private code: string | null = null;

  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly auth: AuthService,
  ) {}

  /** A code when the database has no user; a cluster's worker takes its primary's instead of making one. */
  async onApplicationBootstrap(): Promise<void> {
    if (await this.anyUser()) return;
    this.code =
      (cluster.isWorker ? process.env[SETUP_CODE_ENV] : undefined) ?? randomBytes(32).toString('base64url');
  }

  /** The code while this process holds one (main.ts prints it; tests read it here, not from the output). */
  get pendingCode(): string | null {
    return this.code;
  }

  /** Whether the first account is still to be made here (this process holds a code and no user exists). */
  async needed(): Promise<boolean> {
    if (this.code === null) return false;
    if (!(await this.anyUser())) return true;
    this.code = null;
    return false;
  }

  /** Whether `sent` is the code, compared in constant time (digests: the length says nothing either). */
  private matches(sent: string): boolean {
    return this.code !== null && safeEqual(digest(this.code), digest(sent));
  }

  /**
   * Creates the first user with the code; throws 409 when a user exists or this process holds no
   * code, and 403 for another code (the caller counts that as a failed sign-in).
   */
  async createFirstUser(code: string, email: string, password: string): Promise<UserEntity> {
    if (!(await this.needed())) throw new ApiError(HttpStatus.CONFLICT, ACCOUNT_EXISTS);
    if (!this.matches(code)) throw new ApiError(HttpStatus.FORBIDDEN, WRONG_SETUP_CODE);
    try {
      return await this.auth.createUser({ email, password, first: true });
    } finally {
      // Used, or another setup won meanwhile: either way this code has done its work.
      if (await this.anyUser()) this.code = null;
    }
  }

  private async anyUser(): Promise<boolean> {
    return (await this.users.createQueryBuilder('u').select('u.id').limit(1).getOne()) !== null;
  }
}
