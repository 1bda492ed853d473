import { CallHandler, ExecutionContext, mixin, NestInterceptor, PayloadTooLargeException, Type } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Observable } from 'rxjs';

/**
 * FileInterceptor whose size limits all answer 413. Nest maps multer's oversized file to 413 but an
 * oversized text field (LIMIT_FIELD_VALUE, e.g. `content` sent as multipart) to 400; both are the
 * payload limit (MAX_UPLOAD_BYTES). multer's error stays the cause, and is told by its code, not its wording.
 */
export function UploadInterceptor(field: string): Type<NestInterceptor> {
  class Upload extends FileInterceptor(field) {
    override async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
      try {
        return await super.intercept(context, next);
      } catch (error) {
        const cause = (error as { cause?: { code?: unknown } }).cause;
        if (cause?.code === 'LIMIT_FIELD_VALUE') throw new PayloadTooLargeException((error as Error).message, { cause });
        throw error;
      }
    }
  }
  return mixin(Upload);
}
