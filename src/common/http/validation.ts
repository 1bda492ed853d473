import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import type { FieldErrors } from './envelope.js';
import { ValidationFailed } from './errors.js';
import { unpairedSurrogates } from './unicode.js';

/**
 * Which failed rule speaks for a field: a missing value first ("is required"), then a value of the
 * wrong kind ("must be a string"), then the rest in the order the DTO declares them. Every rule runs
 * (they each accept what is not theirs to judge), and one message per field is reported.
 */
const PRIORITY = [
  'isNotEmpty',
  'isDefined',
  'isString',
  'isInt',
  'isNumber',
  'isBoolean',
  'isDate',
  'isObject',
  'isArray',
  'isIn',
  'isEnum',
];
const rank = (constraint: string) => {
  const i = PRIORITY.indexOf(constraint);
  return i < 0 ? PRIORITY.length : i;
};

function collect(errors: ValidationError[], prefix: string, out: FieldErrors): void {
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    const failed = Object.entries(error.constraints ?? {});
    if (failed.length > 0) {
      const [, message] = failed.reduce((best, next) => (rank(next[0]) < rank(best[0]) ? next : best));
      (out[field] ??= []).push(message);
    }
    if (error.children?.length) collect(error.children, field, out);
  }
}

export function toFieldErrors(errors: ValidationError[]): FieldErrors {
  const out: FieldErrors = {};
  collect(errors, '', out);
  return out;
}

/**
 * Keys the pipe would lose without a word inside an object field (entitlements, meta): Nest deletes
 * `__proto__`, `prototype` and `constructor` from the body before validating it, and class-transformer
 * skips keys named like Object.prototype's methods (`toString`). Refused instead, naming the field.
 */
function droppedKeyIn(
  body: unknown,
  dto: ArgumentMetadata['metatype'],
): { field: string; key: string } | null {
  if (!dto || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  // Most bodies (the runtime's among them) hold no object: nothing to look up then.
  if (!Object.values(body).some((value) => typeof value === 'object' && value !== null)) return null;
  const declared = new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(dto, '', true, false)
      .map((rule) => rule.propertyName),
  );
  for (const [field, value] of Object.entries(body)) {
    if (!declared.has(field)) continue; // an unknown field is dropped whole
    const stack: unknown[] = [value];
    while (stack.length > 0) {
      const current = stack.pop();
      if (typeof current !== 'object' || current === null) continue;
      for (const key of Object.keys(current)) {
        if (
          !Array.isArray(current) &&
          (key === '__proto__' || key === 'prototype' || key in Object.prototype)
        )
          return { field, key };
        stack.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return null;
}

export const droppedKeyMessage = (field: string, key: string) =>
  `The ${field.replace(/_/g, ' ')} field must not have a key named "${key}".`;

/**
 * Path parameters are left as sent: their own pipe (IdPipe) checks the text. Converted first, as
 * ValidationPipe converts primitives, `0x1`, `1e1`, `01` or ` 1` would arrive as valid ids.
 */
class AppValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'param') return value;
    if (metadata.type === 'body') {
      const dropped = droppedKeyIn(value, metadata.metatype);
      if (dropped)
        throw new ValidationFailed({ [dropped.field]: [droppedKeyMessage(dropped.field, dropped.key)] });
    }
    const result: unknown = await super.transform(value, metadata);
    // A field decoded from a JSON string (meta, in JSON or multipart) holds text the body's own check never saw.
    const unpaired = unpairedSurrogates(result);
    if (unpaired) throw new ValidationFailed(unpaired);
    return result;
  }
}

/** One pipe for every DTO: unknown fields dropped, types kept strict, 422 keyed by field. */
export function createValidationPipe(): ValidationPipe {
  return new AppValidationPipe({
    whitelist: true,
    transform: true,
    forbidUnknownValues: false,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new ValidationFailed(toFieldErrors(errors)),
  });
}
