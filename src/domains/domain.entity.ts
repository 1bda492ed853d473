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

/** A project domain. Responses carry exactly the fields docs/decisions.md#domains lists. */
@Entity('project_domains')
@Unique('uq_project_domains_project_domain', ['project_id', 'domain'])
export class DomainEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  project_id: number;

  @Index()
  @Column({ type: 'varchar', length: 253 })
  domain: string;

  @Column({ type: 'boolean', default: false })
  has_paid: boolean;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  /**
   * Set by a payment connector's unpaid event: has_paid stays true until then, and runtime answers carry
   * it; the grace scheduler then sets has_paid false (docs/payments.md). Null when no grace runs.
   */
  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  grace_until: Date | null;

  @Column({ type: 'boolean', default: false })
  is_primary: boolean;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}
