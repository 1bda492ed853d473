import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString } from 'class-validator';
import { MaxChars } from '../../common/http/validators.js';
import { CursorQueryDto } from '../../database/pagination.js';

// A search box sent empty is no search, not a 422.
const blankIsNone = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.trim() || undefined : value,
  );

/** The customer list's filters besides per_page and cursor; each narrows the list. */
export class CustomerListQueryDto extends CursorQueryDto {
  @ApiPropertyOptional({
    maxLength: 320,
    example: 'ada@example.com',
    description: 'Exactly this email, in any case',
  })
  @IsOptional()
  @blankIsNone()
  @IsString({ message: 'The email field must be a string.' })
  @MaxChars(320, { message: 'The email field must not be greater than 320 characters.' })
  email?: string;

  @ApiPropertyOptional({
    maxLength: 255,
    example: 'ada',
    description: 'Search: customers whose email or name starts with q, in any case. Blank: no search',
  })
  @IsOptional()
  @blankIsNone()
  @IsString({ message: 'The q field must be a string.' })
  @MaxChars(255, { message: 'The q field must not be greater than 255 characters.' })
  q?: string;
}
