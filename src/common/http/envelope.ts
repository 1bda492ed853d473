import { SetMetadata } from '@nestjs/common';

/** The standard response envelope (docs/decisions.md#the-envelope-and-errors). */
export interface Envelope<T = unknown> {
  status: 'success' | 'error' | 'ok';
  message: string;
  data: T | null;
  errors: Record<string, string[]> | null;
}

/** Field → messages, as in `{"errors":{"slug":["The slug has already been taken."]}}`. */
export type FieldErrors = Record<string, string[]>;

export const RAW_RESPONSE = 'licensegate:raw-response';
/** The handler returns its own complete body (the API root does). */
export const RawResponse = () => SetMetadata(RAW_RESPONSE, true);
