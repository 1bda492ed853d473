import { Body, Controller, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { ProjectResource } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreatePortalSessionDto, PortalLinkResponse } from './dto/portal.dto.js';
import { PortalService } from './portal.service.js';

/** The vendor's server opens the customer portal for a buyer (docs/portal.md), as it would a billing portal. */
@ApiTags('portal')
@ApiKeyAuth()
@ApiIdParam('project', 'Project id')
@ApiErrors(404, 500, DATABASE_AWAY)
@ProjectResource()
@Controller('project/:project/portal-sessions')
export class PortalSessionsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly portal: PortalService,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createPortalSession',
    summary: 'Open the customer portal for a customer or a license',
    description:
      'Answers a one-use link (PUBLIC_URL/portal/<token>) valid for 15 minutes: redirect the buyer to it. Opening ' +
      'it shows a Continue page; continuing sets the portal cookie for an hour, bound to the customer (all their ' +
      'licenses of this project) or to the license. Needs a key that is not read-only, or the support role. Audited ' +
      'as portal_session.created.',
  })
  @ApiEnvelope(PortalLinkResponse, { status: 201, description: 'The link, shown once' })
  @ApiBodyErrors(FORBIDDEN.write)
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreatePortalSessionDto,
  ): Promise<PortalLinkResponse> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return (await this.portal.createLink(project, body)) as PortalLinkResponse;
  }
}
