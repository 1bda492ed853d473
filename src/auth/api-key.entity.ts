import { Exclude } from 'class-transformer';
import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { IsoTimestamp } from '../common/http/serialization.js';

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Exclude()
  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  /** null = global key */
  @Column({ type: 'integer', nullable: true })
  project_id: number | null;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** First 8 characters of the key, shown so a person can tell keys apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** SHA-256 of the key; the plaintext is shown once and never stored. */
  @Exclude()
  @Column({ type: 'varchar', length: 64, unique: true, select: false })
  key_hash: string;

  /** The member who made the key through a session; null: made by the account's holder or the CLI. */
  @Exclude()
  @Column({ type: 'integer', nullable: true })
  created_by_user_id: number | null;

  /** A read-only key reads everything its scope allows and may write nothing. */
  @Column({ type: 'boolean', default: false })
  read_only: boolean;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  expires_at: Date | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  revoked_at: Date | null;

  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  last_used_at: Date | null;

  /** When the key was rolled: it works until its expires_at (the grace), its replacement from then on. */
  @IsoTimestamp()
  @Column({ type: 'datetime', nullable: true })
  rolled_at: Date | null;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;

  /** The plaintext key: set only on the answer that creates it, never stored. */
  key?: string;
}
