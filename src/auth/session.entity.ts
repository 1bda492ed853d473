import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** A signed-in browser (docs/security.md#sessions): found by the SHA-256 of its cookie's token. */
@Entity('sessions')
export class SessionEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  user_id: number;

  /** The account the session acts in: the user's first membership when it signed in. */
  @Column({ type: 'integer' })
  account_id: number;

  @Column({ type: 'varchar', length: 64, unique: true })
  token_hash: string;

  /** The idle expiry counts from here; written at most once a minute. */
  @Column({ type: 'datetime' })
  last_seen_at: Date;

  /** The absolute expiry, fixed at sign-in. */
  @Index()
  @Column({ type: 'datetime' })
  expires_at: Date;

  @Column({ type: 'varchar', length: 64, nullable: true })
  ip: string | null;

  @Column({ type: 'varchar', length: 512, nullable: true })
  user_agent: string | null;

  @Column({ type: 'datetime' })
  created_at: Date;
}
