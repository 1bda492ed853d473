import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * What a portal link and a portal session both hold: the SHA-256 of a bearer token and what it
 * opens, a customer (all their licenses of the project) or one license, until `expires_at`.
 */
abstract class PortalTokenColumns {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'varchar', length: 64, unique: true })
  token_hash: string;

  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'integer', nullable: true })
  customer_id: number | null;

  @Column({ type: 'integer', nullable: true })
  license_id: number | null;

  @Column({ type: 'text', nullable: true })
  return_url: string | null;

  @Column({ type: 'datetime' })
  expires_at: Date;

  @Column({ type: 'datetime' })
  created_at: Date;
}

/**
 * A one-use link into the customer portal (docs/portal.md). Found by the SHA-256 of its token; opened
 * once, by a conditional update of `used_at`.
 */
@Entity('portal_links')
export class PortalLinkEntity extends PortalTokenColumns {
  @Column({ type: 'datetime', nullable: true })
  used_at: Date | null;
}

/** A buyer's browser in the portal: what an opened link was bound to, for an hour. */
@Entity('portal_sessions')
export class PortalSessionEntity extends PortalTokenColumns {}
