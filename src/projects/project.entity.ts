import { Exclude } from 'class-transformer';
import {
  Column,
  CreateDateColumn,
  DeleteDateColumn,
  Entity,
  Index,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

/** A JSON value in a VARCHAR column (MySQL gives TEXT, simple-json's type, no plain default). */
const jsonText = {
  to: (value: unknown) => (value === undefined ? undefined : JSON.stringify(value)),
  from: (value: string | null) => (value === null ? null : (JSON.parse(value) as unknown)),
};

@Entity('projects')
export class ProjectEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Exclude()
  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  @Exclude()
  @Column({ type: 'integer', nullable: true })
  license_key_id: number | null;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 255, unique: true })
  slug: string;

  @Column({ type: 'varchar', length: 1000, nullable: true })
  description: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  default_redirect_url: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  webhook_url: string | null;

  /** Encrypted with APP_KEY (common/secret-box). Accepted at creation, never returned. */
  @Exclude()
  @Column({ type: 'text', nullable: true, select: false })
  webhook_secret: string | null;

  /** The webhook events the project is sent: event types, or ["*"] for every one (the default). */
  @Column({ type: 'varchar', length: 2000, default: '["*"]', transformer: jsonText })
  webhook_events: string[];

  /** false: no event is written to the outbox, whatever webhook_events says. */
  @Column({ type: 'boolean', default: true })
  webhook_enabled: boolean;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  logo_url: string | null;

  @Column({ type: 'simple-json' })
  meta: Record<string, unknown>;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  @Column({ type: 'boolean', default: false })
  has_paid: boolean;

  /**
   * Set by a payment connector's unpaid event: has_paid stays true until then, and runtime answers carry
   * it; the grace scheduler then sets has_paid false (docs/payments.md). Null when no grace runs.
   */
  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  grace_until: Date | null;

  /** Hours an offline token stays valid after it is issued; 0 issues none (docs/decisions.md#signed-answers-and-offline-tokens). */
  @Column({ type: 'integer', default: 72 })
  offline_grace_hours: number;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  locked_at: Date | null;

  @Exclude()
  @Column({ type: 'varchar', length: 1000, nullable: true })
  lock_reason: string | null;

  /** Ed25519 public key (SPKI PEM) that signs this project's injectables. */
  @Exclude()
  @Column({ type: 'text' })
  signing_public_key: string;

  /** Ed25519 private key (PKCS#8 PEM), encrypted with APP_KEY. */
  @Exclude()
  @Column({ type: 'text', select: false })
  signing_private_key: string;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;

  @Exclude()
  @DeleteDateColumn({ type: 'datetime', nullable: true })
  deleted_at: Date | null;
}
