import { Expose } from 'class-transformer';
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

export const INJECTABLE_TYPES = ['snippet', 'html', 'script', 'style', 'file'] as const;
export const INJECTABLE_MODES = ['inject', 'write', 'replace', 'append', 'prepend'] as const;

/** An injectable. `content` is the encrypted payload as stored; it is never decrypted here. */
@Entity('injectables')
@Unique('uq_injectables_project_slug', ['project_id', 'slug'])
export class InjectableEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id: number;

  @Index()
  @Column({ type: 'integer' })
  project_id: number;

  @Column({ type: 'varchar', length: 255 })
  slug: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  title: string | null;

  @Column({ type: 'varchar', length: 16 })
  type: string;

  @Column({ type: 'varchar', length: 16 })
  mode: string;

  @Column({ type: 'varchar', length: 1024, nullable: true })
  target_path: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  validate_endpoint: string | null;

  /** base64("LG1" ‖ salt ‖ iv ‖ tag ‖ ciphertext) (docs/decisions.md#injectables) */
  @Column({ type: 'text' })
  content: string;

  /** For type `file`: the original file name, encrypted the same way; null otherwise. */
  @Column({ type: 'text', nullable: true })
  file_path: string | null;

  @Column({ type: 'varchar', length: 64 })
  content_hash: string;

  @Column({ type: 'varchar', length: 128 })
  signature: string;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  @Column({ type: 'boolean', default: false })
  only_if_paid: boolean;

  @Column({ type: 'simple-json' })
  meta: Record<string, unknown>;

  @IsoTimestamp()
  @CreateDateColumn({ type: 'datetime' })
  created_at: Date;

  @IsoTimestamp()
  @UpdateDateColumn({ type: 'datetime' })
  updated_at: Date;

  /** The stream form of `content`: the same base64 string. */
  @Expose()
  get encrypted_content(): string {
    return this.content;
  }
}
