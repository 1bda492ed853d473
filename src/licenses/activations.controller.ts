import { Controller, Delete, Get, Param, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { ProjectResource } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { ActivationsService } from './activations.service.js';
import {
  ActivationResponse,
  LicenseDeactivatedEvent,
  LicenseDomainLimitReachedEvent,
} from './dto/activation.response.js';
import { LicenseActivationEntity } from './license-usage.entity.js';

const NOT_FOUND = {
  status: 404,
  description:
    'Project, license or activation not found, or not part of the given project or license (checked before any 403)',
};

/**
 * The places a license has been used from, and freeing them (docs/decisions.md#activations). The list
 * is not served from the read cache: last_seen_at moves without a write to the project.
 */
@ApiTags('licenses')
@ApiKeyAuth()
@ApiIdParam('project', 'Project id')
@ApiIdParam('license', 'License id')
@ApiErrors(NOT_FOUND, 500, DATABASE_AWAY)
@ApiExtraModels(LicenseDeactivatedEvent, LicenseDomainLimitReachedEvent)
@ProjectResource()
@Controller('project/:project/licenses/:license/activations')
export class ActivationsController {
  constructor(private readonly activations: ActivationsService) {}

  @Get()
  @ApiOperation({
    summary: "List a license's activations",
    description:
      'Oldest first. Each is a (registered domain, host) the license has been used from; last_seen_at is within a minute of the last use.',
  })
  @ApiCursorList(ActivationResponse, 50)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) licenseId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<LicenseActivationEntity>> {
    const { license } = await this.activations.findAccessible(principal, projectId, licenseId, null);
    return this.activations.list(license, query);
  }

  @Delete(':activation')
  @ApiOperation({
    summary: 'Delete an activation (free its slot)',
    description:
      'The slot is free at once on every instance: the next call from a new domain may take it. Deleting the registered domain\'s own activation (host "") frees ' +
      'its max_domains slot; its subdomains\' activations stay until deleted. Sends license.deactivated with by "api_key".',
  })
  @ApiIdParam('activation', 'Activation id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write)
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) licenseId: number,
    @Param('activation', IdPipe) activationId: number,
  ): Promise<null> {
    const { project, license } = await this.activations.findAccessible(
      principal,
      projectId,
      licenseId,
      activationId,
      { write: true },
    );
    await this.activations.remove(project, license, activationId);
    return null;
  }
}
