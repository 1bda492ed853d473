import { Exclude, Expose } from 'class-transformer';
import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryGeneratedColumn,
  Unique,
  UpdateDateColumn,
} from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

export type ExpiryNotice = 'expiring' | 'expired';
export const LICENSE_BILLINGS = ['project', 'license'] as const;
export type LicenseBilling = (typeof LICENSE_BILLINGS)[number];
export type RevokedBy = 'vendor' | 'payment';

@Entity('licenses')
@Unique('uq_licenses_project_title', ['project_id', 'title'])
@Index(
  'uq_licenses_payment_reference',
  ['project_id', 'payment_provider', 'payment_reference_kind', 'payment_reference_id'],
  { unique: true },
)
export class LicenseEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  project_id: number;

  @Exclude()
  @Column({ type: 'integer' })
  user_id: number;

  /** The license key handed to customers (X-LICENSE-KEY). */
  @Column({ type: 'varchar', length: 36, unique: true })
  uuid: string;

  /** SHA-256 of uuid; runtime lookups go by this. */
  @Exclude()
  @Column({ type: 'varchar', length: 64, unique: true })
  uuid_hash: string;

  @Column({ type: 'varchar', length: 255 })
  title: string;

  @Index()
  @Column({ type: 'integer', nullable: true })
  domain_id: number | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  expires_at: Date | null;

  @Column({ type: 'integer', nullable: true })
  max_domains: number | null;

  @Column({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @Column({ type: 'integer', nullable: true })
  max_usage_per_day: number | null;

  @Column({ type: 'text', nullable: true })
  allowed_ips: string | null;

  @Column({ type: 'text', nullable: true })
  allowed_countries: string | null;

  @Column({ type: 'boolean', default: false })
  is_test_license: boolean;

  @Column({ type: 'boolean', default: false })
  allow_configs: boolean;

  /** Internal enforcement mode, e.g. `project_domains`. Never returned. */
  @Exclude()
  @Column({ type: 'varchar', length: 32, default: 'project_domains' })
  validate_against: string;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  revoked_at: Date | null;

  /**
   * The last expiry notice sent for the current expires_at: null, 'expiring' or 'expired'. Claimed by
   * LicenseLifecycle with a conditional update; reset when expires_at changes. Never returned.
   */
  @Exclude()
  @Column({ type: 'varchar', length: 16, nullable: true })
  expiry_notice: ExpiryNotice | null;

  /** A license issued from a payment connector's order: the provider, and its order or subscription id. */
  @Exclude()
  @Column({ type: 'varchar', length: 16, nullable: true })
  payment_provider: string | null;

  @Exclude()
  @Column({ type: 'varchar', length: 255, nullable: true })
  payment_reference_id: string | null;

  /** `subscription` or `order`: with the connector, which purchase row the reference names. */
  @Exclude()
  @Column({ type: 'varchar', length: 16, nullable: true })
  payment_reference_kind: 'subscription' | 'order' | null;

  /** `{provider, reference}` of the order or subscription the license was issued for, or null. */
  @Expose()
  get payment_reference(): {
    provider: string;
    reference: string;
    kind: 'subscription' | 'order' | null;
  } | null {
    return this.payment_provider && this.payment_reference_id
      ? {
          provider: this.payment_provider,
          reference: this.payment_reference_id,
          kind: this.payment_reference_kind ?? null,
        }
      : null;
  }

  /**
   * A license from an order whose payment stopped: revoked by the grace scheduler at this time
   * (docs/payments.md). Null when no grace runs.
   */
  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  grace_until: Date | null;

  /**
   * `project` (the default: the project or its domains are paid) or `license` (the license carries its
   * own payment in has_paid, docs/api.md#licenses-that-carry-their-own-payment).
   */
  @Column({ type: 'varchar', length: 16, default: 'project' })
  billing: LicenseBilling;

  /** A `billing: license` license's own paid flag. */
  @Column({ type: 'boolean', default: false })
  has_paid: boolean;

  /** The customer of the same project this license was sold to, or null. */
  @Column({ type: 'integer', nullable: true })
  customer_id: number | null;

  /** Who revoked it: `vendor` (sticky) or `payment` (a paid event may reactivate it); null when not revoked. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  revoked_by: RevokedBy | null;

  /** The plan of the same project whose entitlements and limits apply, or null (docs/plans.md). */
  @Column({ type: 'integer', nullable: true })
  plan_id: number | null;

  /** Entitlement overrides over the plan's, key by key (JSON text), or null. */
  @Column({ type: 'simple-json', nullable: true })
  entitlements: Record<string, boolean | number | string> | null;

  /** The plan as answers show it, or null: set by LicensesService (withPlan), not a column. */
  @Expose()
  plan?: { id: number; code: string; name: string } | null;

  /** The plan's entitlements overridden by the license's: set with `plan`, not a column. */
  @Expose()
  effective_entitlements?: Record<string, boolean | number | string>;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}
