import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Min } from 'class-validator';
import { MaxChars } from '../../common/http/validators.js';
import { CursorQueryDto } from '../../database/pagination.js';

export const LICENSE_STATUSES = ['active', 'revoked', 'expired'] as const;
export type LicenseStatus = (typeof LICENSE_STATUSES)[number];

/**
 * The license list's filters, besides per_page and cursor; every one narrows the list
 * (docs/api.md#searching-licenses). A filter that a later field brings (billing, plan, customer) is
 * one more property here and one more `andWhere` in LicensesService.list().
 */
export class LicenseListQueryDto extends CursorQueryDto {
  @ApiPropertyOptional({
    maxLength: 255,
    example: '3f2a',
    description:
      'Search: licenses whose key (uuid) starts with q, or whose title contains q; letters in any case. Blank: no search',
  })
  @IsOptional()
  // A search box sent empty is no search, not a 422.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim() || undefined : value,
  )
  @IsString({ message: 'The q field must be a string.' })
  @MaxChars(255, { message: 'The q field must not be greater than 255 characters.' })
  q?: string;

  @ApiPropertyOptional({
    enum: LICENSE_STATUSES,
    description:
      'active: not revoked and not past expires_at; revoked: revoked (whatever expires_at says); expired: not revoked, expires_at passed',
  })
  @IsOptional()
  @IsIn(LICENSE_STATUSES, { message: 'The selected status is invalid: use active, revoked or expired.' })
  status?: LicenseStatus;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'Only the licenses of this customer (customer_id)',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: 'The customer id field must be an integer.' })
  @Min(1, { message: 'The customer id field must be at least 1.' })
  customer_id?: number;
}
