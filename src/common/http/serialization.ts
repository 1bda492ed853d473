import { Transform } from 'class-transformer';

/** ISO-8601 in UTC without fractional seconds: `2025-12-01T10:12:00Z` (docs/api.md#the-envelope-and-errors). */
export function toIsoTimestamp(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return null;
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Serialises a Date column as an ISO-8601 UTC timestamp. */
export const IsoTimestamp = () =>
  Transform(({ value }) => toIsoTimestamp(value as Date | null), { toPlainOnly: true });
