import { Body, Delete, Get, Param, Post, Put, Query, UploadedFile, UseInterceptors } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodies,
  ApiBodyErrors,
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { UploadInterceptor } from '../common/http/upload.interceptor.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import {
  CreateInjectableDto,
  CreateInjectableJsonBody,
  CreateInjectableMultipartBody,
  UpdateInjectableDto,
  UpdateInjectableJsonBody,
  UpdateInjectableMultipartBody,
} from './dto/injectable.dto.js';
import { InjectableListItemResponse, InjectableResponse } from './dto/injectable.response.js';
import { InjectableListItem, InjectablesService, UploadedPayload } from './injectables.service.js';

@ProjectController('injectables')
export class InjectablesController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly injectables: InjectablesService,
  ) {}

  @Get()
  @ApiOperation({
    summary: "List a project's injectables",
    description:
      'Latest first. Items carry no payload (no `content` or `encrypted_content`): read one injectable for it.',
  })
  @ApiCursorList(InjectableListItemResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<InjectableListItem>> {
    return this.injectables.list(await this.projects.findAccessible(principal, projectId), query);
  }

  /** multipart/form-data (with `file`) or JSON. */
  @Post()
  @UseInterceptors(UploadInterceptor('file'))
  @ApiBodies({
    'application/json': CreateInjectableJsonBody,
    'multipart/form-data': CreateInjectableMultipartBody,
  })
  @ApiOperation({
    summary: 'Create an injectable',
    description:
      'multipart/form-data (the payload as the `file` field, other fields as text) or JSON (`content`). ' +
      'The payload is encrypted with `secret`, which is never stored, and signed with the project signing key.',
  })
  @ApiEnvelope(InjectableResponse, { status: 201 })
  @ApiBodyErrors(
    FORBIDDEN.write,
    {
      status: 400,
      description:
        'Malformed JSON, a JSON body that is not an object, or a multipart file in a field other than `file`',
    },
    { status: 413, description: 'The body or the upload is larger than MAX_UPLOAD_BYTES' },
    { status: 415, description: 'Send multipart/form-data or application/json' },
  )
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreateInjectableDto,
    @UploadedFile() file?: UploadedPayload,
  ) {
    return this.injectables.create(
      await this.projects.findAccessible(principal, projectId, { write: true }),
      body,
      file,
    );
  }

  @Get(':injectable')
  @ApiOperation({ summary: 'Get an injectable' })
  @ApiIdParam('injectable', 'Injectable id')
  @ApiEnvelope(InjectableResponse)
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('injectable', IdPipe) id: number,
  ) {
    return this.injectables.get(await this.projects.findAccessible(principal, projectId), id);
  }

  /** Only supplied fields are updated. */
  @Put(':injectable')
  @UseInterceptors(UploadInterceptor('file'))
  @ApiBodies({
    'application/json': UpdateInjectableJsonBody,
    'multipart/form-data': UpdateInjectableMultipartBody,
  })
  @ApiOperation({
    operationId: 'updateInjectable',
    summary: 'Update an injectable (only the fields sent)',
    description:
      'multipart/form-data or JSON, like create; new content, a file or a switch to type file needs `secret`.',
  })
  @ApiIdParam('injectable', 'Injectable id')
  @ApiEnvelope(InjectableResponse)
  @ApiBodyErrors(
    FORBIDDEN.write,
    {
      status: 400,
      description:
        'Malformed JSON, a JSON body that is not an object, or a multipart file in a field other than `file`',
    },
    { status: 413, description: 'The body or the upload is larger than MAX_UPLOAD_BYTES' },
    { status: 415, description: 'Send multipart/form-data or application/json' },
  )
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

  /** Permanent. */
  @Delete(':injectable')
  @ApiOperation({ summary: 'Delete an injectable (permanently)' })
  @ApiIdParam('injectable', 'Injectable id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write)
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('injectable', IdPipe) id: number,
  ): Promise<null> {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    await this.injectables.remove(project, await this.injectables.get(project, id));
    return null;
  }
}
