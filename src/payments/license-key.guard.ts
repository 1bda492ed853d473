import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiQuery, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import type { ServerResponse } from 'node:http';
import { AnswerSigning, NONCE_HEADER, PendingSignature } from './answer-signing.js';
import { ApiError, PROJECT_LOCKED, RefusalReason, RuntimeRefusal } from '../common/http/errors.js';
import { ApiErrors, LICENSE_KEY_SCHEME } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { runtimeChecks } from '../metrics/metrics.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { licenseKey, OVERSIZED_KEY, SentLicenseKey } from '../common/http/license-key.js';
import { RuntimeEntry, RuntimeLookupService } from './runtime-lookup.service.js';
import { Clock } from '../common/time.js';
import { AuthFailures } from '../common/throttling/auth-failures.js';

export interface LicensedRequest extends Request {
  runtime?: RuntimeEntry & { project: ProjectEntity };
}

export const API_KEY_AS_LICENSE_KEY =
  'This is an API key, not a license key: API keys go in the X-API-KEY header of the management endpoints; X-LICENSE-KEY takes license keys (a UUID).';

/**
 * A runtime refusal: the envelope's `data` carries the project's redirect_url (docs/decisions.md#runtime-checks);
 * counted by `reason` under the project (and `domainId`) for the analytics (docs/analytics.md).
 */
export function runtimeRefusal(
  reason: RefusalReason,
  status: number,
  message: string,
  project: ProjectEntity | null,
  options: { headers?: Record<string, string>; domainId?: number; projectId?: number | null } = {},
) {
  runtimeChecks.inc({ outcome: `refused_${status}` });
  return new RuntimeRefusal(
    reason,
    status,
    message,
    { redirect_url: project?.default_redirect_url ?? null },
    options.headers,
    project?.id ?? options.projectId ?? null,
    options.domainId ?? null,
  );
}

/**
 * Authenticates runtime callers by license key and applies the license refusals (docs/decisions.md#runtime-checks):
 * unknown, revoked, expired, project deleted, inactive or locked → 403 saying which.
 */
@Injectable()
export class LicenseKeyGuard implements CanActivate {
  constructor(
    private readonly lookup: RuntimeLookupService,
    private readonly signing: AnswerSigning,
    private readonly clock: Clock,
    private readonly failures: AuthFailures,
  ) {}

  /** True at once for a warm license (the runtime fast path's common case), else a promise of it. */
  canActivate(context: ExecutionContext): true | Promise<true> {
    const http = context.switchToHttp();
    const req = http.getRequest<LicensedRequest>();
    const signature = this.signing.arm(req, http.getResponse<ServerResponse>());
    const sent = licenseKey(req);
    if (!sent)
      throw new ApiError(
        401,
        req.headers['x-api-key']
          ? 'License key missing: send it in the X-LICENSE-KEY header; this endpoint does not take API keys (X-API-KEY).'
          : 'License key missing: send it in the X-LICENSE-KEY header.',
      );
    const entry = this.lookup.peek(sent.hash);
    if (!entry) return this.cold(req, sent, signature);
    return this.admitSigned(req, entry, signature);
  }

  /** Admits the license once its project's key is bound to the answer's signature (a promise the first time only). */
  private admitSigned(
    req: LicensedRequest,
    entry: RuntimeEntry,
    signature: PendingSignature | null,
  ): true | Promise<true> {
    const bound = signature && entry.project ? this.signing.bind(signature, entry.project) : undefined;
    return bound ? bound.then(() => admit(req, entry, this.clock)) : admit(req, entry, this.clock);
  }

  /**
   * A key this process does not hold: looked up in the database, then, when it is no license's,
   * counted against the caller's address (a valid key is never refused for its address's guesses).
   */
  private async cold(
    req: LicensedRequest,
    sent: SentLicenseKey,
    signature: PendingSignature | null,
  ): Promise<true> {
    const apiKey = sent.key.startsWith('lg_');
    const entry = sent.hash === OVERSIZED_KEY || apiKey ? null : await this.lookup.byKeyHash(sent.hash);
    if (!entry) await this.failures.failed(req, sent.hash);
    if (apiKey) throw runtimeRefusal('unknown_key', 403, API_KEY_AS_LICENSE_KEY, null);
    if (!entry)
      throw runtimeRefusal('unknown_key', 403, INVALID_KEY, null, {
        projectId: this.lookup.projectOf(sent.hash),
      });
    return this.admitSigned(req, entry, signature);
  }
}

const INVALID_KEY = 'Invalid license key.';

/** The license refusals, in order; on success the request carries the entry. */
function admit(req: LicensedRequest, entry: RuntimeEntry, clock: Clock): true {
  const { license, project } = entry;
  // A license from an order whose payment grace has ended is revoked, before the scheduler writes it
  // (docs/payments.md): one comparison, only when a grace is set.
  if (license.revoked_at || (license.grace_until && license.grace_until.getTime() <= clock.nowMs()))
    throw runtimeRefusal('revoked', 403, 'This license has been revoked.', project);
  if (license.expires_at && license.expires_at.getTime() <= Date.now())
    throw runtimeRefusal('expired', 403, 'This license has expired.', project);
  if (!project) {
    // A deleted project's analytics are shown to no one: not counted (no id here).
    throw runtimeRefusal('project_inactive', 403, 'The project of this license no longer exists.', {
      default_redirect_url: entry.redirectUrl,
    } as ProjectEntity);
  }
  if (!project.is_active) throw runtimeRefusal('project_inactive', 403, 'Project is inactive.', project);
  if (project.locked_at) throw runtimeRefusal('project_locked', 403, PROJECT_LOCKED, project);
  req.runtime = entry as RuntimeEntry & { project: ProjectEntity };
  return true;
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
