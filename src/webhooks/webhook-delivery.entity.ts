import { Exclude, Transform } from 'class-transformer';
import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

export type DeliveryStatus = 'pending' | 'delivering' | 'succeeded' | 'failed';

/** One event for one project's webhook_url: the outbox row and its delivery state. */
@Entity('webhook_deliveries')
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  project_id: number;

  /** Also the `webhook-id` header: the same on every retry, so receivers can deduplicate. */
  @Column({ type: 'varchar', length: 64 })
  event_id: string;

  @Column({ type: 'varchar', length: 64 })
  type: string;

  /** The exact JSON body sent. */
  @Transform(({ value }) => JSON.parse(value as string) as unknown, { toPlainOnly: true })
  @Column({ type: 'text' })
  payload: string;

  @Column({ type: 'varchar', length: 16 })
  status: DeliveryStatus;

  @Column({ type: 'integer' })
  attempts: number;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  next_attempt_at: Date | null;

  /** The retry schedule counts from here ("after the first try", docs/decisions.md#webhooks). */
  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  first_attempt_at: Date | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  last_attempt_at: Date | null;

  @Column({ type: 'integer', nullable: true })
  last_status_code: number | null;

  @Column({ type: 'varchar', length: 1000, nullable: true })
  last_error: string | null;

  /**
   * The receiver's host and port when the event was recorded. Only the dispatcher's per-host cap
   * reads it; the delivery itself goes to the project's webhook_url of the moment.
   */
  @Exclude()
  @Column({ type: 'varchar', length: 255, default: '' })
  target_host: string;

  @Exclude()
  @Column({ type: 'varchar', length: 64, nullable: true })
  claimed_by: string | null;

  @Exclude()
  @Column({ type: 'datetime', nullable: true })
  claimed_until: Date | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;

  /** The delivery log, filled by the list endpoint. */
  attempt_log?: WebhookAttemptEntity[];
}

/** Every attempt, kept: status, response code, duration and the next attempt it scheduled. */
@Entity('webhook_attempts')
export class WebhookAttemptEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Exclude()
  @Column({ type: 'integer' })
  delivery_id: number;

  @Column({ type: 'integer' })
  attempt: number;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'integer', nullable: true })
  response_code: number | null;

  @Column({ type: 'integer' })
  duration_ms: number;

  @Column({ type: 'varchar', length: 1000, nullable: true })
  error: string | null;

  /** succeeded | retrying | failed | interrupted (its dispatcher stopped mid-send) */
  @Column({ type: 'varchar', length: 16 })
  outcome: string;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  next_attempt_at: Date | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;
}
