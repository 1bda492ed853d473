import { Body, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import { ApiBody, ApiOperation } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiPrincipal, CurrentPrincipal } from '../auth/principal.js';
import { CachedRead } from '../common/cache/read-cache.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiCursorList,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { CursorPage, CursorQueryDto } from '../database/pagination.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import {
  CreatePaymentConnectorDto,
  SendTestEventDto,
  UpdatePaymentConnectorDto,
} from './dto/payment-connector.dto.js';
import {
  PaymentConnectorResponse,
  PaymentEventResponse,
  PaymentEventWithPayloadResponse,
  PaymentTestEventResponse,
} from './dto/payment-connector.response.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import { PaymentConnectorsService, PaymentEventItem } from './payment-connectors.service.js';
import { PaymentTestEvents, TestEventResult } from './payment-test-events.service.js';
import { deliveryOrigin } from './payment-webhooks.controller.js';

const NOT_IN_PROJECT = {
  status: 404,
  description:
    'Project or connector not found, or the connector is not in the project (checked before any 403)',
};

/** Payment connectors (docs/payments.md): the same access rules as licenses. */
@ProjectController('payment-connectors')
export class PaymentConnectorsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly connectors: PaymentConnectorsService,
    private readonly testEvents: PaymentTestEvents,
  ) {}

  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's payment connectors",
    description: 'Latest first; cached per API key, invalidated by every write to the project.',
  })
  @ApiCursorList(PaymentConnectorResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<PaymentConnectorEntity>> {
    return this.connectors.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Post()
  @ApiOperation({
    summary: 'Connect a payment provider',
    description:
      "The answer's endpoint_url is where the provider sends its events, signed with signing_secret (stored encrypted, never returned).",
  })
  @ApiEnvelope(PaymentConnectorResponse, { status: 201 })
  @ApiBodyErrors(FORBIDDEN.write)
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreatePaymentConnectorDto,
  ) {
    return this.connectors.create(
      await this.projects.findAccessible(principal, projectId, { write: true }),
      body,
    );
  }

  @Get(':connector')
  @CachedRead()
  @ApiOperation({ summary: 'Get a payment connector' })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiEnvelope(PaymentConnectorResponse)
  @ApiErrors(NOT_IN_PROJECT)
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
  ) {
    return (await this.connectors.findAccessible(principal, projectId, id)).connector;
  }

  @Patch(':connector')
  @ApiOperation({
    summary: 'Update a payment connector (only the fields sent)',
    description: 'The provider cannot change; a new signing_secret replaces the old one at once.',
  })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiEnvelope(PaymentConnectorResponse)
  @ApiBodyErrors(FORBIDDEN.write, NOT_IN_PROJECT)
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
    @Body() body: UpdatePaymentConnectorDto,
  ) {
    const { project, connector } = await this.connectors.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.connectors.update(project, connector, body);
  }

  @Delete(':connector')
  @ApiOperation({
    summary: 'Delete a payment connector',
    description: 'Its endpoint answers 404 from then on; its event log goes with it.',
  })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write, NOT_IN_PROJECT)
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
  ): Promise<null> {
    const { project, connector } = await this.connectors.findAccessible(principal, projectId, id, {
      write: true,
    });
    await this.connectors.remove(project, connector);
    return null;
  }

  @Get(':connector/events')
  @CachedRead()
  @ApiOperation({
    operationId: 'listPaymentConnectorEvents',
    summary: "A payment connector's accepted events",
    description: 'Latest first: what each event did, or why it changed nothing.',
  })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiCursorList(PaymentEventResponse, 20)
  @ApiErrors(NOT_IN_PROJECT)
  async events(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
    @Query() query: CursorQueryDto,
  ): Promise<CursorPage<PaymentEventItem>> {
    const { connector } = await this.connectors.findAccessible(principal, projectId, id);
    return this.connectors.eventLog(connector, query);
  }

  @Get(':connector/events/:event')
  @ApiOperation({
    operationId: 'getPaymentConnectorEvent',
    summary: 'One accepted event of a payment connector, with its payload',
    description:
      'The event as the event log lists it, plus `payload`: the body the provider sent, personal data redacted (docs/payments.md#the-event-log).',
  })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiIdParam('event', 'Payment event id (from the event log)')
  @ApiEnvelope(PaymentEventWithPayloadResponse)
  @ApiErrors(NOT_IN_PROJECT)
  async event(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
    @Param('event', IdPipe) eventId: number,
  ): Promise<PaymentEventItem & { payload: Record<string, unknown> | null }> {
    const { connector } = await this.connectors.findAccessible(principal, projectId, id);
    return this.connectors.event(connector, eventId);
  }

  @Post(':connector/test-event')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'sendPaymentConnectorTestEvent',
    summary: 'Send a test event through a payment connector',
    description:
      'An example event of the connector\'s provider, signed with the connector\'s signing_secret as the provider signs and received as the connector\'s endpoint receives a delivery: it is in the event log like any other. Without a body (or with `{"event": "nothing"}`) it is of a type that moves nothing (outcome `ignored`) and changes no paid state. With `{"event": "payment"}` it is the provider\'s own paying event in test mode, for `license_id`, `domain_id` or (neither) the project, applied exactly as a real payment: it marks its target paid, with the payment as the audit actor (undo: mark it unpaid). A target not of the project is 404. A refusal of the endpoint (404 while the connector is paused) is in http_status, not this call\'s status.',
  })
  @ApiIdParam('connector', 'Payment connector id')
  @ApiEnvelope(PaymentTestEventResponse, {
    description: "What the connector's endpoint answered, and what the event log says of the event",
  })
  @ApiBody({ type: SendTestEventDto, required: false })
  @ApiBodyErrors(FORBIDDEN.write, NOT_IN_PROJECT)
  async testEvent(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('connector', IdPipe) id: number,
    @Body() body: SendTestEventDto,
    @Req() req: Request & { id?: string },
  ): Promise<TestEventResult> {
    const { connector } = await this.connectors.findAccessible(principal, projectId, id, { write: true });
    return this.testEvents.send(connector, deliveryOrigin(req), body);
  }
}
