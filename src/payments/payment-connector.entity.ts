import { Exclude } from 'class-transformer';
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
import type { ConnectorProduct, LicenseTemplate } from './dto/payment-connector.dto.js';
import type { Provider } from './providers/registry.js';

/**
 * A payment provider connected to a project (docs/payments.md): its events, signed with
 * `signing_secret`, arrive at `endpoint_url` and move the project's or a domain's has_paid.
 */
@Entity('payment_connectors')
@Unique('uq_payment_connectors_token_hash', ['token_hash'])
export class PaymentConnectorEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  project_id: number;

  /** One of the registry's names (payments/providers/registry.ts), which its spec holds to 16 characters. */
  @Column({ type: 'varchar', length: 16 })
  provider: Provider;

  @Column({ type: 'varchar', length: 255, nullable: true })
  name: string | null;

  /** The provider's signing secret, encrypted with APP_KEY (common/crypto/crypto.ts sealSecret). Never returned. */
  @Exclude()
  @Column({ type: 'text', select: false })
  signing_secret: string;

  /** SHA-256 (hex) of the endpoint token: what a delivery's path is looked up by. */
  @Exclude()
  @Column({ type: 'varchar', length: 64 })
  token_hash: string;

  /** The endpoint token, encrypted with APP_KEY, to show endpoint_url again. */
  @Exclude()
  @Column({ type: 'text' })
  token_sealed: string;

  @Column({ type: 'integer', default: 3 })
  grace_days: number;

  @Column({ type: 'boolean', default: false })
  issue_licenses: boolean;

  @Column({ type: 'simple-json', nullable: true })
  license_template: LicenseTemplate | null;

  /**
   * The provider's products this connector acts on (docs/payments.md#products): ids, or `{id, plan}`;
   * null or empty: every product.
   */
  @Column({ type: 'simple-json', nullable: true })
  products: ConnectorProduct[] | null;

  /** Whether an event's buyer may be found by email (docs/payments.md#customers); false: by the provider's id only. */
  @Column({ type: 'boolean', default: false })
  match_customers_by_email: boolean;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  last_event_at: Date | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;

  /** Not a column: PUBLIC_URL + /api/v1/payments/{provider}/{token}, set by the service before answering. */
  endpoint_url?: string;
}
