import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
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
}

/** A (registered domain, host) pair a license has been used from. */
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
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;
}
