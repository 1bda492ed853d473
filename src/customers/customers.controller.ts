import { Body, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
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
import { CursorPage } from '../database/pagination.js';
import { ProjectController } from '../projects/project-controller.js';
import { ProjectsService } from '../projects/projects.service.js';
import { CustomerListQueryDto } from './dto/customer-list-query.dto.js';
import { CreateCustomerDto, UpdateCustomerDto } from './dto/customer.dto.js';
import { CustomerDetailResponse, CustomerResponse } from './dto/customer.response.js';
import { customerHasLicenses, CustomersService, CustomerView } from './customers.service.js';

const NOT_IN_PROJECT = {
  status: 404,
  description:
    'Project or customer not found, or the customer is not in the project (checked before any 403)',
};

/** The buyers of a project (docs/payments.md#customers): the access rules of licenses. */
@ProjectController('customers')
export class CustomersController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly customers: CustomersService,
  ) {}

  @Get()
  @CachedRead()
  @ApiOperation({
    summary: "List a project's customers",
    description:
      'Newest first, narrowed by `email` (exact, any case) and `q` (prefix of the email or the name); cached per API key, invalidated by every write to the project.',
  })
  @ApiCursorList(CustomerResponse, 20)
  async list(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Query() query: CustomerListQueryDto,
  ): Promise<CursorPage<CustomerView>> {
    return this.customers.list(await this.projects.findAccessible(principal, projectId), query);
  }

  @Post()
  @ApiOperation({
    summary: 'Create a customer',
    description: 'The payment connectors also create customers from their events.',
  })
  @ApiEnvelope(CustomerResponse, { status: 201, description: 'The new customer' })
  @ApiBodyErrors(FORBIDDEN.write)
  async create(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Body() body: CreateCustomerDto,
  ) {
    const project = await this.projects.findAccessible(principal, projectId, { write: true });
    return this.customers.create(project, body);
  }

  @Get(':customer')
  @CachedRead()
  @ApiOperation({
    summary: 'Get a customer with their licenses and subscriptions',
    description: 'With their newest licenses and subscriptions, at most 50 of each.',
  })
  @ApiIdParam('customer', 'Customer id')
  @ApiEnvelope(CustomerDetailResponse)
  @ApiErrors(NOT_IN_PROJECT)
  async get(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('customer', IdPipe) id: number,
  ) {
    return this.customers.detail((await this.customers.findAccessible(principal, projectId, id)).customer);
  }

  @Patch(':customer')
  @ApiOperation({ summary: 'Update a customer (only the fields sent)' })
  @ApiIdParam('customer', 'Customer id')
  @ApiEnvelope(CustomerResponse)
  @ApiBodyErrors(FORBIDDEN.write, NOT_IN_PROJECT)
  async patch(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('customer', IdPipe) id: number,
    @Body() body: UpdateCustomerDto,
  ) {
    const { project, customer } = await this.customers.findAccessible(principal, projectId, id, {
      write: true,
    });
    return this.customers.update(project, customer, body);
  }

  @Delete(':customer')
  @ApiOperation({
    summary: 'Delete a customer',
    description:
      'Refused (409) while licenses name the customer. Their subscriptions stay, with customer_id null.',
  })
  @ApiIdParam('customer', 'Customer id')
  @ApiEnvelope(null, { description: 'Deleted; data is null' })
  @ApiErrors(FORBIDDEN.write, NOT_IN_PROJECT, {
    status: 409,
    description: 'Licenses name the customer',
    message: customerHasLicenses(2),
  })
  async remove(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('project', IdPipe) projectId: number,
    @Param('customer', IdPipe) id: number,
  ): Promise<null> {
    const { project, customer } = await this.customers.findAccessible(principal, projectId, id, {
      write: true,
    });
    await this.customers.remove(project, customer);
    return null;
  }
}
