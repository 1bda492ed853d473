import { Body, Param, Post } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/http/id.pipe.js';
import { ApiBodyErrors, ApiEnvelope, FORBIDDEN } from '../common/openapi/decorators.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreatePortalSessionDto, PortalLinkResponse } from './dto/portal.dto.js';
import { PortalService } from './portal.service.js';

/** The vendor's server opens the customer portal for a buyer (docs/portal.md), as it would a billing portal. */
@ProjectController('portal-sessions', 'portal')
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
