import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { MaxChars } from '../common/http/validators.js';
import { Brackets, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { deriveKey, hmac, safeEqual } from '../common/crypto/crypto.js';
import { fieldError } from '../common/http/errors.js';

/** `per_page` and `cursor` of every cursor list (licenses, domains, injectables, the stream, …). */
export class CursorQueryDto {
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: 'The per page field must be an integer.' })
  @Min(1, { message: 'The per page field must be between 1 and 50.' })
  @Max(50, { message: 'The per page field must be between 1 and 50.' })
  per_page?: number;

  @IsOptional()
  @IsString({ message: 'The cursor is invalid.' })
  @MaxChars(512, { message: 'The cursor is invalid.' })
  cursor?: string;
}

export interface CursorPage<T> {
  data: T[];
  next_cursor: string | null;
}

export type Order = 'ASC' | 'DESC';

export interface PageOptions {
  defaultPerPage: number;
  order: Order;
}

/**
 * Opaque, tamper-evident keyset cursors. A cursor names the list it belongs to (`scope`) and the id
 * of the last row served; the next page continues strictly after that id, so rows inserted while a
 * client walks never cause a duplicate or a gap among the rows that were there.
 */
export class Cursors {
  private readonly key: Buffer;

  constructor(appKey: Buffer) {
    this.key = deriveKey(appKey, 'cursor');
  }

  encode(scope: string, lastId: number): string {
    const payload = Buffer.from(JSON.stringify({ s: scope, id: lastId })).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** The last id, or a 422 naming `cursor` when it was not made by us for this list. */
  decode(scope: string, cursor: string): number {
    const invalid = fieldError('cursor', 'The cursor is invalid.');
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined) throw invalid;
    if (!safeEqual(Buffer.from(signature), Buffer.from(this.sign(payload)))) throw invalid;
    try {
      const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
        s?: unknown;
        id?: unknown;
      };
      if (parsed.s !== scope || typeof parsed.id !== 'number' || !Number.isInteger(parsed.id)) throw invalid;
      return parsed.id;
    } catch {
      throw invalid;
    }
  }

  /**
   * Runs one page of `qb` keyed on `alias.id`. Fetches one row more than asked to learn whether a
   * next page exists without a count. With `map`, each item is made from the entity and its raw row
   * (for values computed in SQL with `addSelect(expression, alias)`; the query must have no joins,
   * so that rows and entities pair up).
   */
  page<T extends ObjectLiteral & { id: number }, U>(
    qb: SelectQueryBuilder<T>,
    scope: string,
    query: CursorQueryDto,
    options: PageOptions & { map: (row: T, raw: Record<string, unknown>) => U },
  ): Promise<CursorPage<U>>;
  page<T extends ObjectLiteral & { id: number }>(
    qb: SelectQueryBuilder<T>,
    scope: string,
    query: CursorQueryDto,
    options: PageOptions,
  ): Promise<CursorPage<T>>;
  async page<T extends ObjectLiteral & { id: number }, U>(
    qb: SelectQueryBuilder<T>,
    scope: string,
    query: CursorQueryDto,
    options: PageOptions & { map?: (row: T, raw: Record<string, unknown>) => U },
  ): Promise<CursorPage<T | U>> {
    const perPage = query.per_page ?? options.defaultPerPage;
    const alias = qb.alias;
    if (query.cursor) {
      const after = this.decode(scope, query.cursor);
      const op = options.order === 'DESC' ? '<' : '>';
      qb.andWhere(new Brackets((w) => w.where(`${alias}.id ${op} :__cursor`, { __cursor: after })));
    }
    qb.orderBy(`${alias}.id`, options.order).limit(perPage + 1);
    const { entities, raw } = options.map
      ? await qb.getRawAndEntities()
      : { entities: await qb.getMany(), raw: [] };
    const more = entities.length > perPage;
    const rows = more ? entities.slice(0, perPage) : entities;
    const next_cursor = more ? this.encode(scope, rows[rows.length - 1].id) : null;
    const map = options.map;
    return {
      data: map ? rows.map((row, i) => map(row, raw[i] as Record<string, unknown>)) : rows,
      next_cursor,
    };
  }

  private sign(payload: string): string {
    return hmac(this.key, payload).subarray(0, 16).toString('base64url');
  }
}
