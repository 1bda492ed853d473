import { Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { ApiError, notFound } from '../common/http/errors.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  FORBIDDEN,
  ApiIdParam,
} from '../common/openapi/decorators.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import { Clock } from '../common/time.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import {
  WebhookDeliveryResponse,
  WebhookDeliveryWithAttemptsResponse,
} from './dto/webhook-delivery.response.js';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookOutbox } from './webhook-outbox.service.js';

const BEING_ATTEMPTED = 'The delivery is being attempted right now; try again in a moment.';

@ProjectController('webhook-deliveries', 'webhooks')
export class WebhooksController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
    private readonly outbox: WebhookOutbox,
    private readonly clock: Clock,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    @InjectRepository(WebhookAttemptEntity) private readonly attempts: Repository<WebhookAttemptEntity>,
  ) {}

  /** Latest first, each with its log of attempts. */
  @Get()
  @ApiOperation({
    summary: "List a project's webhook deliveries",
    description: 'The outbox, latest first, each delivery with every attempt.',
  })
  @ApiCursorList(WebhookDeliveryWithAttemptsResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<WebhookDeliveryEntity>> {
    const project = await this.projects.findAccessible(principal, projectId);
    const qb = this.deliveries
      .createQueryBuilder('d')
      .where('d.project_id = :project', { project: project.id });
    const page = await this.cursors.page(qb, `webhook-deliveries:${project.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
    });
    const ids = page.data.map((d) => d.id);
    const log = ids.length
      ? await this.attempts.find({ where: { delivery_id: In(ids) }, order: { id: 'ASC' } })
      : [];
    for (const delivery of page.data) delivery.attempt_log = log.filter((a) => a.delivery_id === delivery.id);
    return page;
  }

  /** Queues the delivery for an immediate new attempt, whatever its state. */
  @Post(':delivery/retry')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Retry a webhook delivery now',
    description: 'Queues a new attempt right away, whatever the state of the delivery.',
  })
  @ApiIdParam('delivery', 'Webhook delivery id')
  @ApiEnvelope(WebhookDeliveryResponse, { description: 'The delivery, pending again (without attempt_log)' })
  @ApiErrors(FORBIDDEN.write, {
    status: 409,
    description: 'The delivery is being attempted right now; try again in a moment',
    message: BEING_ATTEMPTED,
  })
  async retry(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('delivery', IdPipe) id: number,
  ) {
    // A retry is a write: a locked project refuses it like every other (docs/security.md).
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    const delivery = await this.deliveries.findOneBy({ id, project_id: project.id });
    if (!delivery) throw notFound('Webhook delivery');
    const queued = await this.projectChanges.run(project, async (manager) => {
      const before = await manager.findOneByOrFail(WebhookDeliveryEntity, { id });
      const result = await manager
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({ status: 'pending', next_attempt_at: this.clock.now(), claimed_by: null, claimed_until: null })
        .where("id = :id AND status <> 'delivering'", { id })
        .execute();
      if (result.affected !== 1) throw new ApiError(409, BEING_ATTEMPTED);
      // Read before waking the dispatcher, so the answer is the queued state, not a race with it.
      const after = await manager.findOneByOrFail(WebhookDeliveryEntity, { id });
      return { result: after, audit: { action: 'webhook_delivery.retried', before, after } };
    });
    this.outbox.dispatchSoon(delivery.target_host);
    return queued;
  }
}
