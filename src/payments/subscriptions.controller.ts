import { Get, Param, Query } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { CachedRead } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import { ApiCursorList, ApiEnvelope, ApiErrors, ApiIdParam } from '../common/openapi/decorators.js';
import { CursorPage } from '../database/pagination.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { SubscriptionListQueryDto } from './dto/subscription-list-query.dto.js';
import { SubscriptionDetailResponse, SubscriptionResponse } from './dto/subscription.response.js';
import { SubscriptionItem, SubscriptionsService } from './subscriptions.service.js';

/** What the providers sold (docs/payments.md#subscriptions): read-only, the access rules of licenses. */
@ProjectController('subscriptions')
export class SubscriptionsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly subscriptions: SubscriptionsService,
  ) {}

  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's subscriptions",
    description:
      'One row per purchase, newest first, narrowed by `status`, `customer_id` and `connector_id`; written by the payment connectors only (other methods → 405).',
  })
  @ApiCursorList(SubscriptionResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: SubscriptionListQueryDto,
  ): Promise<CursorPage<SubscriptionItem>> {
    return this.subscriptions.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Get(':subscription')
  @CachedRead()
  @ApiOperation({
    summary: 'Get a subscription with its event history',
    description: "With the connector's events of this purchase, latest first, at most 50.",
  })
  @ApiIdParam('subscription', 'Subscription id')
  @ApiEnvelope(SubscriptionDetailResponse)
  @ApiErrors({
    status: 404,
    description:
      'Project or subscription not found, or the subscription is not in the project (checked before any 403)',
  })
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('subscription', IdPipe) id: number,
  ) {
    const { subscription } = await this.subscriptions.findAccessible(principal, projectId, id);
    return this.subscriptions.detail(subscription);
  }
}
