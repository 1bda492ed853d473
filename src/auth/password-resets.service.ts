import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { Repository } from 'typeorm';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError } from '../common/http/errors.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AuthService } from './auth.service.js';
import { PasswordResetEntity } from './invitation.entity.js';
import { Mailer } from './mailer.js';
import { assertPasswordShape } from './passwords.js';
import { UserEntity } from './user.entity.js';

export const RESET_TTL_MS = 3_600_000;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
export const RESET_INVALID =
  'This password reset link is not valid: it has been used, has expired, or was replaced. Ask for a new one.';

/**
 * Password resets by mail (docs/security.md#password-reset): a one-use link valid for an hour, stored
 * as the SHA-256 of its token. Asking answers the same whether the email exists or not.
 */
@Injectable()
export class PasswordResetsService {
  constructor(
    @InjectRepository(PasswordResetEntity) private readonly resets: Repository<PasswordResetEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly unit: UnitOfWork,
    private readonly auth: AuthService,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** Mails a reset link to `email` when it has a user and SMTP_URL is set; otherwise does nothing. */
  async request(email: string): Promise<void> {
    if (!this.mailer.enabled) return;
    const user = await this.users.findOneBy({ email: email.trim().toLowerCase() });
    if (!user) return;
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.nowMs();
    await this.unit.run(async (m) => {
      // A new link replaces the user's earlier ones.
      await m.delete(PasswordResetEntity, { user_id: user.id });
      await m.insert(PasswordResetEntity, {
        user_id: user.id,
        token_hash: sha256Hex(token),
        expires_at: new Date(now + RESET_TTL_MS),
        used_at: null,
        created_at: new Date(now),
      });
    });
    const url = `${this.config.publicUrl}/console/#/password-reset/${token}`;
    await this.mailer.send({
      to: user.email,
      subject: 'Reset your LicenseGate password',
      text:
        'Someone asked to reset the password of your LicenseGate user. If it was you, set a new one here ' +
        `(the link works once, for an hour):\n${url}\n\nIf it was not you, ignore this mail.\n`,
    });
  }

  /** Sets the password of the link's user, once; every session of the user ends. False: no such link. */
  async complete(token: string, password: string): Promise<boolean> {
    if (!TOKEN_SHAPE.test(token)) return false;
    const reset = await this.resets.findOneBy({ token_hash: sha256Hex(token) });
    const now = this.clock.nowMs();
    if (!reset || reset.used_at || reset.expires_at.getTime() <= now) return false;
    assertPasswordShape(password);
    const used = await this.resets
      .createQueryBuilder()
      .update(PasswordResetEntity)
      .set({ used_at: new Date(now) })
      .where('id = :id AND used_at IS NULL', { id: reset.id })
      .execute();
    if (!used.affected) return false;
    await this.auth.setPassword(reset.user_id, password);
    return true;
  }
}

export const resetInvalid = () => new ApiError(HttpStatus.NOT_FOUND, RESET_INVALID);
