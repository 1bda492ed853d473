import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

/** Successful runtime checks of a license on one UTC day. */
@Entity('license_usage')
export class LicenseUsageEntity {
  @PrimaryColumn({ type: 'integer' })
  license_id: number;

  /** YYYY-MM-DD, UTC */
  @PrimaryColumn({ type: 'varchar', length: 10 })
  day: string;

  @Column({ type: 'integer' })
  count: number;

  /** Of `count`, the checks answered paid; null on days counted before paid answers were (unknown). */
  @Column({ type: 'integer', nullable: true })
  paid: number | null;
}

/**
 * A (registered domain, host) pair a license has been used from: what max_domains (the rows with host
 * '') and max_subdomains_per_domain (the others) count (docs/decisions.md#activations).
 */
@Entity('license_activations')
export class LicenseActivationEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  license_id: number;

  @Column({ type: 'varchar', length: 253 })
  domain: string;

  /** The exact host; '' when the call came from the registered domain itself. */
  @Column({ type: 'varchar', length: 253 })
  host: string;

  @IsoTimestamp()
  @Column({ type: 'datetime', default: () => 'CURRENT_TIMESTAMP' })
  first_seen_at: Date;

  /** Kept within a minute of the last call, written in batches (licenses/activations.ts). */
  @IsoTimestamp()
  @Column({ type: 'datetime', default: () => 'CURRENT_TIMESTAMP' })
  last_seen_at: Date;
}
