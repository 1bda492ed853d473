import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryGeneratedColumn,
  Unique,
  UpdateDateColumn,
} from 'typeorm';
import { Exclude } from 'class-transformer';
import { IsoTimestamp } from '../common/http/serialization.js';
import type { TargetKind } from './payment-event.entity.js';

export type SubscriptionKind = 'subscription' | 'order';
export type SubscriptionStatus =
  'active' | 'trialing' | 'past_due' | 'paused' | 'canceled' | 'expired' | 'refunded' | 'disputed' | 'paid';

/**
 * What a provider sold, one row per purchase (docs/payments.md#subscriptions), identified by
 * (connector, kind, reference): providers reuse one number for an order and a subscription.
 * `last_event_at` is the provider's own time of the last event of this reference: an older event
 * changes nothing (`stale`).
 */
@Entity('subscriptions')
@Unique('uq_subscriptions_reference', ['connector_id', 'kind', 'reference'])
@Index('idx_subscriptions_project_status', ['project_id', 'status'])
export class SubscriptionEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'integer' })
  connector_id: number;

  @Column({ type: 'varchar', length: 16 })
  provider: string;

  @Column({ type: 'varchar', length: 16 })
  kind: SubscriptionKind;

  @Column({ type: 'varchar', length: 255 })
  reference: string;

  @Column({ type: 'varchar', length: 16 })
  status: SubscriptionStatus;

  @Column({ type: 'boolean', default: false })
  cancel_at_period_end: boolean;

  @Index()
  @Column({ type: 'integer', nullable: true })
  customer_id: number | null;

  @Index()
  @Column({ type: 'integer', nullable: true })
  license_id: number | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  license_deleted_at: Date | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  target_kind: TargetKind | null;

  @Column({ type: 'integer', nullable: true })
  target_id: number | null;

  @Column({ type: 'simple-json', nullable: true })
  product_ids: string[] | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  current_period_end: Date | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  last_event_at: Date | null;

  /** The provider ended it (or it is a refunded order): later paid events are stale but for a revival. */
  @Exclude()
  @Column({ type: 'boolean', default: false })
  ended: boolean;

  @Column({ type: 'varchar', length: 128, nullable: true })
  last_event_type: string | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}

/**
 * A payment id kept from a reference's events (Stripe payment intent, charge and invoice ids; Paddle
 * transaction ids; Lemon Squeezy and Polar order ids): how a refund or dispute finds its purchase.
 */
@Entity('subscription_payments')
@Unique('uq_subscription_payments', ['connector_id', 'payment_id'])
export class SubscriptionPaymentEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  subscription_id: number;

  @Column({ type: 'integer' })
  connector_id: number;

  @Column({ type: 'varchar', length: 255 })
  payment_id: string;
}
