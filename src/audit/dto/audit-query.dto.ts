import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { CursorQueryDto } from '../../database/pagination.js';
import { AUDIT_ACTIONS, RESOURCE_TYPES } from '../audit-log.service.js';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Whether the calendar has this day (JavaScript reads 2026-02-30 as March 2) and the hour is one of the day's. */
function realDay(year: number, month: number, day: number, hour: number): boolean {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // (Date.UTC would read the years 0 to 99 as 1900 to 1999)
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    hour < 24
  );
}

/** An ISO-8601 date or date-time (UTC unless it names an offset); anything else stays as sent, for IsDate to refuse. */
export const isoDate = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const match = ISO_8601.exec(value);
  if (!match || !realDay(Number(match[1]), Number(match[2]), Number(match[3]), Number(match[4] ?? 0)))
    return value;
  const date = new Date(value.includes('T') && !match[5] ? `${value}Z` : value);
  return Number.isNaN(date.getTime()) ? value : date;
};

/** The audit log's filters, besides per_page and cursor; every one narrows the list. */
export class AuditQueryDto extends CursorQueryDto {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only this action' })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS, {
    message:
      'The selected action is invalid: use a webhook event name, api_key.created, api_key.revoked, api_key.rolled or webhook_delivery.retried.',
  })
  action?: string;

  @ApiPropertyOptional({ enum: RESOURCE_TYPES, description: 'Only this kind of resource' })
  @IsOptional()
  @IsIn(RESOURCE_TYPES, {
    message: `The selected resource type is invalid: use one of ${RESOURCE_TYPES.join(', ')}.`,
  })
  resource_type?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'Only this resource (with resource_type, one resource)',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: 'The resource id field must be an integer.' })
  @Min(1, { message: 'The resource id field must be at least 1.' })
  @Max(2_147_483_647, { message: 'The resource id field must not be greater than 2147483647.' })
  resource_id?: number;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    example: '2026-11-01T00:00:00Z',
    description: 'Only rows created at or after this ISO-8601 time (UTC unless it names an offset)',
  })
  @IsOptional()
  @Transform(isoDate)
  @IsDate({ message: 'The since field must be an ISO-8601 date or date-time.' })
  since?: Date;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    example: '2026-11-30T23:59:59Z',
    description: 'Only rows created at or before this ISO-8601 time',
  })
  @IsOptional()
  @Transform(isoDate)
  @IsDate({ message: 'The until field must be an ISO-8601 date or date-time.' })
  until?: Date;
}
