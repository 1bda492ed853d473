import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { MaxChars } from './validators.js';
import { Brackets, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { deriveKey, hmac, safeEqual } from './crypto.js';
import { fieldError } from './errors.js';

/** `per_page` and `cursor` of every cursor list (seed 4.6, 4.9, 4.10). */
export class CursorQueryDto {
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value))
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
      const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { s?: unknown; id?: unknown };
      if (parsed.s !== scope || typeof parsed.id !== 'number' || !Number.isInteger(parsed.id)) throw invalid;
      return parsed.id;
    } catch {
      throw invalid;
    }
  }

  /**
   * Runs one page of `qb` keyed on `alias.id`. Fetches one row more than asked to learn whether a
   * next page exists without a count.
   */
  async page<T extends ObjectLiteral & { id: number }>(
    qb: SelectQueryBuilder<T>,
    scope: string,
    query: CursorQueryDto,
    options: { defaultPerPage: number; order: Order },
  ): Promise<CursorPage<T>> {
    const perPage = query.per_page ?? options.defaultPerPage;
    const alias = qb.alias;
    if (query.cursor) {
      const after = this.decode(scope, query.cursor);
      const op = options.order === 'DESC' ? '<' : '>';
      qb.andWhere(new Brackets((w) => w.where(`${alias}.id ${op} :__cursor`, { __cursor: after })));
    }
    const rows = await qb.orderBy(`${alias}.id`, options.order).limit(perPage + 1).getMany();
    const more = rows.length > perPage;
    const data = more ? rows.slice(0, perPage) : rows;
    return { data, next_cursor: more ? this.encode(scope, data[data.length - 1].id) : null };
  }

  private sign(payload: string): string {
    return hmac(this.key, payload).subarray(0, 16).toString('base64url');
  }
}
