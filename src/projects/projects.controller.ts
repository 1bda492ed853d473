import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, UseGuards } from '@nestjs/common';
import { ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { instanceToPlain } from 'class-transformer';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { requireGlobalKey } from '../auth/auth.service.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/id.pipe.js';
import { CachedRead } from '../common/read-cache.js';
import { CursorPage, CursorQueryDto } from '../common/pagination.js';
import { CreateProjectDto, LockProjectDto, UpdateProjectDto } from './dto/project.dto.js';
import { ProjectCreateGuard } from './project-create.guard.js';
import { ProjectEntity } from './project.entity.js';
import { ProjectsService } from './projects.service.js';

@ApiTags('projects')
@ApiKeyAuth()
@Controller('project')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  /** Seed 4.4. The create answer lists the seed's fields, which do not include `locked_at`. */
  @Post()
  @UseGuards(ProjectCreateGuard)
  @ApiCreatedResponse({ description: 'The project' })
  @ApiUnprocessableEntityResponse({ description: 'Validation failed; `errors` holds field details' })
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Body() body: CreateProjectDto) {
    const project = instanceToPlain(await this.projects.create(principal, body));
    delete project.locked_at;
    return project;
  }

  @Get()
  list(@CurrentPrincipal() principal: ApiPrincipal, @Query() query: CursorQueryDto): Promise<CursorPage<ProjectEntity>> {
    return this.projects.list(principal, query);
  }

  /** Seed 4.5. */
  @Get(':project')
  @CachedRead()
  @ApiOkResponse({ description: 'The project, including locked_at' })
  @ApiNotFoundResponse({ description: 'Project not found' })
  get(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number): Promise<ProjectEntity> {
    return this.projects.findAccessible(principal, id);
  }

  @Patch(':project')
  async patch(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number, @Body() body: UpdateProjectDto) {
    return this.projects.update(await this.projects.findAccessible(principal, id, { write: true }), body, false);
  }

  @Put(':project')
  async put(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number, @Body() body: CreateProjectDto) {
    return this.projects.update(await this.projects.findAccessible(principal, id, { write: true }), body, true);
  }

  @Delete(':project')
  async remove(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number): Promise<null> {
    requireGlobalKey(principal);
    await this.projects.remove(await this.projects.findAccessible(principal, id, { write: true }));
    return null;
  }

  @Post(':project/lock')
  @HttpCode(200)
  async lock(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number, @Body() body: LockProjectDto) {
    requireGlobalKey(principal);
    return this.projects.setLock(await this.projects.findAccessible(principal, id), true, body.reason);
  }

  @Post(':project/unlock')
  @HttpCode(200)
  async unlock(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number) {
    requireGlobalKey(principal);
    return this.projects.setLock(await this.projects.findAccessible(principal, id), false);
  }

  @Get(':project/signing-key')
  async signingKey(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) id: number) {
    return this.projects.signingKey(await this.projects.findAccessible(principal, id));
  }
}
