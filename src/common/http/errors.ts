import { HttpException, HttpStatus } from '@nestjs/common';
import type { FieldErrors } from './envelope.js';

/**
 * An error that the exception filter turns into the envelope as is: message, optional field
 * errors and optional data (runtime refusals carry `redirect_url` there).
 */
export class ApiError extends HttpException {
  constructor(
    status: number,
    message: string,
    readonly errors: FieldErrors | null = null,
    readonly data: Record<string, unknown> | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super({ message, errors, data }, status);
  }
}

/** Why a runtime call was refused, as the analytics count it (docs/analytics.md#reasons). */
export const REFUSAL_REASONS = [
  'unknown_key',
  'revoked',
  'expired',
  'project_locked',
  'project_inactive',
  'ip',
  'country',
  'domain_missing',
  'domain_unregistered',
  'domain_limit',
  'usage_limit',
  'rate_limited',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** A runtime refusal as a value: why (as the analytics count it), what the caller is told, what it is filed under. */
export interface RefusalOptions {
  reason: RefusalReason;
  status: number;
  message: string;
  /** The project's default_redirect_url, sent as `data.redirect_url`; absent: `data` is null. */
  redirectUrl?: string | null;
  /** Retry-After and the like. */
  headers?: Record<string, string>;
  /** The project and registered domain the refusal is counted under (docs/analytics.md). */
  projectId?: number | null;
  domainId?: number | null;
}

/**
 * A runtime call refused: answered like any ApiError, and counted once by its reason where errors
 * become answers (gate/answer-counting.ts).
 */
export class RuntimeRefusal extends ApiError {
  readonly reason: RefusalReason;
  readonly projectId: number | null;
  readonly domainId: number | null;

  constructor(refusal: RefusalOptions) {
    const data = refusal.redirectUrl === undefined ? null : { redirect_url: refusal.redirectUrl };
    super(refusal.status, refusal.message, null, data, refusal.headers);
    this.reason = refusal.reason;
    this.projectId = refusal.projectId ?? null;
    this.domainId = refusal.domainId ?? null;
  }
}

/** 422 with field-level details. */
export class ValidationFailed extends ApiError {
  constructor(errors: FieldErrors, message?: string) {
    super(HttpStatus.UNPROCESSABLE_ENTITY, message ?? summarise(errors), errors);
  }
}

/** 422 for a single field. */
export const fieldError = (field: string, message: string) => new ValidationFailed({ [field]: [message] });

/** "The name field is required. (and 2 more errors)", like the first line a person reads. */
export function summarise(errors: FieldErrors): string {
  const all = Object.values(errors).flat();
  if (all.length === 0) return 'The given data was invalid.';
  const rest = all.length - 1;
  return rest === 0 ? all[0] : `${all[0]} (and ${rest} more error${rest === 1 ? '' : 's'})`;
}

export const notFound = (what: string) => new ApiError(HttpStatus.NOT_FOUND, `${what} not found.`);
export const forbidden = (message: string) => new ApiError(HttpStatus.FORBIDDEN, message);

/** What a client is told when a unique value it sent is taken (checked first, and mapped from the index). */
export const SLUG_TAKEN = 'The slug has already been taken.';
export const TITLE_TAKEN = 'The title has already been taken.';
export const DOMAIN_TAKEN = 'The domain has already been taken.';
export const EMAIL_TAKEN = 'The email has already been taken.';
export const PROJECT_LOCKED = 'Project is locked.';
export const GLOBAL_KEY_REQUIRED =
  'This action requires a global API key; project-scoped keys cannot perform it.';
