import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, In, Repository } from 'typeorm';
import type { ApiPrincipal } from '../auth/principal.js';
import { ApiError, fieldError, notFound } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { CursorPage, Cursors } from '../database/pagination.js';
import { lockedRow } from '../database/unit-of-work.js';
import { LicenseEntity } from '../licenses/license.entity.js';
import { SubscriptionEntity } from '../payments/subscription.entity.js';
import { SubscriptionItem, toSubscriptionItem } from '../payments/subscriptions.service.js';
import { effectiveEntitlements } from '../plans/entitlements.js';
import { PlansService } from '../plans/plans.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { assertAccess, ProjectsService } from '../projects/projects.service.js';
import { CreateCustomerDto, UpdateCustomerDto } from './dto/customer.dto.js';
import { CustomerListQueryDto } from './dto/customer-list-query.dto.js';
import { CustomerEntity, CustomerExternalIdEntity } from './customer.entity.js';

/** A customer as the API answers it and its events and audit rows carry it. */
export interface CustomerView {
  id: number;
  project_id: number;
  email: string;
  name: string | null;
  external_ids: Array<{ provider: string; id: string }>;
  created_at: string | null;
  updated_at: string | null;
}

/** Licenses and purchases listed with one customer: the newest. */
export const CUSTOMER_ITEMS = 50;

export const customerHasLicenses = (count: number) =>
  `This customer has ${count} license${count === 1 ? '' : 's'}: delete ${count === 1 ? 'it' : 'them'} or give ${count === 1 ? 'it' : 'them'} another customer first.`;

/**
 * The customer as the API answers it, with the providers' ids among `externalIds` that are theirs: also
 * the `data` of `customer.*` events and the rows of their audit, whoever writes them (a connector too).
 */
export function customerView(row: CustomerEntity, externalIds: CustomerExternalIdEntity[]): CustomerView {
  return {
    id: row.id,
    project_id: row.project_id,
    email: row.email,
    name: row.name,
    external_ids: externalIds
      .filter((e) => e.customer_id === row.id)
      .sort((a, b) => a.id - b.id)
      .map((e) => ({ provider: e.provider, id: e.external_id })),
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

/** The buyers of a project (docs/payments.md#customers): the vendor's side of them. */
@Injectable()
export class CustomersService {
  constructor(
    @InjectRepository(CustomerEntity) private readonly customers: Repository<CustomerEntity>,
    @InjectRepository(CustomerExternalIdEntity)
    private readonly externalIds: Repository<CustomerExternalIdEntity>,
    @InjectRepository(LicenseEntity) private readonly licenses: Repository<LicenseEntity>,
    @InjectRepository(SubscriptionEntity) private readonly subscriptions: Repository<SubscriptionEntity>,
    private readonly projects: ProjectsService,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
    private readonly plans: PlansService,
  ) {}

  /** As licenses: the customer must be in the project (404) before the key's scope and owner (403). */
  async findAccessible(
    principal: ApiPrincipal,
    projectId: number,
    customerId: number,
    options: { write?: boolean } = {},
  ): Promise<{ project: ProjectEntity; customer: CustomerEntity }> {
    const project = await this.projects.findOr404(projectId);
    const customer = await this.customers.findOneBy({ id: customerId, project_id: project.id });
    if (!customer) throw notFound('Customer');
    assertAccess(principal, project, options);
    return { project, customer };
  }

  /** One page of the project's customers, newest first, narrowed by `email` (exact) and `q` (prefix). */
  async list(project: ProjectEntity, query: CustomerListQueryDto): Promise<CursorPage<CustomerView>> {
    const qb = this.customers
      .createQueryBuilder('c')
      .where('c.project_id = :project', { project: project.id });
    // Emails are stored lower-case, so the index on (project_id, email) serves the exact match.
    if (query.email !== undefined) qb.andWhere('c.email = :email', { email: query.email.toLowerCase() });
    if (query.q !== undefined) {
      // '!' escapes LIKE's wildcards: a backslash would need doubling on MySQL and not on SQLite.
      const prefix = `${query.q.toLowerCase().replace(/[!%_]/g, '!$&')}%`;
      qb.andWhere(
        new Brackets((w) =>
          w
            .where("c.email LIKE :prefix ESCAPE '!'", { prefix })
            .orWhere("LOWER(c.name) LIKE :prefix ESCAPE '!'", { prefix }),
        ),
      );
    }
    const page = await this.cursors.page(qb, `customers:${project.id}`, query, {
      defaultPerPage: 20,
      order: 'DESC',
    });
    const ids = page.data.map((c) => c.id);
    const external = ids.length > 0 ? await this.externalIds.findBy({ customer_id: In(ids) }) : [];
    return { data: page.data.map((c) => customerView(c, external)), next_cursor: page.next_cursor };
  }

  /** The customer with their newest licenses (as the license API answers them) and purchases. */
  async detail(
    customer: CustomerEntity,
  ): Promise<CustomerView & { licenses: LicenseEntity[]; subscriptions: SubscriptionItem[] }> {
    const [external, licenses, subscriptions] = await Promise.all([
      this.externalIds.findBy({ customer_id: customer.id }),
      this.licenses.find({
        where: { project_id: customer.project_id, customer_id: customer.id },
        order: { id: 'DESC' },
        take: CUSTOMER_ITEMS,
      }),
      this.subscriptions.find({
        where: { project_id: customer.project_id, customer_id: customer.id },
        order: { id: 'DESC' },
        take: CUSTOMER_ITEMS,
      }),
    ]);
    // As the license API answers them: with their plan and effective entitlements.
    const plans = await this.plans.byIds(licenses.flatMap((l) => (l.plan_id === null ? [] : [l.plan_id])));
    for (const license of licenses) {
      const plan = license.plan_id === null ? undefined : plans.get(license.plan_id);
      license.plan = plan ? { id: plan.id, code: plan.code, name: plan.name } : null;
      license.effective_entitlements = effectiveEntitlements(plan?.entitlements, license.entitlements);
    }
    return {
      ...customerView(customer, external),
      licenses,
      subscriptions: subscriptions.map(toSubscriptionItem),
    };
  }

  async create(project: ProjectEntity, dto: CreateCustomerDto): Promise<CustomerView> {
    return this.projectChanges.run(project, async (manager) => {
      const result = await manager.insert(CustomerEntity, {
        project_id: project.id,
        email: dto.email.toLowerCase(),
        name: dto.name || null,
      });
      const after = await this.viewIn(manager, result.identifiers[0].id as number);
      return {
        result: after,
        events: [['customer.created', after]],
        audit: { action: 'customer.created', before: null, after },
      };
    });
  }

  /** PATCH: only the fields sent. */
  async update(
    project: ProjectEntity,
    customer: CustomerEntity,
    dto: UpdateCustomerDto,
  ): Promise<CustomerView> {
    // PartialType makes every field optional, null included: an email cannot be taken away.
    if (dto.email === null) throw fieldError('email', 'The email field is required.');
    const fields: Partial<Pick<CustomerEntity, 'email' | 'name'>> = {};
    if (dto.email !== undefined) fields.email = dto.email.toLowerCase();
    if (dto.name !== undefined) fields.name = dto.name || null;
    return this.projectChanges.run(project, async (manager) => {
      await lockedRow(manager, CustomerEntity, customer.id);
      const before = await this.viewIn(manager, customer.id);
      if (Object.keys(fields).length > 0) await manager.update(CustomerEntity, { id: customer.id }, fields);
      const after = await this.viewIn(manager, customer.id);
      return {
        result: after,
        events: [['customer.updated', after]],
        audit: { action: 'customer.updated', before, after },
      };
    });
  }

  /**
   * Deletes a customer no license names (409 otherwise). Their purchases stay, no longer naming
   * them; the providers' ids for them go, so a later event of one of them makes a new customer.
   */
  async remove(project: ProjectEntity, customer: CustomerEntity): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      // Locked first, as a license write naming the customer locks it: no license slips in between.
      await lockedRow(manager, CustomerEntity, customer.id);
      const licenses = await manager.countBy(LicenseEntity, { customer_id: customer.id });
      if (licenses > 0) throw new ApiError(HttpStatus.CONFLICT, customerHasLicenses(licenses));
      const before = await this.viewIn(manager, customer.id);
      await manager.delete(CustomerExternalIdEntity, { customer_id: customer.id });
      await manager.update(SubscriptionEntity, { customer_id: customer.id }, { customer_id: null });
      await manager.delete(CustomerEntity, { id: customer.id });
      return {
        result: undefined,
        events: [['customer.deleted', before]],
        audit: { action: 'customer.deleted', before, after: null },
      };
    });
  }

  private async viewIn(manager: EntityManager, id: number): Promise<CustomerView> {
    const row = await manager.findOneByOrFail(CustomerEntity, { id });
    return customerView(row, await manager.findBy(CustomerExternalIdEntity, { customer_id: id }));
  }
}
