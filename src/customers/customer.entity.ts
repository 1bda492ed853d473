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

/**
 * A buyer of a project's product (docs/payments.md#customers): made by the vendor or found or created
 * by a payment connector. `email` is stored lower-case and is not unique (two buyers may type one
 * address); the provider's own customer ids are in customer_external_ids.
 */
@Entity('customers')
@Index('ix_customers_project_email', ['project_id', 'email'])
export class CustomerEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  name: string | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}

/** A provider's id for a customer (`cus_…`, `ctm_…`): one customer per (project, provider, id). */
@Entity('customer_external_ids')
@Unique('uq_customer_external_ids', ['project_id', 'provider', 'external_id'])
export class CustomerExternalIdEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  customer_id: number;

  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'varchar', length: 16 })
  provider: string;

  @Column({ type: 'varchar', length: 255 })
  external_id: string;
}
