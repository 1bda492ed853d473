import { applyDecorators, Controller } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ProjectResource } from '../common/cache/read-cache.js';
import { ApiErrors, ApiIdParam, DATABASE_AWAY } from '../common/openapi/decorators.js';

/**
 * A controller under /project/{project}/`path`: API key or session auth, the read cache, the
 * project id and the errors every such route shares. `tag` groups it in the OpenAPI document.
 */
export const ProjectController = (path: string, tag: string = path) =>
  // Listed in the order stacked decorators are applied (bottom first): the read-cache interceptor
  // stays outside the audit-context one, as it was when each controller stacked them itself.
  applyDecorators(
    Controller(`project/:project/${path}`),
    ProjectResource(),
    ApiErrors(404, 500, DATABASE_AWAY),
    ApiIdParam('project', 'Project id'),
    ApiKeyAuth(),
    ApiTags(tag),
  );
