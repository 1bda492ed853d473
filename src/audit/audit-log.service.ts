import { Injectable } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import { EntityManager, QueryDeepPartialEntity } from 'typeorm';
import { UnitOfWork } from '../database/unit-of-work.js';
import { WEBHOOK_EVENTS } from '../webhooks/webhook-events.js';
import { currentAuditContext } from './audit-context.js';
import { AuditEventEntity, Changes } from './audit-event.entity.js';
import { wholeSecond } from '../common/time.js';

/** What the audit log calls a write: the webhook event names, and the writes no webhook announces. */
export const AUDIT_ACTIONS = [
  ...WEBHOOK_EVENTS,
  'api_key.created',
  'api_key.revoked',
  'api_key.rolled',
  'webhook_delivery.retried',
  'portal_session.created',
  'portal_session.opened',
  // The people of an account (docs/security.md#members-and-invitations): account-wide, no webhook.
  'member.invited',
  'member.joined',
  'member.updated',
  'member.removed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The part of an action before the dot. */
export const RESOURCE_TYPES = [
  'project',
  'domain',
  'license',
  'injectable',
  'api_key',
  'webhook_delivery',
  'payment_connector',
  'customer',
  'portal_session',
  'plan',
] as const;

export const REDACTED = '[redacted]';

/**
 * What a management write says about itself: its action and the resource as it was before and after
 * (null before a create, after a delete), read inside the write's unit of work. `also` adds the
 * changes the rows do not show (a secret that was set, a lock's reason).
 */
export interface Audit {
  action: AuditAction;
  before: object | null;
  after: object | null;
  also?: Changes;
  /** Defaults: the action's prefix, and the `id` of the resource. */
  resource_type?: string;
  resource_id?: number | null;
}

/** Whose log the rows go to: the account, and the project when the write is in one. */
export interface AuditScope {
  owner_id: number;
  project_id: number | null;
}

// Never in `changes`: the row's own bookkeeping, and payloads (megabytes, and the customer's content).
const LEFT_OUT = new Set([
  'id',
  'created_at',
  'updated_at',
  'content',
  'encrypted_content',
  'file_path',
  'payload',
  // Who revoked a license: the row's actor says so (an API key or the console: the vendor; a payment).
  'revoked_by',
]);
// Credentials: shown as "[redacted]" when set. A license's `uuid` is its key.
const SECRET = new Set(['uuid', 'key', 'secret', 'webhook_secret', 'signing_secret']);

/**
 * `{field: [before, after]}` of the fields that differ between the two rows as the API serialises
 * them (hidden columns stay hidden), credentials redacted, payloads left out; then `also`, whose
 * secrets stand unless both sides are null (a secret replaced by another reads "[redacted]" on both).
 */
export function changesOf(before: object | null, after: object | null, also: Changes = {}): Changes {
  const was = before ? (instanceToPlain(before) as Record<string, unknown>) : {};
  const now = after ? (instanceToPlain(after) as Record<string, unknown>) : {};
  const changes: Changes = {};
  for (const field of new Set([...Object.keys(was), ...Object.keys(now)])) {
    if (LEFT_OUT.has(field)) continue;
    const [from, to] = [was[field] ?? null, now[field] ?? null];
    if (JSON.stringify(from) !== JSON.stringify(to))
      changes[field] = SECRET.has(field) ? [redact(from), redact(to)] : [from, to];
  }
  for (const [field, [from, to]] of Object.entries(also)) {
    const unchanged = SECRET.has(field)
      ? from === null && to === null
      : JSON.stringify(from) === JSON.stringify(to);
    if (unchanged) delete changes[field];
    else changes[field] = SECRET.has(field) ? [redact(from), redact(to)] : [from, to];
  }
  return changes;
}

const redact = (value: unknown) => (value === null || value === undefined ? null : REDACTED);

/**
 * The most `changes` may take as JSON, in UTF-8 bytes: it is stored in a TEXT column, 65535 bytes on
 * MySQL (SQLite would take more, so both keep to this). A write whose before and after are both near
 * their limits (a project's meta, URLs and description in three-byte characters, twice) would not fit.
 */
export const MAX_CHANGES_BYTES = 60_000;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? 'null');

/**
 * Makes `changes` fit MAX_CHANGES_BYTES: the largest value, before or after, is replaced by a note of
 * its size, then the next, until the whole fits (docs/decisions.md#audit-log). Ordinary writes are
 * far below the bound and are recorded whole.
 */
export function withinBound(changes: Changes): Changes {
  let total = jsonBytes(changes);
  while (total > MAX_CHANGES_BYTES) {
    let largest: { field: string; side: 0 | 1; bytes: number } | null = null;
    for (const [field, pair] of Object.entries(changes)) {
      for (const side of [0, 1] as const) {
        const bytes = jsonBytes(pair[side]);
        if (!largest || bytes > largest.bytes) largest = { field, side, bytes };
      }
    }
    if (!largest) break;
    const note = `[omitted: ${largest.bytes} bytes, too large for the audit log]`;
    changes[largest.field][largest.side] = note;
    total += jsonBytes(note) - largest.bytes;
  }
  return changes;
}

/**
 * The audit log's writer (docs/architecture.md#the-audit-log): every management write appends its rows
 * here, with the unit of work's EntityManager, so they commit or roll back with the write.
 */
@Injectable()
export class AuditLog {
  constructor(private readonly unit: UnitOfWork) {}

  /** Runs a management write that announces no webhook event (API keys) in one unit of work, with its audit rows. */
  async change<T>(
    scope: AuditScope,
    work: (manager: EntityManager) => Promise<{ result: T; audit: Audit | Audit[] }>,
  ): Promise<T> {
    return this.unit.run(async (manager) => {
      const { result, audit } = await work(manager);
      await this.record(manager, scope, audit);
      return result;
    });
  }

  /** Runs writes the audit log does not cover (a user and their account, made by the CLI) in one unit of work. */
  unaudited<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.unit.run(work);
  }

  /**
   * Appends the audit rows of a write, in its unit of work. The actor and the request come from the
   * audit context. A write made in one (a management request, the CLI) must say what it did, and an
   * audited write must be made in one: either slip is a bug, refused here rather than left unaudited.
   * Outside both (the runtime's usage counts) nothing is recorded.
   */
  async record(manager: EntityManager, scope: AuditScope, audit: Audit | Audit[] | undefined): Promise<void> {
    const context = currentAuditContext();
    if (!audit) {
      if (context)
        throw new Error('A management write did not say what it changed: it would leave no audit row.');
      return;
    }
    if (!context)
      throw new Error('An audited write was made outside a request or the CLI: no actor to record.');
    // Whole seconds, as every timestamp of the API (and MySQL's DATETIME) has them.
    const created_at = wholeSecond(new Date());
    const rows = (Array.isArray(audit) ? audit : [audit]).map((entry) => ({
      owner_id: scope.owner_id,
      project_id: scope.project_id,
      action: entry.action,
      resource_type: entry.resource_type ?? entry.action.slice(0, entry.action.indexOf('.')),
      resource_id: entry.resource_id !== undefined ? entry.resource_id : idOf(entry.after ?? entry.before),
      actor_type: context.actor.type,
      actor_api_key_id: context.actor.api_key_id,
      actor_api_key_prefix: context.actor.api_key_prefix,
      actor_user_id: context.actor.user_id,
      actor_provider: context.actor.provider ?? null,
      actor_connector_id: context.actor.connector_id ?? null,
      actor_customer_id: context.actor.customer_id ?? null,
      changes: withinBound(changesOf(entry.before, entry.after, entry.also)),
      request_id: context.request_id,
      ip: context.ip,
      user_agent: context.user_agent,
      created_at,
    }));
    if (rows.length > 0)
      await manager.insert(AuditEventEntity, rows as QueryDeepPartialEntity<AuditEventEntity>[]);
  }
}

function idOf(row: object | null): number | null {
  const id = (row as { id?: unknown } | null)?.id;
  return typeof id === 'number' ? id : null;
}
