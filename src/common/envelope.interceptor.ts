import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { instanceToPlain } from 'class-transformer';
import { map, Observable } from 'rxjs';
import { Envelope, RAW_RESPONSE, RESPONSE_MESSAGE } from './envelope.js';

/**
 * Wraps every successful result in the envelope and serialises entities through class-transformer,
 * so fields marked @Exclude() never leave the service.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    if (this.reflector.get<boolean>(RAW_RESPONSE, handler)) return next.handle();
    const message = this.reflector.get<string>(RESPONSE_MESSAGE, handler) ?? 'Success';
    return next.handle().pipe(
      map(
        (data): Envelope => ({
          status: 'success',
          message,
          data: data === undefined || data === null ? null : instanceToPlain(data),
          errors: null,
        }),
      ),
    );
  }
}
