import { Exclude } from 'class-transformer';
import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

/** Default values for license fields the caller omits (docs/decisions.md#licenses). */
export type LicenseDefaults = Partial<{
  expires_at: string | null;
  max_domains: number | null;
  max_subdomains_per_domain: number | null;
  max_usage_per_day: number | null;
  allowed_ips: string | null;
  allowed_countries: string | null;
  is_test_license: boolean;
  allow_configs: boolean;
}>;

@Entity('users')
export class UserEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'varchar', length: 255, unique: true })
  email: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  name: string | null;

  /** null = unlimited */
  @Column({ type: 'integer', nullable: true })
  max_projects: number | null;

  @Column({ type: 'boolean', default: true })
  can_create_licenses: boolean;

  @Column({ type: 'boolean', default: true })
  webhooks_enabled: boolean;

  /** Argon2id (PHC string); null: this user signs in with no password (API keys, SSO). */
  @Exclude()
  @Column({ type: 'varchar', length: 255, nullable: true, select: false })
  password_hash?: string | null;

  @Column({ type: 'simple-json', nullable: true })
  license_defaults: LicenseDefaults | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}
