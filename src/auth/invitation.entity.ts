import { Exclude } from 'class-transformer';
import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';
import type { Role } from './roles.js';

/** An invitation to join an account with a role (docs/security.md#members-and-invitations). */
@Entity('invitations')
export class InvitationEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  account_id: number;

  @Column({ type: 'varchar', length: 255 })
  email: string;

  @Column({ type: 'varchar', length: 16 })
  role: Role;

  /** The projects the member will reach; null: every project of the account. */
  @Column({ type: 'simple-json', nullable: true })
  project_ids: number[] | null;

  /** SHA-256 of the invitation's token: the token is shown once, in the invitation URL. */
  @Exclude()
  @Column({ type: 'varchar', length: 64, unique: true, select: false })
  token_hash: string;

  @Column({ type: 'integer', nullable: true })
  invited_by_user_id: number | null;

  @IsoTimestamp()
  @Column({ type: 'datetime' })
  expires_at: Date;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  accepted_at: Date | null;

  @Column({ type: 'integer', nullable: true })
  accepted_by_user_id: number | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  revoked_at: Date | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}

/** A one-use link that sets a user's password, mailed on request (docs/security.md#password-reset). */
@Entity('password_resets')
export class PasswordResetEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  @Column({ type: 'varchar', length: 64, unique: true })
  token_hash: string;

  @Column({ type: 'datetime' })
  expires_at: Date;

  @Column({ type: 'datetime', nullable: true })
  used_at: Date | null;

  @Column({ type: 'datetime' })
  created_at: Date;
}

/** An OpenID Connect identity linked to a user: later SSO sign-ins match by (issuer, subject) alone. */
@Entity('user_identities')
@Index(['issuer', 'subject'], { unique: true })
export class UserIdentityEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  @Column({ type: 'varchar', length: 255 })
  issuer: string;

  @Column({ type: 'varchar', length: 255 })
  subject: string;

  @Column({ type: 'datetime' })
  created_at: Date;
}
