import { Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { LicensedRequest, LicenseKeyAuth } from './license-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { RuntimeLookupService } from './runtime-lookup.service.js';
import { IdPipe } from '../common/http/id.pipe.js';
import { fieldError } from '../common/http/errors.js';
import {
  ApiBodyErrors,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
} from '../common/openapi/decorators.js';
import { ProjectsService } from '../projects/projects.service.js';
import type { MaybePromise } from '../common/maybe-promise.js';
import { HasPaidRequest, HasPaidResponse } from './dto/has-paid.response.js';
import {
  DOMAIN_NOT_REGISTERED,
  HasPaidResult,
  NO_DOMAIN,
  RuntimeAnswers,
} from './runtime-answers.service.js';
import { ACTION_INVALID, RuntimeCalls } from './runtime-call.js';

const ActionQuery = ApiQuery({
  name: 'action',
  required: false,
  enum: ['check_project'],
  description:
    "Answer with the project's has_paid instead of the domain's (a billing: license license answers its own either way); on the license-key check a calling domain, when sent, is still checked",
});
const IncludeQuery = ApiQuery({
  name: 'include',
  required: false,
  schema: {
    type: 'string',
    pattern: '^(injectables|token)(,(injectables|token))*$',
    example: 'injectables,token',
  },
  description:
    "Comma-separated: `injectables` adds the paid-only injectables, `token` an offline token (data.token, valid for the project's offline_grace_hours), both only when has_paid is true",
});
const ApiKeyIncludeQuery = ApiQuery({
  name: 'include',
  required: false,
  enum: ['injectables'],
  description: 'Include paid-only injectables when has_paid is true',
});
const DomainHeader = ApiHeader({
  name: 'X-Service-Domain',
  required: false,
  description: 'The calling domain',
});
const DomainQuery = ApiQuery({
  name: 'domain',
  required: false,
  schema: { type: 'string' },
  description:
    'The calling domain when X-Service-Domain is not sent (a URL or host:port is reduced to the host); else the host of Origin, else of Referer',
});

/** The redirect_url refusals carry, in the examples. */
const REDIRECT = { redirect_url: 'https://acme.example/pricing' };

@ApiTags('payments')
@ApiErrors(500, DATABASE_AWAY)
@Controller('project')
export class HasPaidController {
  constructor(
    private readonly payments: RuntimeAnswers,
    private readonly projects: ProjectsService,
    private readonly lookup: RuntimeLookupService,
    private readonly calls: RuntimeCalls,
  ) {}

  /** The runtime check, authenticated by license key. */
  @Post('has-paid')
  @HttpCode(200)
  @LicenseKeyAuth()
  @ActionQuery
  @IncludeQuery
  @DomainHeader
  @DomainQuery
  @ApiOperation({
    operationId: 'checkHasPaid',
    summary: 'Runtime check: has the project (or the calling domain) been paid?',
    description:
      'License key from X-LICENSE-KEY, else the `license` query or body parameter. Checked in order: the license, allowed_ips, ' +
      'allowed_countries (CF-IPCountry, or COUNTRY_HEADER), the calling domain (also with action=check_project, when one is sent) with max_domains and ' +
      'max_subdomains_per_domain, then max_usage_per_day. Licenses with allow_configs may send `config` {action, include, domain} in the body. ' +
      'A license with billing: license answers its own has_paid (with or without action=check_project) from any calling domain, registered or not, ' +
      'counted by registrable domain (Public Suffix List); without a calling domain it needs action=check_project.',
  })
  @ApiBody({ type: HasPaidRequest, required: false })
  @ApiEnvelope(HasPaidResponse, { description: '{has_paid, is_test_license, redirect_url?, injectables?}' })
  @ApiBodyErrors(
    {
      status: 400,
      description:
        'The calling domain could not be determined, or the X-Service-Domain header or domain parameter sent names no host (`data.redirect_url` is set); or a malformed JSON body',
      message: NO_DOMAIN,
      data: REDIRECT,
    },
    {
      status: 403,
      refusal: true,
      description:
        'Invalid, revoked or expired license; project deleted, inactive or locked; IP address or country not allowed; domain not registered ' +
        '(or inactive); pinned to another domain; the max_domains / max_subdomains_per_domain limit reached; or injectables or a token asked ' +
        'for by action=check_project without a calling domain (unless the license has allow_configs). `data.redirect_url` is set',
      message: DOMAIN_NOT_REGISTERED,
      data: REDIRECT,
    },
    {
      status: 422,
      description: 'action or include has an unknown value, or X-Service-Nonce is malformed (`nonce`)',
      field: 'action',
      message: ACTION_INVALID,
    },
    {
      status: 429,
      description:
        'Daily usage limit reached (Retry-After: seconds to midnight UTC), or rate limited (THROTTLE_RUNTIME_LIMIT per license)',
      message: 'This license has reached its daily limit of 1000 checks; it resets at midnight UTC.',
    },
  )
  hasPaid(@Req() req: LicensedRequest): MaybePromise<HasPaidResult> {
    // The same gate and answer as the runtime route (runtime-fast-path.ts); this route is what the
    // OpenAPI document is generated from, and what other spellings of the path reach.
    return this.payments.hasPaid(req.runtime as NonNullable<LicensedRequest['runtime']>, (allowConfigs) =>
      this.calls.hasPaid(req, allowConfigs),
    );
  }

  /** The same question asked with an API key for one project. */
  @Get(':project/has-paid')
  @ApiKeyAuth()
  @ActionQuery
  @ApiKeyIncludeQuery
  @DomainHeader
  @DomainQuery
  @ApiOperation({
    summary: 'Has the project (or a domain of it) been paid?',
    description:
      'The runtime question asked with an API key for one project, with the same domain rules and no license limits. Without ' +
      '`action=check_project` it asks about the domain in X-Service-Domain (or `domain`, Origin, Referer) and answers 400 when there is ' +
      'none; with `action=check_project` it asks about the project itself.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(HasPaidResponse, { description: '{has_paid, redirect_url?, injectables?}' })
  @ApiErrors(
    {
      status: 400,
      description:
        'No domain was sent, or the one sent names no host, and action=check_project was not given',
      message: NO_DOMAIN,
    },
    {
      status: 403,
      description:
        'Invalid, revoked or expired key; no access to the project; or the domain is not registered under the project',
      message: DOMAIN_NOT_REGISTERED,
      data: REDIRECT,
    },
    404,
    {
      status: 422,
      description: 'action or include has an unknown value (`token` is issued to license keys only)',
      field: 'action',
      message: ACTION_INVALID,
    },
  )
  async hasPaidByApiKey(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
    @Req() req: Request,
  ): Promise<HasPaidResult> {
    const call = this.calls.byApiKey(req);
    if (call.include?.token) throw fieldError('include', TOKEN_NEEDS_LICENSE);
    const project = await this.projects.findAccessible(principal, id);
    return this.payments.checkProject(project, (await this.lookup.project(project.id)).domains, call);
  }
}

export const TOKEN_NEEDS_LICENSE =
  'Offline tokens are issued to license keys: ask POST /project/has-paid with include=token.';
