import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { instanceToPlain } from 'class-transformer';
import { EntityManager, QueryDeepPartialEntity, Repository } from 'typeorm';
import type { FieldErrors } from '../common/http/envelope.js';
import { notFound, SLUG_TAKEN, ValidationFailed } from '../common/http/errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import type { MaybePromise } from '../common/maybe-promise.js';
import { GenerationCache } from '../common/cache/generation-cache.js';
import { ProjectGenerations } from '../common/cache/generations.js';
import { AppConfig } from '../config/app-config.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { openPrivateKey, signEd25519 } from '../common/crypto/signing.js';
import { CreateInjectableDto, UpdateInjectableDto } from './dto/injectable.dto.js';
import { InjectableEntity } from './injectable.entity.js';
import { contentHash, encryptPayload, payloadSize, signedMessage } from '../common/crypto/payload.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { lockedRow } from '../database/unit-of-work.js';
import { REDACTED } from '../audit/audit-log.service.js';

/**
 * Event data: the injectable as the API serialises it (timestamps in whole seconds), without its
 * (encrypted) payload, which can be megabytes.
 */
function eventData(i: InjectableEntity) {
  const { content: _content, encrypted_content: _stream, file_path: _file, ...rest } = instanceToPlain(i);
  return rest;
}

export interface UploadedPayload {
  buffer: Buffer;
  originalname: string;
}

const PAYLOAD_CACHE_BYTES = 32 * 1024 * 1024;
const payloadBytes = <T>(items: T[], content: (item: T) => string | null) =>
  items.reduce((sum, item) => sum + (content(item)?.length ?? 0) + 200, 200);

/** An item of the management list: the injectable without its payload, and the payload's size. */
export type InjectableListItem = Omit<
  InjectableEntity,
  'content' | 'encrypted_content' | 'created_at' | 'updated_at'
> & {
  created_at: string;
  updated_at: string;
  content_size: number;
};

/** The stream's item keys (docs/decisions.md#injectables). */
export interface StreamItem {
  slug: string;
  type: string;
  mode: string;
  encrypted_content: string;
  file_path: string | null;
  target_path: string | null;
  signature: string;
  meta: Record<string, unknown>;
}

export interface StreamPage {
  injectables: StreamItem[];
  next_cursor: string | null;
  has_more: boolean;
}

/** The item keys of `include=injectables` (docs/decisions.md#injectables). */
export interface PaidItem {
  id: number;
  slug: string;
  title: string | null;
  type: string;
  mode: string;
  target_path: string | null;
  content: string;
  file_path: string | null;
  is_active: boolean;
  only_if_paid: boolean;
  meta: Record<string, unknown>;
}

/** The update rules on type, content, file and secret (docs/decisions.md#injectables), for an update of `current`. */
function updateErrors(
  current: InjectableEntity,
  dto: UpdateInjectableDto,
  file?: UploadedPayload,
): FieldErrors {
  const type = dto.type ?? current.type;
  const newPayload = file !== undefined || dto.content !== undefined;
  const errors: FieldErrors = {};
  // Optional, but never null: these columns always hold a value (and content null has nothing to encrypt).
  for (const field of ['slug', 'type', 'mode', 'content'] as const)
    if (dto[field] === null) errors[field] = [`The ${field} field cannot be null.`];
  if (type === 'file') {
    if (dto.content !== undefined && dto.content !== null)
      errors.content = ['The content field cannot be used with type file: upload a file instead.'];
    else if (current.type !== 'file' && !file)
      errors.file = ['The file field is required when switching to type file.'];
  } else {
    if (file) errors.file = ['A file can only be uploaded when the type is file.'];
    else if (current.type === 'file' && dto.content === undefined)
      errors.content = ['The content field is required when switching away from type file.'];
    else if (dto.content === '') errors.content = ['The content field must not be empty.'];
  }
  if (newPayload && !dto.secret)
    errors.secret = ['The secret field is required when updating the content or uploading a file.'];
  if (dto.secret && !newPayload)
    errors.secret = ['The secret field is only accepted together with new content or a file.'];
  return errors;
}

@Injectable()
export class InjectablesService {
  // The runtime's payload reads, cached under their project's generation (common/cache/generations.ts)
  // and bounded by the bytes of payload they hold: payloads may be megabytes each.
  private readonly paidCache: GenerationCache<number, PaidItem[]>;
  private readonly pageCache: GenerationCache<string, StreamPage>;

  constructor(
    @InjectRepository(InjectableEntity) private readonly injectables: Repository<InjectableEntity>,
    private readonly cursors: Cursors,
    generations: ProjectGenerations,
    private readonly config: AppConfig,
    private readonly projectChanges: ProjectChanges,
  ) {
    this.paidCache = new GenerationCache(generations, {
      maxSize: PAYLOAD_CACHE_BYTES,
      sizeOf: (items) => payloadBytes(items, (i) => i.content),
    });
    this.pageCache = new GenerationCache(generations, {
      maxSize: PAYLOAD_CACHE_BYTES,
      sizeOf: (page) => payloadBytes(page.injectables, (i) => i.encrypted_content),
    });
  }

  /**
   * List items carry no payload (a page of them could be hundreds of megabytes, twice over): every
   * field but `content` and `encrypted_content`, plus the payload's size. The payload is not even
   * read; its size comes from the database.
   */
  list(project: ProjectEntity, query: CursorQueryDto): Promise<CursorPage<InjectableListItem>> {
    const columns = this.injectables.metadata.columns
      .filter((c) => c.propertyName !== 'content')
      .map((c) => `i.${c.propertyName}`);
    const qb = this.injectables
      .createQueryBuilder('i')
      .select(columns)
      .addSelect('LENGTH(i.content)', 'content_length')
      .addSelect('SUBSTR(i.content, -2)', 'content_tail')
      .where('i.project_id = :project', { project: project.id });
    return this.cursors.page(qb, `injectables:${project.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
      map: (row, raw) => {
        const { content: _content, encrypted_content: _encrypted, ...fields } = instanceToPlain(row);
        return {
          ...fields,
          content_size: payloadSize(Number(raw.content_length), String(raw.content_tail)),
        } as InjectableListItem;
      },
    });
  }

  async get(project: ProjectEntity, id: number): Promise<InjectableEntity> {
    const injectable = await this.injectables.findOneBy({ id, project_id: project.id });
    if (!injectable) throw notFound('Injectable');
    return injectable;
  }

  async create(
    project: ProjectEntity,
    dto: CreateInjectableDto,
    file?: UploadedPayload,
  ): Promise<InjectableEntity> {
    const type = dto.type ?? (file ? 'file' : 'snippet');
    const errors: FieldErrors = {};
    if (!dto.secret) errors.secret = ['The secret field is required.'];
    if (type === 'file') {
      if (!file) errors.file = ['The file field is required when the type is file.'];
      if (dto.content !== undefined)
        errors.content = ['The content field cannot be used with type file: upload a file instead.'];
    } else {
      if (file) errors.file = ['A file can only be uploaded when the type is file.'];
      if (!dto.content) errors.content = ['The content field is required.'];
    }
    if (await this.injectables.existsBy({ project_id: project.id, slug: dto.slug }))
      errors.slug = [SLUG_TAKEN];
    if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);

    const fields = {
      project_id: project.id,
      slug: dto.slug,
      title: dto.title ?? null,
      type,
      mode: dto.mode ?? 'inject',
      target_path: dto.target_path ?? null,
      validate_endpoint: dto.validate_endpoint ?? null,
      is_active: dto.is_active ?? true,
      only_if_paid: dto.only_if_paid ?? false,
      meta: dto.meta ?? {},
      ...(await this.seal(
        dto.secret as string,
        type === 'file' ? (file as UploadedPayload) : Buffer.from(dto.content as string, 'utf8'),
      )),
    };
    return await this.projectChanges.run(project, async (manager) => {
      const row = { ...fields, signature: await this.sign(manager, project.id, fields) };
      const result = await manager.insert(InjectableEntity, row as QueryDeepPartialEntity<InjectableEntity>);
      const injectable = await manager.findOneByOrFail(InjectableEntity, {
        id: result.identifiers[0].id as number,
      });
      return {
        result: injectable,
        events: [['injectable.created', eventData(injectable)]],
        audit: {
          action: 'injectable.created',
          before: null,
          after: injectable,
          also: { secret: [null, REDACTED] },
        },
      };
    });
  }

  /**
   * The update rules (docs/decisions.md#injectables). The payload is sealed before the unit (scrypt is slow on purpose); the
   * rules are checked again, and the fields merged and signed, against the row as it stands locked
   * inside the unit, so racing edits each sign what they leave stored, never a mix of both.
   */
  async update(
    project: ProjectEntity,
    current: InjectableEntity,
    dto: UpdateInjectableDto,
    file?: UploadedPayload,
  ): Promise<InjectableEntity> {
    const errors = updateErrors(current, dto, file);
    if (
      dto.slug &&
      dto.slug !== current.slug &&
      (await this.injectables.existsBy({ project_id: project.id, slug: dto.slug }))
    ) {
      errors.slug = [SLUG_TAKEN];
    }
    if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);

    const next: Partial<InjectableEntity> = {};
    for (const field of [
      'slug',
      'title',
      'type',
      'mode',
      'target_path',
      'validate_endpoint',
      'is_active',
      'only_if_paid',
    ] as const) {
      if (dto[field] !== undefined) (next as Record<string, unknown>)[field] = dto[field];
    }
    if (dto.meta !== undefined) next.meta = dto.meta ?? {};
    if (file !== undefined || dto.content !== undefined) {
      const type = dto.type ?? current.type;
      Object.assign(
        next,
        await this.seal(
          dto.secret as string,
          type === 'file' ? (file as UploadedPayload) : Buffer.from(dto.content as string, 'utf8'),
        ),
      );
    }
    return await this.projectChanges.run(project, async (manager) => {
      const before = await lockedRow(manager, InjectableEntity, current.id);
      const raced = updateErrors(before, dto, file);
      if (Object.keys(raced).length > 0) throw new ValidationFailed(raced);
      next.signature = await this.sign(manager, project.id, { ...before, ...next });
      await manager.update(
        InjectableEntity,
        { id: current.id },
        next as QueryDeepPartialEntity<InjectableEntity>,
      );
      const after = await manager.findOneByOrFail(InjectableEntity, { id: current.id });
      // A new secret comes only with a new payload; the audit row says one was given, never which.
      const also = dto.secret ? { secret: [REDACTED, REDACTED] as [string, string] } : undefined;
      return {
        result: after,
        events: [['injectable.updated', eventData(after)]],
        audit: { action: 'injectable.updated', before, after, also },
      };
    });
  }

  async remove(project: ProjectEntity, injectable: InjectableEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      // Of racing deletes one goes on and the others find the row gone (404): one event.
      const before = await lockedRow(manager, InjectableEntity, injectable.id);
      await manager.delete(InjectableEntity, { id: injectable.id });
      return {
        result: undefined,
        events: [['injectable.deleted', eventData(before)]],
        audit: { action: 'injectable.deleted', before, after: null },
      };
    });
  }

  /** The stream: active injectables in id order; paid-only ones only while the answer is `paid`. */
  stream(project: ProjectEntity, paid: boolean, query: CursorQueryDto): MaybePromise<StreamPage> {
    // (The cursor is at most 512 characters: the key is bounded.)
    const key = `${project.id}:${paid ? 'paid' : 'unpaid'}:${query.per_page ?? ''}:${query.cursor ?? ''}`;
    return this.pageCache.get(key, project.id, () => this.readStreamPage(project, paid, query));
  }

  private async readStreamPage(
    project: ProjectEntity,
    paid: boolean,
    query: CursorQueryDto,
  ): Promise<StreamPage> {
    const qb = this.injectables
      .createQueryBuilder('i')
      .where('i.project_id = :project', { project: project.id })
      .andWhere('i.is_active = :active', { active: true });
    if (!paid) qb.andWhere('i.only_if_paid = :paid', { paid: false });
    const page = await this.cursors.page(qb, `stream:${project.id}`, query, {
      defaultPerPage: 50,
      order: 'ASC',
    });
    return {
      injectables: page.data.map((i): StreamItem => ({
        slug: i.slug,
        type: i.type,
        mode: i.mode,
        encrypted_content: i.content,
        file_path: i.file_path,
        target_path: i.target_path,
        signature: i.signature,
        meta: i.meta,
      })),
      next_cursor: page.next_cursor,
      has_more: page.next_cursor !== null,
    };
  }

  /** `include=injectables` of the runtime check: the project's active paid-only injectables, cached per generation. */
  paidOnly(projectId: number): MaybePromise<PaidItem[]> {
    return this.paidCache.get(projectId, projectId, () => this.readPaidOnly(projectId));
  }

  private async readPaidOnly(projectId: number): Promise<PaidItem[]> {
    const rows = await this.injectables.find({
      where: { project_id: projectId, is_active: true, only_if_paid: true },
      order: { id: 'ASC' },
    });
    return rows.map((i): PaidItem => ({
      id: i.id,
      slug: i.slug,
      title: i.title,
      type: i.type,
      mode: i.mode,
      target_path: i.target_path,
      content: i.content,
      file_path: i.file_path,
      is_active: i.is_active,
      only_if_paid: i.only_if_paid,
      meta: i.meta,
    }));
  }

  /** Encrypts the payload (and, for files, the original name) and hashes the blob (docs/decisions.md#injectables). */
  private async seal(secret: string, payload: Buffer | UploadedPayload) {
    const isFile = !Buffer.isBuffer(payload);
    const blob = await encryptPayload(secret, isFile ? payload.buffer : payload);
    return {
      content: blob.toString('base64'),
      content_hash: contentHash(blob),
      file_path: isFile
        ? (await encryptPayload(secret, Buffer.from(payload.originalname, 'utf8'))).toString('base64')
        : null,
    };
  }

  private async sign(
    manager: EntityManager,
    projectId: number,
    fields: { slug: string; type: string; mode: string; target_path: string | null; content_hash: string },
  ): Promise<string> {
    const row = await manager
      .createQueryBuilder(ProjectEntity, 'p')
      .withDeleted()
      .addSelect('p.signing_private_key')
      .where('p.id = :id', { id: projectId })
      .getOneOrFail();
    return signEd25519(
      openPrivateKey(this.config.appKey, row.signing_private_key),
      signedMessage({ project_id: projectId, ...fields }),
    );
  }
}
