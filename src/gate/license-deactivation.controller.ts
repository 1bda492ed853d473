import { Controller, HttpCode, Post, Req, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AuditContextInterceptor } from '../audit/audit-context.js';
import { fieldError, RuntimeRefusal } from '../common/http/errors.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import { ApiBodyErrors, ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { AppConfig } from '../config/app-config.js';
import { ActivationsService } from '../licenses/activations.service.js';
import { DeactivationRequest, DeactivationResponse } from '../licenses/dto/activation.response.js';
import { hostName, namedDomain } from './calling-domain.js';
import { LicensedRequest, LicenseKeyAuth } from './license-key.guard.js';
import { secondsToUtcMidnight } from '../common/time.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { RuntimeCalls } from './runtime-call.js';

const DOMAIN_REQUIRED =
  'The domain field is required: send the host to deactivate in the X-Service-Domain header or as domain in the body.';
const NOT_A_HOST =
  'The domain must be a host name such as shop.example.com (not an IP address, a wildcard or anything else).';

/** The host a deactivation names (docs/decisions.md#activations), or a 422 naming `domain`. */
function deactivationHost(req: LicensedRequest): string {
  const sent = namedDomain(req);
  if (sent === undefined) throw fieldError('domain', DOMAIN_REQUIRED);
  if (typeof sent !== 'string') throw fieldError('domain', 'The domain field must be a string.');
  const host = hostName(sent);
  if (host === null) throw fieldError('domain', NOT_A_HOST);
  return host;
}

/** Self-service for license holders: free the slot a site took, e.g. before moving to another domain. */
@ApiTags('licenses')
@ApiErrors(500, DATABASE_AWAY)
@Controller('license')
export class LicenseDeactivationController {
  constructor(
    private readonly activations: ActivationsService,
    private readonly payments: RuntimeAnswers,
    private readonly config: AppConfig,
    private readonly answers: RuntimeAnswerCounting,
    private readonly calls: RuntimeCalls,
  ) {}

  @Post('deactivate')
  @HttpCode(200)
  @LicenseKeyAuth()
  // A management write made by the license holder: audited with the actor "license".
  @UseInterceptors(AuditContextInterceptor)
  @ApiHeader({ name: 'X-Service-Domain', required: false, description: 'The host to deactivate' })
  @ApiQuery({
    name: 'domain',
    required: false,
    schema: { type: 'string' },
    description: 'The host to deactivate, when neither X-Service-Domain nor `domain` in the body is sent',
  })
  @ApiOperation({
    summary: 'Deactivate the license on a host (self-service)',
    description:
      "Deletes the activations of exactly that host (the registered domain's own when it is a registered domain, the subdomain's when it is one) and " +
      'answers how many. The slot is free at once on every instance. License refusals as for has-paid (401/403, including allowed_ips and ' +
      'allowed_countries). At most SELF_DEACTIVATIONS_PER_DAY (3) deactivations that free something per license and UTC day; one that frees ' +
      'nothing is not counted. Sends license.deactivated with by "license".',
  })
  @ApiBody({ type: DeactivationRequest, required: false })
  @ApiEnvelope(DeactivationResponse, { description: '{deactivated: N}' })
  @ApiBodyErrors(
    {
      status: 403,
      refusal: true,
      description:
        'Invalid, revoked or expired license; project deleted, inactive or locked; IP address or country not allowed; SELF_DEACTIVATIONS_PER_DAY is 0',
    },
    { status: 422, description: 'No domain was sent, or it is not a host name' },
    {
      status: 429,
      description:
        "The day's self-service deactivations are used up (Retry-After: seconds to midnight UTC), or rate limited (THROTTLE_RUNTIME_LIMIT)",
    },
  )
  async deactivate(@Req() req: LicensedRequest): Promise<DeactivationResponse> {
    const runtime = this.payments.admit(req.runtime as NonNullable<LicensedRequest['runtime']>);
    const host = deactivationHost(req);
    const caller = this.calls.caller(req);
    this.payments.assertPlaceAllowed(runtime, caller);
    const max = this.config.env.SELF_DEACTIVATIONS_PER_DAY;
    // Turned off: refused before any transaction or row lock.
    if (max === 0)
      throw new RuntimeRefusal({
        reason: 'usage_limit',
        status: 403,
        message: 'Self-service deactivation is turned off on this service; ask the vendor to free the slot.',
        redirectUrl: runtime.project.default_redirect_url,
        projectId: runtime.project.id,
      });
    const answer = await this.activations.deactivateHost(runtime.project, runtime.license, host);
    if (answer === 'allowance_used') {
      const message = `This license has used its ${max} self-service deactivation${max === 1 ? '' : 's'} for today; more are possible after midnight UTC.`;
      throw new RuntimeRefusal({
        reason: 'usage_limit',
        status: 429,
        message,
        headers: { 'Retry-After': String(secondsToUtcMidnight(Date.now())) },
        projectId: runtime.project.id,
      });
    }
    const paid =
      runtime.license.billing === 'license' ? this.payments.paidFor(runtime) : runtime.project.has_paid;
    this.answers.answered(caller, runtime.project.id, paid, null);
    return answer;
  }
}
