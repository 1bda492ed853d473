import { Body, Controller, Delete, Get, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/id.pipe.js';
import { CachedRead } from '../common/read-cache.js';
import { CursorPage, CursorQueryDto } from '../common/pagination.js';
import { ProjectsService } from '../projects/projects.service.js';
import { DomainEntity } from './domain.entity.js';
import { DomainsService } from './domains.service.js';
import { CreateDomainDto, UpdateDomainDto } from './dto/domain.dto.js';

@ApiTags('domains')
@ApiKeyAuth()
@Controller('project/:project/domains')
export class DomainsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
  ) {}

  /** Seed 4.9: cursor list, per_page default 50, max 50. */
  @Get()
  @CachedRead()
  @ApiOkResponse({ description: '{data: [domain], next_cursor}' })
  async list(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Query() query: CursorQueryDto): Promise<CursorPage<DomainEntity>> {
    return this.domains.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Post()
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Body() body: CreateDomainDto) {
    return this.domains.create(await this.projects.findAccessible(principal, projectId, { write: true }), body);
  }

  @Get(':domain')
  async get(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('domain', IdPipe) id: number) {
    return this.domains.get(await this.projects.findAccessible(principal, projectId), id);
  }

  @Patch(':domain')
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('domain', IdPipe) id: number,
    @Body() body: UpdateDomainDto,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.domains.update(project, await this.domains.get(project, id), body, false);
  }

  @Put(':domain')
  async put(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('domain', IdPipe) id: number,
    @Body() body: CreateDomainDto,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.domains.update(project, await this.domains.get(project, id), body, true);
  }

  @Delete(':domain')
  async remove(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('domain', IdPipe) id: number): Promise<null> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    await this.domains.remove(project, await this.domains.get(project, id));
    return null;
  }
}
