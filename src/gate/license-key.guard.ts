import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiQuery, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AnswerSigning, NONCE_HEADER, PendingSignature } from './answer-signing.js';
import { ApiError, RuntimeRefusal } from '../common/http/errors.js';
import { andThen, type MaybePromise } from '../common/maybe-promise.js';
import { ApiErrors, LICENSE_KEY_SCHEME } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { licenseKey, OVERSIZED_KEY, SentLicenseKey } from '../common/http/license-key.js';
import { RuntimeEntry, RuntimeLookupService } from './runtime-lookup.service.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';

export interface LicensedRequest extends Request {
  /** The license the key names, found by LicenseKeyGuard; the gate decides the rest (runtime-gate.ts). */
  runtime?: RuntimeEntry;
}

export const API_KEY_AS_LICENSE_KEY =
  'This is an API key, not a license key: API keys go in the X-API-KEY header of the management endpoints; X-LICENSE-KEY takes license keys (a UUID).';
const INVALID_KEY = 'Invalid license key.';

/**
 * Finds the license a runtime call's key names, and refuses a call whose key names none: 401 without a
 * key, 403 for an unknown key (counted against the caller's address). Whether the license may be used
 * is the gate's decision (runtime-gate.ts), not this guard's.
 */
@Injectable()
export class LicenseKeyGuard implements CanActivate {
  constructor(
    private readonly lookup: RuntimeLookupService,
    private readonly signing: AnswerSigning,
    private readonly failures: AuthFailures,
  ) {}

  canActivate(context: ExecutionContext): true | Promise<true> {
    const http = context.switchToHttp();
    const req = http.getRequest<LicensedRequest>();
    return andThen(this.find(req, http.getResponse<ServerResponse>()), (entry) => {
      req.runtime = entry;
      return true as const;
    });
  }

  /**
   * The license of the call's key: at once for a warm license (the runtime route's common case), else
   * a promise of it. Arms the answer's signature, and binds it to the license's project key.
   */
  find(req: IncomingMessage, res: ServerResponse): MaybePromise<RuntimeEntry> {
    const signature = this.signing.arm(req, res);
    const sent = licenseKey(req as Request);
    if (!sent)
      throw new ApiError(
        401,
        req.headers['x-api-key']
          ? 'License key missing: send it in the X-LICENSE-KEY header; this endpoint does not take API keys (X-API-KEY).'
          : 'License key missing: send it in the X-LICENSE-KEY header.',
      );
    const entry = this.lookup.peek(sent.hash);
    if (!entry) return this.cold(req, sent, signature);
    return this.signed(entry, signature);
  }

  /** The entry, once its project's key is bound to the answer's signature (a promise the first time only). */
  private signed(entry: RuntimeEntry, signature: PendingSignature | null): MaybePromise<RuntimeEntry> {
    const bound = signature && entry.project ? this.signing.bind(signature, entry.project) : undefined;
    return bound ? bound.then(() => entry) : entry;
  }

  /**
   * A key this process does not hold: looked up in the database, then, when it is no license's,
   * counted against the caller's address (a valid key is never refused for its address's guesses).
   */
  private async cold(
    req: IncomingMessage,
    sent: SentLicenseKey,
    signature: PendingSignature | null,
  ): Promise<RuntimeEntry> {
    const apiKey = sent.key.startsWith('lg_');
    const entry = sent.hash === OVERSIZED_KEY || apiKey ? null : await this.lookup.byKeyHash(sent.hash);
    if (!entry) await this.failures.failed(req as Request, sent.hash);
    const unknown = { reason: 'unknown_key', status: 403, redirectUrl: null } as const;
    if (apiKey) throw new RuntimeRefusal({ ...unknown, message: API_KEY_AS_LICENSE_KEY });
    if (!entry)
      throw new RuntimeRefusal({
        ...unknown,
        message: INVALID_KEY,
        projectId: this.lookup.projectOf(sent.hash),
      });
    return this.signed(entry, signature);
  }
}

/** Guards a runtime route with a license key and documents it. */
export const LicenseKeyAuth = () =>
  applyDecorators(
    ThrottleAs('runtime'),
    UseGuards(LicenseKeyGuard),
    ApiSecurity(LICENSE_KEY_SCHEME),
    ApiHeader({
      name: NONCE_HEADER,
      required: false,
      schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{16,128}$' },
      description:
        "A fresh random value per call: the answer (success or refusal, once the license's project is known) then carries X-Service-Date and " +
        'X-Service-Signature: v1,<base64 Ed25519 by the project\'s signing key over "LG1-ANSWER\\n" + date + "\\n" + nonce + "\\n" + METHOD + " " + ' +
        'path and query as sent + "\\n" + hex SHA-256 of the license key + "\\n" + X-Service-Domain as sent (or "") + "\\n" + hex SHA-256 of the body>. ' +
        'Malformed → 422 on nonce',
    }),
    ApiQuery({
      name: 'license',
      required: false,
      schema: { type: 'string' },
      description: 'The license key, when X-LICENSE-KEY is not sent',
    }),
    ApiErrors(
      { status: 401, description: 'Missing license key' },
      {
        status: 403,
        refusal: true,
        description:
          'Invalid, revoked or expired license; project deleted, inactive or locked; `data.redirect_url` is set',
      },
      {
        status: 429,
        description:
          'Rate limited (THROTTLE_RUNTIME_LIMIT per license), or too many unknown or malformed keys from this address (THROTTLE_AUTH_FAILURES_LIMIT); Retry-After says when to try again',
      },
    ),
  );
