import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/id.pipe.js';
import { CursorPage, CursorQueryDto } from '../common/pagination.js';
import { CachedRead } from '../common/read-cache.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreateLicenseDto, UpdateLicenseDto } from './dto/license.dto.js';
import { LicenseEntity } from './license.entity.js';
import { LicensesService } from './licenses.service.js';

@ApiTags('licenses')
@ApiKeyAuth()
@Controller('project/:project/licenses')
export class LicensesController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly licenses: LicensesService,
  ) {}

  /** Seed 4.6: latest first, per_page default 20, max 50. */
  @Get()
  @CachedRead()
  @ApiOkResponse({ description: '{data: [license], next_cursor}' })
  async list(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Query() query: CursorQueryDto): Promise<CursorPage<LicenseEntity>> {
    return this.licenses.list(await this.projects.findAccessible(principal, projectId), query);
  }

  /** Seed 4.8: the key to share is the answer's `uuid`. */
  @Post()
  @ApiCreatedResponse({ description: 'The new license' })
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Body() body: CreateLicenseDto) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.licenses.create(project, principal.user, body);
  }

  /** Seed 4.7. */
  @Get(':license')
  @CachedRead()
  @ApiNotFoundResponse({ description: 'License not found or not in the project' })
  async get(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('license', IdPipe) id: number) {
    return (await this.licenses.findAccessible(principal, projectId, id)).license;
  }

  @Patch(':license')
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
    @Body() body: UpdateLicenseDto,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, { write: true });
    return this.licenses.update(project, principal.user, license, body, false);
  }

  @Put(':license')
  async put(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
    @Body() body: CreateLicenseDto,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, { write: true });
    return this.licenses.update(project, principal.user, license, body, true);
  }

  @Delete(':license')
  async remove(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('license', IdPipe) id: number): Promise<null> {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, { write: true });
    await this.licenses.remove(project, license);
    return null;
  }

  @Post(':license/revoke')
  @HttpCode(200)
  async revoke(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('license', IdPipe) id: number) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, { write: true });
    return this.licenses.setRevoked(project, license, true);
  }

  @Post(':license/reactivate')
  @HttpCode(200)
  async reactivate(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('license', IdPipe) id: number) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, { write: true });
    return this.licenses.setRevoked(project, license, false);
  }

  /** SPEC 6: today's count, the last 30 days and the activated domains and subdomains. */
  @Get(':license/usage')
  async usage(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('license', IdPipe) id: number) {
    return this.licenses.usageReport((await this.licenses.findAccessible(principal, projectId, id)).license);
  }
}
