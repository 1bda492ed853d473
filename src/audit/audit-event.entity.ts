import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** `{field: [before, after]}` of the fields a write changed (secrets "[redacted]", never payloads). */
export type Changes = Record<string, [unknown, unknown]>;

/** One management write (docs/decisions.md#audit-log). Answered through toAuditItem(), never as is. */
@Entity('audit_events')
export class AuditEventEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  /** The account whose log this row is in. */
  @Column({ type: 'integer' })
  owner_id: number;

  @Column({ type: 'integer', nullable: true })
  project_id: number | null;

  @Column({ type: 'varchar', length: 64 })
  action: string;

  @Column({ type: 'varchar', length: 32 })
  resource_type: string;

  @Column({ type: 'integer', nullable: true })
  resource_id: number | null;

  @Column({ type: 'varchar', length: 16 })
  actor_type: 'api_key' | 'cli' | 'license' | 'payment' | 'user' | 'portal';

  @Column({ type: 'integer', nullable: true })
  actor_api_key_id: number | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  actor_api_key_prefix: string | null;

  @Column({ type: 'integer', nullable: true })
  actor_user_id: number | null;

  /** A `payment` actor's provider and connector (docs/payments.md). */
  @Column({ type: 'varchar', length: 16, nullable: true })
  actor_provider: string | null;

  @Column({ type: 'integer', nullable: true })
  actor_connector_id: number | null;

  /** A `portal` actor's customer (docs/portal.md). */
  @Column({ type: 'integer', nullable: true })
  actor_customer_id: number | null;

  @Column({ type: 'simple-json' })
  changes: Changes;

  @Column({ type: 'varchar', length: 128, nullable: true })
  request_id: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  ip: string | null;

  @Column({ type: 'varchar', length: 512, nullable: true })
  user_agent: string | null;

  @Column({ type: 'datetime' })
  created_at: Date;
}
