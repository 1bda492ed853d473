import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, Unique, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';
import type { Entitlements } from './entitlements.js';

/**
 * A plan of a project (docs/plans.md): entitlements and the limits a license on it takes where it
 * leaves its own null.
 */
@Entity('plans')
@Unique('uq_plans_project_code', ['project_id', 'code'])
export class PlanEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'varchar', length: 64 })
  code: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'simple-json' })
  entitlements: Entitlements;

  @Column({ type: 'integer', nullable: true })
  max_domains: number | null;

  @Column({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @Column({ type: 'integer', nullable: true })
  max_usage_per_day: number | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;
}
