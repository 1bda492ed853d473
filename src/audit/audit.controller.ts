import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { WHOLE_ACCOUNT_REQUIRED } from '../auth/auth.service.js';
import { ApiError } from '../common/http/errors.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { ProjectResource } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiCursorQuery,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
} from '../common/openapi/decorators.js';
import { CursorPage } from '../database/pagination.js';
import { ProjectsService } from '../projects/projects.service.js';
import { AuditItem, AuditService } from './audit.service.js';
import { AuditEventResponse } from './dto/audit-event.response.js';
import { AuditQueryDto } from './dto/audit-query.dto.js';

/** The audit log: every management write, latest first (docs/decisions.md#audit-log). Never cached. */
@ApiTags('audit')
@ApiKeyAuth()
@ApiErrors(422, 500, DATABASE_AWAY)
@ProjectResource()
@Controller()
export class AuditController {
  constructor(
    private readonly audit: AuditService,
    private readonly projects: ProjectsService,
  ) {}

  @Get('audit-log')
  @ApiOperation({
    summary: 'The audit log of the account',
    description:
      "A global key reads its owner's rows, a project-scoped key those of its project. Latest first; the filters narrow the list.",
  })
  @ApiCursorQuery(20)
  @ApiEnvelope(AuditEventResponse, { cursor: true })
  list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Query() query: AuditQueryDto,
  ): Promise<CursorPage<AuditItem>> {
    // A member limited to some projects reads those projects' logs, not the account's.
    if (principal.projectIds !== null) throw new ApiError(403, WHOLE_ACCOUNT_REQUIRED);
    return this.audit.list({ owner_id: principal.user.id, project_id: principal.projectId }, query);
  }

  @Get('project/:project/audit-log')
  @ApiOperation({
    summary: 'The audit log of a project',
    description:
      'Latest first; the filters narrow the list. The rows stay after the resources they name are deleted.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiCursorQuery(20)
  @ApiEnvelope(AuditEventResponse, { cursor: true })
  @ApiErrors(404)
  async listProject(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: AuditQueryDto,
  ): Promise<CursorPage<AuditItem>> {
    const project = await this.projects.findAccessible(principal, projectId);
    return this.audit.list({ owner_id: project.user_id, project_id: project.id }, query);
  }
}
