import { Body, Controller, Delete, Get, Param, Post, Put, Query, Req, UploadedFile, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiConsumes, ApiOkResponse, ApiPayloadTooLargeResponse, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { LicensedRequest, LicenseKeyAuth } from '../auth/license-key.guard.js';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/id.pipe.js';
import { CursorPage, CursorQueryDto } from '../common/pagination.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CreateInjectableDto, UpdateInjectableDto } from './dto/injectable.dto.js';
import { InjectableEntity } from './injectable.entity.js';
import { InjectablesService, UploadedPayload } from './injectables.service.js';

@ApiTags('injectables')
@ApiKeyAuth()
@Controller('project/:project/injectables')
export class InjectablesController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly injectables: InjectablesService,
  ) {}

  @Get()
  async list(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Query() query: CursorQueryDto): Promise<CursorPage<InjectableEntity>> {
    return this.injectables.list(await this.projects.findAccessible(principal, projectId), query);
  }

  /** SPEC 8: multipart/form-data (with `file`) or JSON. */
  @Post()
  @UseInterceptors(FileInterceptor('file'))
  @ApiConsumes('multipart/form-data', 'application/json')
  @ApiPayloadTooLargeResponse({ description: 'The upload is larger than MAX_UPLOAD_BYTES' })
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreateInjectableDto,
    @UploadedFile() file?: UploadedPayload,
  ) {
    return this.injectables.create(await this.projects.findAccessible(principal, projectId, { write: true }), body, file);
  }

  @Get(':injectable')
  async get(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('injectable', IdPipe) id: number) {
    return this.injectables.get(await this.projects.findAccessible(principal, projectId), id);
  }

  /** Seed 4.11: only supplied fields are updated. */
  @Put(':injectable')
  @UseInterceptors(FileInterceptor('file'))
  @ApiConsumes('multipart/form-data', 'application/json')
  async update(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('injectable', IdPipe) id: number,
    @Body() body: UpdateInjectableDto,
    @UploadedFile() file?: UploadedPayload,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.injectables.update(project, await this.injectables.get(project, id), body, file);
  }

  /** Seed 4.12: permanent. */
  @Delete(':injectable')
  async remove(@CurrentPrincipal() principal: ApiPrincipal, @Param('project', IdPipe) projectId: number, @Param('injectable', IdPipe) id: number): Promise<null> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    await this.injectables.remove(project, await this.injectables.get(project, id));
    return null;
  }
}

/** Seed 4.10: runtime clients stream their project's injectables by license key. */
@ApiTags('injectables')
@Controller('injectable')
export class InjectableStreamController {
  constructor(private readonly injectables: InjectablesService) {}

  @Get('stream')
  @LicenseKeyAuth()
  @ApiOkResponse({ description: '{injectables: [{slug, type, mode, encrypted_content, file_path, target_path, signature, meta}], next_cursor, has_more}' })
  stream(@Req() req: LicensedRequest, @Query() query: CursorQueryDto) {
    const runtime = req.runtime as NonNullable<LicensedRequest['runtime']>;
    return this.injectables.stream(runtime.project, query);
  }
}
