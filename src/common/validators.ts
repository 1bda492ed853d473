import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsBoolean, IsObject, IsOptional, IsString, IsUrl, MaxLength, ValidateIf } from 'class-validator';

/** Laravel-style messages: "The default redirect url field …". */
export const label = (field: string) => field.replace(/_/g, ' ');

/** An optional, nullable http(s) URL. */
export const OptionalUrl = (field: string) =>
  applyDecorators(
    IsOptional(),
    IsString({ message: `The ${label(field)} field must be a string.` }),
    MaxLength(2048, { message: `The ${label(field)} field must not be greater than 2048 characters.` }),
    IsUrl({ require_protocol: true, protocols: ['http', 'https'], require_tld: false }, { message: `The ${label(field)} field must be a valid URL.` }),
  );

/** An optional boolean: may be omitted, but when sent it is a real boolean (null is refused too). */
export const OptionalBoolean = (field: string) =>
  applyDecorators(
    ValidateIf((_, value) => value !== undefined),
    IsBoolean({ message: `The ${label(field)} field must be true or false.` }),
  );

/** Decodes a JSON string into a value before validation; leaves anything else as it is. */
export const DecodeJsonString = () =>
  Transform(({ value }) => {
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
  );

export const OptionalString = (field: string, max: number) =>
  applyDecorators(
    IsOptional(),
    IsString({ message: `The ${label(field)} field must be a string.` }),
    MaxLength(max, { message: `The ${label(field)} field must not be greater than ${max} characters.` }),
  );
