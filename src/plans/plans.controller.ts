import { Body, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { CachedRead } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreatePlanDto, UpdatePlanDto } from './dto/plan.dto.js';
import { PlanResponse } from './dto/plan.response.js';
import { PlanEntity } from './plan.entity.js';
import { PlansService } from './plans.service.js';

const CODE_TAKEN = {
  status: 409,
  description: 'Another plan of the project has this code',
  field: 'code',
  message: 'The code "pro" is already taken by another plan of this project.',
};

@ProjectController('plans')
export class PlansController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly plans: PlansService,
  ) {}

  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's plans",
    description: 'Oldest first; cached per API key, invalidated by every write to the project.',
  })
  @ApiCursorList(PlanResponse, 50)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<PlanEntity>> {
    return this.plans.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Post()
  @ApiOperation({
    summary: 'Create a plan',
    description:
      'Entitlements: at most 100 codes, each a boolean, an integer 0–2147483647 or a string of at most 200 characters (422 naming the code at fault). Sends plan.created.',
  })
  @ApiEnvelope(PlanResponse, { status: 201 })
  @ApiBodyErrors(FORBIDDEN.write, CODE_TAKEN)
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreatePlanDto,
  ) {
    return this.plans.create(await this.projects.findAccessible(principal, projectId, { write: true }), body);
  }

  @Get(':plan')
  @CachedRead()
  @ApiOperation({ summary: 'Get a plan' })
  @ApiIdParam('plan', 'Plan id')
  @ApiEnvelope(PlanResponse)
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('plan', IdPipe) id: number,
  ) {
    return this.plans.get(await this.projects.findAccessible(principal, projectId), id);
  }

  @Patch(':plan')
  @ApiOperation({
    summary: 'Update a plan (only the fields sent)',
    description:
      'entitlements, when sent, replaces the whole object. Licenses on the plan answer with the new entitlements and limits from the next runtime call, on every instance. Sends plan.updated.',
  })
  @ApiIdParam('plan', 'Plan id')
  @ApiEnvelope(PlanResponse)
  @ApiBodyErrors(FORBIDDEN.write, CODE_TAKEN)
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('plan', IdPipe) id: number,
    @Body() body: UpdatePlanDto,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.plans.update(project, await this.plans.get(project, id), body);
  }

  @Delete(':plan')
  @ApiOperation({
    summary: 'Delete a plan',
    description: 'Refused while licenses are on it. Sends plan.deleted.',
  })
  @ApiIdParam('plan', 'Plan id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write, {
    status: 409,
    description: 'Licenses are on the plan',
    message: 'The plan cannot be deleted: 2 licenses are on it.',
  })
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('plan', IdPipe) id: number,
  ): Promise<null> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    await this.plans.remove(project, await this.plans.get(project, id));
    return null;
  }
}
