import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, In, Repository } from 'typeorm';
import type { Audit } from '../audit/audit-log.service.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { notFound } from '../common/http/errors.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation } from '../database/db-errors.js';
import { CursorPage, CursorQueryDto, Cursors } from '../database/pagination.js';
import { lockedRowWhere, writeLocked } from '../database/unit-of-work.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { assertAccess } from '../projects/projects.service.js';
import { ProjectChanges } from '../project-changes/project-changes.service.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { LicenseActivationEntity } from './license-usage.entity.js';
import type { LicenseEntity } from './license.entity.js';
import { LicensesService, utcDay } from './licenses.service.js';

/** Who freed a slot: the vendor through the management API, or the license holder (self-service, or in the portal). */
export type DeactivatedBy = 'api_key' | 'license' | 'portal';

/** The answer of a self-service deactivation: how many activations went, or the day's allowance is used up. */
export type SelfDeactivation = { deactivated: number } | 'allowance_used';

const deactivated = (
  license: LicenseEntity,
  row: LicenseActivationEntity,
  by: DeactivatedBy,
): [WebhookEvent, unknown] => [
  'license.deactivated',
  { license_id: license.id, project_id: license.project_id, domain: row.domain, host: row.host, by },
];

/** The audit row of a deleted activation: filed under its license, the activation in `changes`. */
const audited = (license: LicenseEntity, row: LicenseActivationEntity): Audit => ({
  action: 'license.deactivated',
  resource_id: license.id,
  before: null,
  after: null,
  also: { activation: [{ id: row.id, domain: row.domain, host: row.host }, null] },
});

/**
 * The activations of a license (docs/decisions.md#activations): listed and deleted by the vendor,
 * deactivated by the license holder within a daily allowance. Every deletion runs through
 * ProjectChanges.run with its license.deactivated events and audit rows; the project's cache
 * generation it then bumps is how every instance's runtime path learns that the slot is free
 * (licenses/activations.ts).
 */
@Injectable()
export class ActivationsService {
  constructor(
    @InjectRepository(LicenseActivationEntity)
    private readonly activations: Repository<LicenseActivationEntity>,
    private readonly licenses: LicensesService,
    private readonly cursors: Cursors,
    private readonly projectChanges: ProjectChanges,
    private readonly config: AppConfig,
  ) {}

  /**
   * As for licenses, every 404 comes before any 403: the project, the license in it, the activation
   * of that license (another license's activation is not found), then the key's access.
   */
  async findAccessible(
    principal: ApiPrincipal,
    projectId: number,
    licenseId: number,
    activationId: number | null,
    options: { write?: boolean } = {},
  ) {
    const { project, license } = await this.licenses.findInProject(projectId, licenseId);
    if (
      activationId !== null &&
      !(await this.activations.existsBy({ id: activationId, license_id: license.id }))
    )
      throw notFound('Activation');
    assertAccess(principal, project, options);
    return { project, license };
  }

  /** Oldest first (by id: the order they were first seen in), per_page default 50. */
  list(license: LicenseEntity, query: CursorQueryDto): Promise<CursorPage<LicenseActivationEntity>> {
    const qb = this.activations
      .createQueryBuilder('a')
      .where('a.license_id = :license', { license: license.id });
    return this.cursors.page(qb, `activations:${license.id}`, query, { defaultPerPage: 50, order: 'ASC' });
  }

  /** Deletes one activation; of racing deletes one goes on and the others find it gone (404). */
  async remove(project: ProjectEntity, license: LicenseEntity, activationId: number): Promise<void> {
    await this.projectChanges.run(project, async (manager) => {
      const row = await lockedRowWhere(manager, LicenseActivationEntity, {
        id: activationId,
        license_id: license.id,
      });
      if (!row) throw notFound('Activation');
      await manager.delete(LicenseActivationEntity, { id: row.id });
      return {
        result: undefined,
        events: [deactivated(license, row, 'api_key')],
        audit: audited(license, row),
      };
    });
  }

  /**
   * Self-service: deletes the license's activations of exactly `host` (the registered domain's own
   * activation when `host` is a registered domain, the subdomain's when it is one). Deactivating
   * something takes one of the day's SELF_DEACTIVATIONS_PER_DAY in the same unit, so racing calls on
   * any number of instances never exceed it; deactivating nothing takes nothing.
   */
  async deactivateHost(
    project: ProjectEntity,
    license: LicenseEntity,
    host: string,
  ): Promise<SelfDeactivation> {
    const answer = await this.projectChanges.run<SelfDeactivation>(project, async (manager) => {
      const rows = await writeLocked(
        manager
          .createQueryBuilder(LicenseActivationEntity, 'a')
          .where('a.license_id = :license', { license: license.id })
          .andWhere(
            new Brackets((w) =>
              w.where("a.domain = :host AND a.host = ''", { host }).orWhere('a.host = :host', { host }),
            ),
          ),
      ).getMany();
      // Nothing deleted: nothing to audit (a write that changed nothing leaves no row) and no cache to drop.
      if (rows.length === 0) return { result: { deactivated: 0 }, audit: [], unchanged: true };
      if (!(await this.takeSelfDeactivation(manager, license.id)))
        return { result: 'allowance_used', audit: [], unchanged: true };
      await manager.delete(LicenseActivationEntity, { id: In(rows.map((row) => row.id)) });
      return {
        result: { deactivated: rows.length },
        events: rows.map((row) => deactivated(license, row, 'license')),
        audit: rows.map((row) => audited(license, row)),
      };
    });
    return answer;
  }

  /**
   * The customer portal's "free this site": deletes one activation of the license, taking one of the
   * day's SELF_DEACTIVATIONS_PER_DAY in the same unit, as deactivateHost does. Null when the activation
   * is gone (404 for the caller); 'allowance_used' when none is left today.
   */
  async freeInPortal(
    project: ProjectEntity,
    license: LicenseEntity,
    activationId: number,
  ): Promise<SelfDeactivation | null> {
    return this.projectChanges.run<SelfDeactivation | null>(project, async (manager) => {
      const row = await lockedRowWhere(manager, LicenseActivationEntity, {
        id: activationId,
        license_id: license.id,
      });
      if (!row) return { result: null, audit: [], unchanged: true };
      if (!(await this.takeSelfDeactivation(manager, license.id)))
        return { result: 'allowance_used', audit: [], unchanged: true };
      await manager.delete(LicenseActivationEntity, { id: row.id });
      return {
        result: { deactivated: 1 },
        events: [deactivated(license, row, 'portal')],
        audit: audited(license, row),
      };
    });
  }

  /** How many self-service deactivations the license has left today (UTC). */
  async selfDeactivationsLeft(licenseId: number): Promise<number> {
    const max = this.config.env.SELF_DEACTIVATIONS_PER_DAY;
    const rows: Array<{ count: number | string }> = await this.activations.manager.query(
      'SELECT count FROM license_deactivations WHERE license_id = ? AND day = ?',
      [licenseId, utcDay()],
    );
    return Math.max(0, max - (rows.length > 0 ? Number(rows[0].count) : 0));
  }

  /** One of today's self-service deactivations, by conditional statements (exact under races); false when none is left. */
  private async takeSelfDeactivation(manager: EntityManager, licenseId: number): Promise<boolean> {
    const max = this.config.env.SELF_DEACTIVATIONS_PER_DAY;
    const day = utcDay();
    const run = async (sql: string, params: unknown[]) =>
      Number((await manager.queryRunner!.query(sql, params, true)).affected ?? 0);
    const bump = () =>
      run(
        'UPDATE license_deactivations SET count = count + 1 WHERE license_id = ? AND day = ? AND count < ?',
        [licenseId, day, max],
      );
    if ((await bump()) > 0) return true;
    try {
      await run('INSERT INTO license_deactivations (license_id, day, count) VALUES (?, ?, 1)', [
        licenseId,
        day,
      ]);
      return true;
    } catch (error) {
      // The day's row exists: at the limit, unless a racing call inserted it just now.
      if (isUniqueViolation(error)) return (await bump()) > 0;
      throw error;
    }
  }
}
