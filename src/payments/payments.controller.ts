import { Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiBadRequestResponse, ApiHeader, ApiOkResponse, ApiQuery, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { LicensedRequest, LicenseKeyAuth } from '../auth/license-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { RuntimeLookupService } from '../auth/runtime-lookup.service.js';
import { IdPipe } from '../common/id.pipe.js';
import { notFound } from '../common/errors.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CheckOptions, HasPaidResult, parseCheckOptions, PaymentsService } from './payments.service.js';

const ActionQuery = ApiQuery({ name: 'action', required: false, enum: ['check_project'], description: 'Force a project-level check; ignore the domain' });
const IncludeQuery = ApiQuery({ name: 'include', required: false, enum: ['injectables'], description: 'Include paid-only injectables when has_paid is true' });
const DomainHeader = ApiHeader({ name: 'X-Service-Domain', required: false, description: 'The calling domain' });

@ApiTags('payments')
@Controller('project')
export class PaymentsController {
  constructor(
    private readonly payments: PaymentsService,
    private readonly projects: ProjectsService,
    private readonly lookup: RuntimeLookupService,
  ) {}

  /** Seed 4.2: the runtime check, authenticated by license key. */
  @Post('has-paid')
  @HttpCode(200)
  @LicenseKeyAuth()
  @ActionQuery
  @IncludeQuery
  @DomainHeader
  @ApiOkResponse({ description: '{has_paid, injectables?, redirect_url?, is_test_license}' })
  @ApiBadRequestResponse({ description: 'The calling domain could not be determined' })
  @ApiTooManyRequestsResponse({ description: 'Daily usage limit reached; Retry-After says when it resets' })
  hasPaid(@Req() req: LicensedRequest): Promise<HasPaidResult> {
    const runtime = req.runtime as NonNullable<LicensedRequest['runtime']>;
    let options = parseCheckOptions(req.query as Record<string, unknown>);
    // SPEC 7 step 5: only allow_configs licenses may steer the check from the body.
    const config = (req.body as { config?: unknown } | undefined)?.config;
    if (runtime.license.allow_configs && config && typeof config === 'object' && !Array.isArray(config)) {
      options = { ...options, ...parseCheckOptions(pick(config as Record<string, unknown>)) };
    }
    return this.payments.checkLicense(runtime, req, options);
  }

  /** Seed 4.3: the same question asked with an API key for one project. */
  @Get(':project/has-paid')
  @ApiKeyAuth()
  @ActionQuery
  @IncludeQuery
  @DomainHeader
  @ApiOkResponse({ description: '{has_paid, injectables?, redirect_url?}' })
  async hasPaidByApiKey(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number, @Req() req: Request): Promise<HasPaidResult> {
    const options: CheckOptions = parseCheckOptions(req.query as Record<string, unknown>);
    const project = await this.projects.findAccessible(principal, id);
    const entry = await this.lookup.project(project.id);
    if (!entry) throw notFound('Project');
    return this.payments.checkProject(project, entry.domains, req, options);
  }
}

function pick(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['action', 'include', 'domain']) if (config[key] !== undefined) out[key] = config[key];
  return out;
}
