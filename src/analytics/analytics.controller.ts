import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { requireGlobalKey } from '../auth/auth.service.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { ProjectResource } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { ProjectsService } from '../projects/projects.service.js';
import { AnalyticsService } from './analytics.service.js';
import { AnalyticsQueryDto } from './dto/analytics-query.dto.js';
import { AnalyticsResponse } from './dto/analytics.response.js';

const RANGE =
  'Buckets are UTC hours or days; `from` and `to` name the first and the last (inclusive), default the last 7 days by day. ' +
  'At most 31 days by hour, 366 by day (422 on the field beyond). Every bucket has a point, zeros included; `totals` counts every answer ' +
  'of the range by outcome. Answers are written within 10 s of being given (docs/analytics.md).';

/** What the gate answered: the runtime answers counted by bucket and key (docs/analytics.md). Never cached. */
@ApiTags('analytics')
@ApiKeyAuth()
@ApiErrors(500, DATABASE_AWAY)
@ProjectResource()
@Controller()
export class AnalyticsController {
  constructor(
    private readonly analytics: AnalyticsService,
    private readonly projects: ProjectsService,
  ) {}

  @Get('analytics')
  @ApiOperation({
    summary: "The runtime answers of all the account's projects",
    description: `Global key only. group_by=project gives one series per project. ${RANGE}`,
  })
  @ApiEnvelope(AnalyticsResponse)
  @ApiErrors(FORBIDDEN.global, {
    status: 422,
    description:
      'A bad date, from after to, a range too long for its granularity, an unknown granularity or group_by',
    field: 'to',
    message:
      'The range from 2026-01-01T00:00:00Z to 2026-02-01T01:00:00Z spans 745 hours; at most 31 days (744 hours) by hour: narrow it or use granularity=day.',
  })
  account(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Query() query: AnalyticsQueryDto,
  ): Promise<AnalyticsResponse> {
    requireGlobalKey(principal);
    return this.analytics.read({ owner_id: principal.user.id }, query);
  }

  @Get('project/:project/analytics')
  @ApiOperation({
    summary: 'The runtime answers of a project',
    description: `Paid, unpaid and refused answers of has-paid, the stream and self-service deactivation, by outcome, refusal reason, registered domain, country or license. ${RANGE}`,
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(AnalyticsResponse)
  @ApiErrors(404, {
    status: 422,
    description:
      'A bad date, from after to, a range too long for its granularity, an unknown granularity or group_by, group_by=project, or group_by=license by hour',
    field: 'granularity',
    message: 'Licenses are counted by UTC day: group_by=license takes granularity=day.',
  })
  async project(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: AnalyticsQueryDto,
  ): Promise<AnalyticsResponse> {
    const project = await this.projects.findAccessible(principal, projectId);
    return this.analytics.read({ project_id: project.id }, query);
  }
}
