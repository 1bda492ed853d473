/** Field → messages, as the service sends them with 422. */
export type FieldErrors = Record<string, string[]>;

/**
 * What went wrong, beyond the status: `unreachable` (no answer: network, DNS, CORS), `timeout`
 * (no answer within `timeoutMs`), `bad_signature` (an answer that could not be verified with the
 * project's public key), `http` (the service refused or failed, see `status`).
 */
export type LicenseGateErrorCode = 'unreachable' | 'timeout' | 'bad_signature' | 'http';

export interface LicenseGateErrorInit {
  status: number;
  code?: LicenseGateErrorCode;
  message: string;
  redirectUrl?: string | null;
  retryAfter?: number | null;
  errors?: FieldErrors | null;
  requestId?: string | null;
  /** The error answer's `data` (a 429 of record() carries the meter), when it is an object. */
  data?: Record<string, unknown> | null;
  cause?: unknown;
}

/**
 * Any refusal or failure of a LicenseGate call.
 *
 * - `status`: the HTTP status (401, 403, 400, 422, 429, 5xx…), or 0 when the service could not be
 *   reached (DNS, connection refused, CORS, aborted, timed out…).
 * - `code`: `unreachable`, `timeout`, `bad_signature` or `http` (see LicenseGateErrorCode).
 * - `message`: the service's own message (see docs/api.md in the repository, "Runtime checks").
 * - `redirectUrl`: the project's `default_redirect_url` sent with every runtime 403, else null.
 * - `retryAfter`: seconds from `Retry-After` (429), else null.
 * - `errors`: field errors (422), else null.
 */
export class LicenseGateError extends Error {
  readonly status: number;
  readonly code: LicenseGateErrorCode;
  readonly redirectUrl: string | null;
  readonly retryAfter: number | null;
  readonly errors: FieldErrors | null;
  /** The service's `X-Request-Id`, for support requests. */
  readonly requestId: string | null;
  /** The error answer's `data` when it is an object (a 429 of `record()`: the meter's counts), else null. */
  readonly data: Record<string, unknown> | null;

  constructor(init: LicenseGateErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'LicenseGateError';
    this.status = init.status;
    this.code = init.code ?? (init.status === 0 ? 'unreachable' : 'http');
    this.redirectUrl = init.redirectUrl ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.errors = init.errors ?? null;
    this.requestId = init.requestId ?? null;
    this.data = init.data ?? null;
  }

  /** True for refusals of the license itself or its use (401/403): show the redirect, do not retry. */
  get isRefusal(): boolean {
    return this.status === 401 || this.status === 403;
  }

  /** True when retrying later may help: network failures, 429 and 5xx. */
  get isRetryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

/** A payload that could not be decrypted: not an LG1 blob, or a wrong secret / tampered blob (GCM tag mismatch). */
export class DecryptionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DecryptionError';
  }
}
