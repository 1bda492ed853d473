import { Body, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOperation } from '@nestjs/swagger';
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
import { CursorPage } from '../database/pagination.js';
import { CachedRead } from '../common/cache/read-cache.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreateLicenseDto, UpdateLicenseDto } from './dto/license.dto.js';
import { LicenseListQueryDto } from './dto/license-list-query.dto.js';
import { LicenseMeterResponse, LicenseResponse, LicenseUsageResponse } from './dto/license.response.js';
import { LicenseEntity } from './license.entity.js';
import { LicensesService } from './licenses.service.js';

@ApiExtraModels(LicenseMeterResponse)
@ProjectController('licenses')
export class LicensesController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly licenses: LicensesService,
  ) {}

  /** Latest first, per_page default 20, max 50. */
  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's licenses",
    description:
      'Latest first, narrowed by `q` (key prefix or title), `status` and `customer_id`; cached per API key, invalidated by every write to the project.',
  })
  @ApiCursorList(LicenseResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: LicenseListQueryDto,
  ): Promise<CursorPage<LicenseEntity>> {
    const page = await this.licenses.list(await this.projects.findAccessible(principal, projectId), query);
    await this.licenses.withPlans(page.data);
    return page;
  }

  /** The key to share is the answer's `uuid`. */
  @Post()
  @ApiOperation({ summary: 'Create a license', description: "The key to share is the answer's `uuid`." })
  @ApiEnvelope(LicenseResponse, { status: 201, description: 'The new license' })
  @ApiBodyErrors({
    ...FORBIDDEN.write,
    description:
      'Invalid, revoked or expired key; no access to the project; the project is locked; or the plan does not allow creating licenses',
  })
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreateLicenseDto,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.licenses.create(project, principal.user, body);
  }

  @Get(':license')
  @CachedRead()
  @ApiOperation({
    summary: 'Get a license',
    description: 'Cached per API key, invalidated by every write to the project.',
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseResponse)
  @ApiErrors({
    status: 404,
    description:
      'Project or license not found, or the license is not in the project (checked before any 403)',
  })
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
  ) {
    return this.licenses.withPlans((await this.licenses.findAccessible(principal, projectId, id)).license);
  }

  @Patch(':license')
  @ApiOperation({ summary: 'Update a license (only the fields sent)' })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseResponse)
  @ApiBodyErrors(FORBIDDEN.write)
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
    @Body() body: UpdateLicenseDto,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.licenses.update(project, principal.user, license, body, false);
  }

  @Put(':license')
  @ApiOperation({
    summary: 'Replace a license',
    description: 'title is required; omitted optional fields return to their defaults.',
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseResponse)
  @ApiBodyErrors(FORBIDDEN.write)
  async put(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
    @Body() body: CreateLicenseDto,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.licenses.update(project, principal.user, license, body, true);
  }

  @Delete(':license')
  @ApiOperation({ summary: 'Delete a license' })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write)
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
  ): Promise<null> {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, {
      write: true,
    });
    await this.licenses.remove(project, license);
    return null;
  }

  @Post(':license/revoke')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Revoke a license',
    description: 'Sets revoked_at; runtime calls with it get 403 from then on.',
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseResponse)
  @ApiErrors(FORBIDDEN.write)
  async revoke(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.licenses.setRevoked(project, license, true);
  }

  @Post(':license/reactivate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Reactivate a license', description: 'Clears revoked_at.' })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseResponse)
  @ApiErrors(FORBIDDEN.write)
  async reactivate(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
  ) {
    const { project, license } = await this.licenses.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.licenses.setRevoked(project, license, false);
  }

  /** Today's count, the last 30 days and the activated domains and subdomains. */
  @Get(':license/usage')
  @ApiOperation({
    summary: "A license's usage",
    description:
      "Today's count, the last 30 UTC days, the activated domains and subdomains, and the meters (`meter.*` entitlements) this UTC month.",
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(LicenseUsageResponse)
  async usage(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('license', IdPipe) id: number,
  ) {
    return this.licenses.usageReport((await this.licenses.findAccessible(principal, projectId, id)).license);
  }
}
