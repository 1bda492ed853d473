import { Body, Delete, Get, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CachedRead } from '../common/cache/read-cache.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { DomainEntity } from './domain.entity.js';
import { DomainsService } from './domains.service.js';
import { CreateDomainDto, UpdateDomainDto } from './dto/domain.dto.js';
import { DomainResponse } from './dto/domain.response.js';

@ProjectController('domains')
export class DomainsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
  ) {}

  /** A cursor list, per_page default 50, max 50. */
  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's domains",
    description: 'Oldest first; cached per API key, invalidated by every write to the project.',
  })
  @ApiCursorList(DomainResponse, 50)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<DomainEntity>> {
    return this.domains.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Post()
  @ApiOperation({
    summary: 'Add a domain',
    description:
      'The domain is lowercased, its trailing dot dropped, IDN turned to punycode; a scheme, port, path, IP or wildcard is a 422. Setting is_primary clears it on the other domains.',
  })
  @ApiEnvelope(DomainResponse, { status: 201 })
  @ApiBodyErrors(FORBIDDEN.write)
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreateDomainDto,
  ) {
    return this.domains.create(
      await this.projects.findAccessible(principal, projectId, { write: true }),
      body,
    );
  }

  @Get(':domain')
  @ApiOperation({ summary: 'Get a domain' })
  @ApiIdParam('domain', 'Domain id')
  @ApiEnvelope(DomainResponse)
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('domain', IdPipe) id: number,
  ) {
    return this.domains.get(await this.projects.findAccessible(principal, projectId), id);
  }

  @Patch(':domain')
  @ApiOperation({ summary: 'Update a domain (only the fields sent)' })
  @ApiIdParam('domain', 'Domain id')
  @ApiEnvelope(DomainResponse)
  @ApiBodyErrors(FORBIDDEN.write)
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
  @ApiOperation({
    summary: 'Replace a domain',
    description: 'domain is required; omitted optional fields return to their defaults.',
  })
  @ApiIdParam('domain', 'Domain id')
  @ApiEnvelope(DomainResponse)
  @ApiBodyErrors(FORBIDDEN.write)
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
  @ApiOperation({
    summary: 'Delete a domain',
    description:
      "A domain that licenses are pinned to cannot be deleted (422 on `domain`, with the count). The licenses' activations of it are deleted with it (license.deactivated each), freeing their slots; so are those of the old name when a domain is renamed.",
  })
  @ApiIdParam('domain', 'Domain id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write, {
    status: 422,
    description: 'Licenses are pinned to the domain',
    field: 'domain',
    message: 'The domain cannot be deleted: 2 licenses are pinned to it.',
  })
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('domain', IdPipe) id: number,
  ): Promise<null> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    await this.domains.remove(project, await this.domains.get(project, id));
    return null;
  }
}
