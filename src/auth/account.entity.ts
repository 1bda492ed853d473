import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';
import type { Role } from './roles.js';

/**
 * An account owns projects; people belong to it through memberships. Its projects, API keys and audit
 * rows carry the id of its holder, the user it was made for (docs/security.md#accounts), whose row
 * also holds the account's limits (max_projects, can_create_licenses, webhooks_enabled).
 */
@Entity('accounts')
export class AccountEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index({ unique: true })
  @Column({ type: 'integer' })
  holder_user_id: number;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}

@Entity('memberships')
@Index(['account_id', 'user_id'], { unique: true })
export class MembershipEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  account_id: number;

  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  @Column({ type: 'varchar', length: 16 })
  role: Role;

  /** The projects this member may reach; null: every project of the account. */
  @Column({ type: 'simple-json', nullable: true })
  project_ids: number[] | null;

  /** Raised on every change of role or projects, so that reads cached for the old one are not served. */
  @Column({ type: 'integer', default: 1 })
  version: number;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}
