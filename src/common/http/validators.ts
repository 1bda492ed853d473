import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsDate,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidationOptions,
} from 'class-validator';

/** Laravel-style messages: "The default redirect url field …". */
export const label = (field: string) => field.replace(/_/g, ' ');

/**
 * At most `max` characters, counted as JavaScript counts them (UTF-16 units). class-validator's
 * MaxLength leaves emoji variation selectors out of its count, so a string it passes can be twice
 * as long as a VARCHAR(max) column takes on MySQL. A value that is not a string is the type check's
 * to refuse, with its own message.
 */
export const MaxChars = (max: number, options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'maxChars',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || value.length <= max,
        defaultMessage: (args) => `${args?.property} must be shorter than or equal to ${max} characters`,
      },
    },
    options,
  );

/** At least `min` characters, counted as people count them (code points); a non-string is the type check's. */
export const MinChars = (min: number, options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'minChars',
      constraints: [min],
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || [...value].length >= min,
        defaultMessage: (args) => `${args?.property} must be at least ${min} characters`,
      },
    },
    options,
  );

// The last second both databases store: DATETIME(0) on MySQL rounds 23:59:59.6 up into the year 10000.
const LAST_STORABLE = Date.UTC(9999, 11, 31, 23, 59, 59);

/** A date after now and before the year 10000 (both databases store four-digit years); not a date is IsDate's. */
const FutureDate = (field: string) =>
  ValidateBy({
    name: 'isFutureDate',
    validator: {
      validate: (value: unknown) =>
        !(value instanceof Date) ||
        Number.isNaN(value.getTime()) ||
        (value.getTime() > Date.now() && value.getTime() <= LAST_STORABLE),
      defaultMessage: (args) =>
        args?.value instanceof Date && args.value.getTime() > LAST_STORABLE
          ? `The ${label(field)} field must be a date before the year 10000.`
          : `The ${label(field)} field must be a date after now.`,
    },
  });

// An ISO-8601 date, optionally with a time and an offset (2099-12-31, 2099-12-31T23:59:59.5+01:00), or a year or month (2099, 2099-06).
const ISO_DATE =
  /^([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?$/i;

/**
 * The string as a date, or an invalid Date. Only ISO-8601 is read: JavaScript's Date also reads
 * "12/01/2099" and "Feb 30 2099" (in the server's time zone), and moves 2099-02-30 to 2099-03-02,
 * so the calendar day is checked here too.
 */
export function parseIsoDate(value: string): Date {
  const match = ISO_DATE.exec(value.trim());
  if (!match) return new Date(NaN);
  const [year, month, day] = [Number(match[1]), Number(match[2] ?? 1), Number(match[3] ?? 1)];
  const first = new Date(0);
  first.setUTCFullYear(year, month - 1, day);
  if (month < 1 || month > 12 || day < 1 || first.getUTCMonth() !== month - 1 || first.getUTCDate() !== day)
    return new Date(NaN);
  return new Date(value.trim());
}

/** An optional, nullable ISO-8601 date in the future. Only strings are read as dates: 0 or true are not dates. */
export const OptionalFutureDate = (field: string) =>
  applyDecorators(
    IsOptional(),
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? parseIsoDate(value) : value)),
    IsDate({ message: `The ${label(field)} field must be a valid date.` }),
    FutureDate(field),
  );

/**
 * `meta` as JSON stays within this many bytes of UTF-8. It is stored in a TEXT column and in the
 * events and audit rows of its project or injectable, TEXT columns too (65535 bytes on MySQL): counted
 * in characters, 16384 three-byte ones next to the URLs and the description made an event too large
 * to record (a 500 on MySQL).
 */
export const META_MAX_BYTES = 16_384;

/** An optional, nullable http(s) URL. */
export const OptionalUrl = (field: string) =>
  applyDecorators(
    IsOptional(),
    IsString({ message: `The ${label(field)} field must be a string.` }),
    MaxChars(2048, { message: `The ${label(field)} field must not be greater than 2048 characters.` }),
    IsUrl(
      { require_protocol: true, protocols: ['http', 'https'], require_tld: false },
      { message: `The ${label(field)} field must be a valid URL.` },
    ),
  );

/** An optional boolean: may be omitted, but when sent it is a real boolean (null is refused too). */
export const OptionalBoolean = (field: string) =>
  applyDecorators(
    ValidateIf((_, value) => value !== undefined),
    IsBoolean({ message: `The ${label(field)} field must be true or false.` }),
  );

/** Decodes a JSON string into a value before validation; leaves anything else as it is. */
export const DecodeJsonString = () =>
  Transform(({ value }: { value: unknown }) => {
    if (typeof value !== 'string') return value;
    try {
      const decoded = JSON.parse(value) as unknown;
      // "null" decodes to null, which must not pass as "meta omitted".
      return decoded === null ? value : decoded;
    } catch {
      return value;
    }
  });

/** `meta`: a JSON object (a JSON string is decoded first); anything else is refused. */
export const MetaObject = () =>
  applyDecorators(
    IsOptional(),
    DecodeJsonString(),
    ValidateIf((_, value) => value !== null && value !== undefined),
    IsObject({ message: 'The meta field must be a JSON object.' }),
    ValidateBy({
      name: 'metaSize',
      validator: {
        validate: (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '') <= META_MAX_BYTES,
        defaultMessage: () =>
          `The meta field must not be greater than ${META_MAX_BYTES} bytes as JSON (UTF-8).`,
      },
    }),
  );

export const OptionalString = (field: string, max: number) =>
  applyDecorators(
    IsOptional(),
    IsString({ message: `The ${label(field)} field must be a string.` }),
    MaxChars(max, { message: `The ${label(field)} field must not be greater than ${max} characters.` }),
  );

/** A required string, trimmed: missing, null or blank → "The … field is required." */
export const RequiredString = (field: string, max: number) =>
  applyDecorators(
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value)),
    IsNotEmpty({ message: `The ${label(field)} field is required.` }),
    IsString({ message: `The ${label(field)} field must be a string.` }),
    MaxChars(max, { message: `The ${label(field)} field must not be greater than ${max} characters.` }),
  );

/** An optional integer within [min, max]: may be omitted, but when sent it is an integer (null is refused too). */
export const OptionalNonNullInt = (field: string, min: number, max: number) =>
  applyDecorators(
    ValidateIf((_, value) => value !== undefined),
    IsInt({ message: `The ${label(field)} field must be an integer.` }),
    Min(min, { message: `The ${label(field)} field must be at least ${min}.` }),
    Max(max, { message: `The ${label(field)} field must not be greater than ${max}.` }),
  );

/** An optional, nullable integer within [min, max]. */
export const OptionalInt = (field: string, min: number, max = 2_147_483_647) =>
  applyDecorators(
    IsOptional(),
    IsInt({ message: `The ${label(field)} field must be an integer.` }),
    Min(min, { message: `The ${label(field)} field must be at least ${min}.` }),
    Max(max, { message: `The ${label(field)} field must not be greater than ${max}.` }),
  );
