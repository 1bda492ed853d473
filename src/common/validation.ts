import { ValidationError, ValidationPipe } from '@nestjs/common';
import type { FieldErrors } from './envelope.js';
import { ValidationFailed } from './errors.js';

function collect(errors: ValidationError[], prefix: string, out: FieldErrors): void {
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    const messages = Object.values(error.constraints ?? {});
    if (messages.length > 0) (out[field] ??= []).push(...messages);
    if (error.children?.length) collect(error.children, field, out);
  }
}

export function toFieldErrors(errors: ValidationError[]): FieldErrors {
  const out: FieldErrors = {};
  collect(errors, '', out);
  return out;
}

/** One pipe for every DTO: unknown fields dropped, types kept strict, 422 keyed by field. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    transform: true,
    forbidUnknownValues: false,
    stopAtFirstError: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new ValidationFailed(toFieldErrors(errors)),
  });
}
