import {
  CallHandler,
  ExecutionContext,
  mixin,
  NestInterceptor,
  PayloadTooLargeException,
  Type,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import type { Writable } from 'node:stream';
import { multipartTooLarge, OTHER_FIELDS_BYTES } from './body-limits.js';
import type { FieldErrors } from './envelope.js';
import { ValidationFailed } from './errors.js';
import { label } from './validators.js';

const REPLACEMENT = '\ufffd';
const notUtf8 = (what: string) =>
  `The ${what} must be valid UTF-8 text (it contains bytes that are not UTF-8, or the replacement character U+FFFD).`;

/**
 * Multipart text that was not UTF-8, by field. busboy decodes each part (and the file name) as UTF-8
 * unless the part names a charset, and writes U+FFFD for bytes that are not, keeping no trace of
 * them: a U+FFFD is all that shows, so one is refused (a JSON body that is not UTF-8 is refused
 * whole, common/http/middlewares.ts). Nested values come from bracketed field names (`meta[a]`).
 */
function replacedText(body: unknown, file: { originalname?: unknown } | undefined): FieldErrors | null {
  const errors: FieldErrors = {};
  const pending: Array<{ item: unknown; path: string }> = Object.entries(
    (body ?? {}) as Record<string, unknown>,
  ).map(([path, item]) => ({
    item,
    path,
  }));
  while (pending.length > 0) {
    const { item, path } = pending.shift() as (typeof pending)[number];
    if (typeof item === 'string' && item.includes(REPLACEMENT))
      errors[path] = [notUtf8(`${path.includes('.') ? path : label(path)} field`)];
    else if (item !== null && typeof item === 'object')
      for (const [key, child] of Object.entries(item)) pending.push({ item: child, path: `${path}.${key}` });
  }
  if (typeof file?.originalname === 'string' && file.originalname.includes(REPLACEMENT))
    errors.file = [notUtf8('file name')];
  return Object.keys(errors).length > 0 ? errors : null;
}

/**
 * FileInterceptor whose size limits all answer 413. Nest maps multer's oversized file to 413 but an
 * oversized text field (LIMIT_FIELD_VALUE, e.g. `content` sent as multipart) to 400; both are the
 * payload limit (MAX_UPLOAD_BYTES). multer's error stays the cause, and is told by its code, not its wording.
 * Text that was not UTF-8 is a 422 naming its field, never stored as U+FFFD.
 */
export function UploadInterceptor(field: string): Type<NestInterceptor> {
  class Upload extends FileInterceptor(field) {
    override async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
      let handled: Observable<unknown>;
      try {
        handled = await super.intercept(context, next);
      } catch (error) {
        const cause = (error as { cause?: { code?: unknown } }).cause;
        if (cause?.code === 'LIMIT_FIELD_VALUE')
          throw new PayloadTooLargeException((error as Error).message, { cause });
        throw error;
      }
      const req = context.switchToHttp().getRequest<Request & { file?: { originalname?: unknown } }>();
      if (req.is('multipart/form-data')) {
        const replaced = replacedText(req.body, req.file);
        if (replaced) throw new ValidationFailed(replaced);
      }
      return handled;
    }
  }
  return mixin(Upload);
}

/**
 * multer's streamHandler, stopping a multipart body at one payload (maxBytes) and OTHER_FIELDS_BYTES:
 * multer limits each field and file, not their sum, so many fields each under the limit would all be
 * held in memory. Past the sum, the parse fails with 413 and the rest of the body is drained.
 */
export function boundedMultipart(maxBytes: number) {
  const total = maxBytes + OTHER_FIELDS_BYTES;
  return (req: NodeJS.ReadableStream, busboy: Writable) => {
    let received = 0;
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= total) return;
      req.removeListener('data', count);
      busboy.destroy(new PayloadTooLargeException(multipartTooLarge(maxBytes)));
    };
    req.on('data', count);
    req.pipe(busboy);
  };
}
