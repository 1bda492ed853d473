/*
 * What a request body may weigh, and the 413s that say so: shared by the parsers' own refusals
 * (exception.filter.ts, upload.interceptor.ts) and the refusal of a declared length before the body
 * is read (middlewares.ts, declaredTooLarge).
 */

/** The 413 of a JSON body or a payment event past its bound. */
export const BODY_TOO_LARGE = 'Request body is too large.';

/** Room for a multipart body's fields other than its payload (slug, title, secret, meta, …) and its framing. */
export const OTHER_FIELDS_BYTES = 256 * 1024;

/** The 413 of a multipart body past one payload (maxBytes) and OTHER_FIELDS_BYTES. */
export const multipartTooLarge = (maxBytes: number) =>
  `The multipart body is larger than MAX_UPLOAD_BYTES (${maxBytes} bytes) and 256 KiB for the other fields.`;
