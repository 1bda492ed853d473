import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Put,
  Query,
  UseGuards,
} from '@nestjs/common';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { instanceToPlain } from 'class-transformer';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { requireGlobalKey } from '../auth/auth.service.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CachedRead, ProjectResource } from '../common/cache/read-cache.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { CreateProjectDto, LockProjectDto, UpdateProjectDto } from './dto/project.dto.js';
import { ProjectCreatedResponse, ProjectResponse, SigningKeyResponse } from './dto/project.response.js';
import { ProjectCreateGuard } from './project-create.guard.js';
import { ProjectEntity } from './project.entity.js';
import { ProjectsService } from './projects.service.js';

@ApiTags('projects')
@ApiKeyAuth()
@ApiErrors(500, DATABASE_AWAY)
@ProjectResource()
@Controller('project')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  /** The create answer lists the project without `locked_at` (docs/decisions.md#projects). */
  @Post()
  @UseGuards(ProjectCreateGuard)
  @ApiOperation({
    summary: 'Create a project',
    description:
      'Global key only. The plan limit is checked before validation (403). The slug is generated from the name when omitted.',
  })
  @ApiEnvelope(ProjectCreatedResponse, { status: 201, description: 'The project (without locked_at)' })
  @ApiBodyErrors({
    ...FORBIDDEN.global,
    description:
      "Invalid, revoked or expired key; a project-scoped key (creating projects needs a global key); or the plan's project limit is reached (checked before validation)",
  })
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Body() body: CreateProjectDto) {
    const project = instanceToPlain(await this.projects.create(principal, body));
    delete project.locked_at;
    return project;
  }

  @Get()
  @ApiOperation({
    summary: "List the caller's projects",
    description: 'Latest first; a project-scoped key sees its one project.',
  })
  @ApiCursorList(ProjectResponse, 20)
  list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<ProjectEntity>> {
    return this.projects.list(principal, query);
  }

  @Get(':project')
  @CachedRead()
  @ApiOperation({
    summary: 'Get a project',
    description: 'Cached per API key; every write to the project invalidates it.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(ProjectResponse, { description: 'The project, including locked_at' })
  @ApiErrors(404)
  get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
  ): Promise<ProjectEntity> {
    return this.projects.findAccessible(principal, id);
  }

  @Patch(':project')
  @ApiOperation({ summary: 'Update a project (only the fields sent)' })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(ProjectResponse)
  @ApiBodyErrors(404, FORBIDDEN.write)
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
    @Body() body: UpdateProjectDto,
  ) {
    return this.projects.update(
      await this.projects.findAccessible(principal, id, { write: true }),
      body,
      false,
    );
  }

  @Put(':project')
  @ApiOperation({
    summary: 'Replace a project',
    description:
      'name is required; omitted optional fields return to their defaults; the slug is kept when omitted.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(ProjectResponse)
  @ApiBodyErrors(404, FORBIDDEN.write)
  async put(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
    @Body() body: CreateProjectDto,
  ) {
    return this.projects.update(
      await this.projects.findAccessible(principal, id, { write: true }),
      body,
      true,
    );
  }

  @Delete(':project')
  @ApiOperation({
    summary: 'Delete a project (soft)',
    description:
      'Global key only. Afterwards the project is 404 everywhere and its licenses and scoped keys are refused.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(404, FORBIDDEN.globalWrite)
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
  ): Promise<null> {
    requireGlobalKey(principal);
    await this.projects.remove(await this.projects.findAccessible(principal, id, { write: true }));
    return null;
  }

  @Post(':project/lock')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Lock a project',
    description:
      'Global key only. While locked, runtime calls get 403 "Project is locked." and every write on the project gets 403; reads work.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiBody({ type: LockProjectDto, required: false })
  @ApiEnvelope(ProjectResponse, { description: 'The project, with locked_at set' })
  @ApiBodyErrors(404, FORBIDDEN.global)
  async lock(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) id: number,
    @Body() body: LockProjectDto,
  ) {
    requireGlobalKey(principal);
    return this.projects.setLock(await this.projects.findAccessible(principal, id), true, body.reason);
  }

  @Post(':project/unlock')
  @HttpCode(200)
  @ApiOperation({ summary: 'Unlock a project', description: 'Global key only.' })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(ProjectResponse, { description: 'The project, with locked_at null' })
  @ApiErrors(404, FORBIDDEN.global)
  async unlock(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number) {
    requireGlobalKey(principal);
    return this.projects.setLock(await this.projects.findAccessible(principal, id), false);
  }

  @Get(':project/signing-key')
  @ApiOperation({
    summary: "The project's injectable signing key",
    description: 'Verifies the Ed25519 signature of every injectable.',
  })
  @ApiIdParam('project', 'Project id')
  @ApiEnvelope(SigningKeyResponse)
  @ApiErrors(404)
  async signingKey(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number) {
    return this.projects.signingKey(await this.projects.findAccessible(principal, id));
  }
}
