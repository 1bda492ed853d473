import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiError } from '../common/http/errors.js';
import { ApiBodyErrors, ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { Clock } from '../common/time.js';
import { type MeterAnswer, meterLimit, Meters } from '../plans/meters.js';
import { keyReused } from '../plans/meters.js';
import { RecordUsageDto, UsageRecordResponse } from '../plans/dto/usage.dto.js';
import { callingDomain, findRegistered } from './calling-domain.js';
import { LicensedRequest, LicenseKeyAuth } from './license-key.guard.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { type Admitted, paidNow } from './runtime-gate.js';
import { RuntimeCalls } from './runtime-call.js';

export const NOT_PAID = 'This license is not paid.';

/**
 * Whether a license answers paid for metered usage: a `billing: license` license its own flag; else
 * its pinned domain's flag, else the registered
 * domain the call names (X-Service-Domain or `domain`), else the project's; a grace that has passed
 * is unpaid.
 */
export function meteredPaid(
  { license, project, domains, pinned }: Admitted,
  req: Request,
  now: number,
): boolean {
  // A license that carries its own payment answers its own flag, from whichever site.
  if (license.billing === 'license') return paidNow(license.has_paid, license.grace_until, now);
  if (license.domain_id !== null)
    return pinned !== null && pinned.is_active && paidNow(pinned.has_paid, pinned.grace_until, now);
  const host = callingDomain(req, undefined).host;
  const registered = host ? findRegistered(domains, host) : undefined;
  if (registered) return paidNow(registered.has_paid, registered.grace_until, now);
  return paidNow(project.has_paid, project.grace_until, now);
}

/** Metered usage a license holder records (docs/plans.md#metered-usage). */
@ApiTags('licenses')
@ApiErrors(500, DATABASE_AWAY)
@Controller('license')
export class LicenseUsageController {
  constructor(
    private readonly payments: RuntimeAnswers,
    private readonly calls: RuntimeCalls,
    private readonly meters: Meters,
    private readonly clock: Clock,
  ) {}

  @Post('usage')
  @HttpCode(200)
  @LicenseKeyAuth()
  @ApiOperation({
    summary: 'Record metered usage',
    description:
      'Counts `amount` against a meter (an integer entitlement `meter.*` of the license: a quota per UTC calendar month). Exact under ' +
      'concurrency and across instances. License refusals as for has-paid (including allowed_ips and allowed_countries); a license that ' +
      'does not answer paid → 403. Past the quota → 429 with the same data and Retry-After to the reset, nothing counted. Sends ' +
      'license.quota_reached once per license, meter and month.',
  })
  @ApiBody({ type: RecordUsageDto })
  @ApiEnvelope(UsageRecordResponse, { description: '{meter, used, limit, remaining, resets_at}' })
  @ApiBodyErrors(
    {
      status: 403,
      refusal: true,
      description: `Invalid, revoked or expired license; project deleted, inactive or locked; IP address or country not allowed; or the license does not answer paid (${NOT_PAID})`,
    },
    {
      status: 404,
      description: 'The license has no such meter',
      message: 'This license has no meter "meter.ai_credits".',
    },
    {
      status: 422,
      description: `A field is invalid, or the idempotency key was sent before with another meter or amount (${keyReused})`,
      field: 'idempotency_key',
      message: 'The idempotency key field is required.',
    },
    {
      status: 429,
      description:
        "The month's quota would be passed (`data` as the success's, Retry-After: seconds to the reset), or rate limited (THROTTLE_RUNTIME_LIMIT)",
      message:
        'This license has used its quota of 1000 for meter.ai_credits this month; it resets at 2026-12-01T00:00:00Z.',
    },
  )
  async record(@Req() req: LicensedRequest, @Body() body: RecordUsageDto): Promise<MeterAnswer> {
    const entry = this.payments.admit(req.runtime as NonNullable<LicensedRequest['runtime']>);
    this.payments.assertPlaceAllowed(entry, this.calls.caller(req));
    const entitlements = entry.plan?.entitlements ?? {};
    // A meter the license lacks is a 404 whether or not it is paid.
    meterLimit(entitlements, body.meter);
    if (!meteredPaid(entry, req, this.clock.nowMs()))
      throw new ApiError(403, NOT_PAID, null, { redirect_url: entry.project.default_redirect_url });
    return this.meters.record({
      project: entry.project,
      licenseId: entry.license.id,
      entitlements,
      meter: body.meter,
      amount: body.amount ?? 1,
      idempotencyKey: body.idempotency_key,
    });
  }
}
