import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { instanceToPlain } from 'class-transformer';
import { map, Observable } from 'rxjs';
import { Envelope, RAW_RESPONSE } from './envelope.js';

/** True for JSON-ready data (plain objects, arrays, primitives): nothing for class-transformer to do. */
function isPlain(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth > 4) return false;
  if (Array.isArray(value)) return value.every((v) => isPlain(v, depth + 1));
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) if (!isPlain((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}

/**
 * Wraps every successful result in the envelope and serialises entities through class-transformer,
 * so fields marked @Exclude() never leave the service.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  /** Per handler: whether it answers its own body (@RawResponse). Read once, not per request. */
  private readonly raw = new WeakMap<object, boolean>();

  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    let raw = this.raw.get(handler);
    if (raw === undefined) {
      raw = this.reflector.get<boolean>(RAW_RESPONSE, handler) === true;
      this.raw.set(handler, raw);
    }
    if (raw) return next.handle();
    return next.handle().pipe(map(successEnvelope));
  }
}

/** A handler's result in the success envelope (also written by RuntimeFastPath). */
export function successEnvelope(data: unknown): Envelope {
  return {
    status: 'success',
    message: 'Success',
    data: data === undefined || data === null ? null : isPlain(data) ? data : instanceToPlain(data),
    errors: null,
  };
}
