import { Column, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

export type PaymentOutcome = 'applied' | 'ignored' | 'duplicate' | 'stale';
export type TargetKind = 'project' | 'domain' | 'license';

/**
 * One event a connector accepted (docs/payments.md): stored in the transaction of its effects, once
 * per provider event id, so that a redelivery finds it and changes nothing. Answered through
 * toPaymentEventItem(), never as is.
 */
@Entity('payment_events')
@Unique('uq_payment_events_connector_event', ['connector_id', 'provider_event_id'])
export class PaymentEventEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  connector_id: number;

  @Index()
  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'varchar', length: 255 })
  provider_event_id: string;

  @Column({ type: 'varchar', length: 128 })
  type: string;

  @Column({ type: 'varchar', length: 16 })
  outcome: PaymentOutcome;

  @Column({ type: 'varchar', length: 16, nullable: true })
  target_kind: TargetKind | null;

  @Column({ type: 'integer', nullable: true })
  target_id: number | null;

  @Column({ type: 'varchar', length: 1000 })
  detail: string;

  /** The purchase (subscriptions row) the event recorded, or null. */
  @Column({ type: 'integer', nullable: true })
  subscription_id: number | null;

  @Column({ type: 'datetime' })
  received_at: Date;

  /** The body as received, personal data redacted (event-payload.ts); null on older rows. Read only by id. */
  @Column({ type: 'text', nullable: true, select: false })
  payload?: string | null;
}
