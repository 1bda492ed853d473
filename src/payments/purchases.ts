import { EntityManager, In } from 'typeorm';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { wholeSecond } from '../common/time.js';
import { lockedRowWhere } from '../database/unit-of-work.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { PaymentConnectorEntity } from './payment-connector.entity.js';
import type { ProviderEvent, Purchase, PurchaseStatus } from './providers/provider.js';
import { shown } from './providers/provider.js';
import { SubscriptionEntity, SubscriptionPaymentEntity } from './subscription.entity.js';

/** The statuses of a purchase that stopped paying. */
const UNPAID_STATUSES = new Set<PurchaseStatus>([
  'past_due',
  'paused',
  'canceled',
  'expired',
  'refunded',
  'disputed',
]);

/**
 * The purchase row an event belongs to, locked for the rest of the unit: the one of its (kind,
 * reference), else the one that kept one of `paymentIds` (a refund's charge, or a Lemon Squeezy
 * order whose subscription now names the purchase). Null when there is none yet.
 */
export async function findPurchase(
  manager: EntityManager,
  connectorId: number,
  purchase: Purchase | null,
  paymentIds: string[],
): Promise<SubscriptionEntity | null> {
  if (purchase) {
    const row = await lockedRowWhere(manager, SubscriptionEntity, {
      connector_id: connectorId,
      kind: purchase.kind,
      reference: purchase.reference,
    });
    if (row) return row;
  }
  if (paymentIds.length === 0) return null;
  const kept = await manager.findOne(SubscriptionPaymentEntity, {
    where: { connector_id: connectorId, payment_id: In(paymentIds) },
    order: { id: 'ASC' },
  });
  return kept ? lockedRowWhere(manager, SubscriptionEntity, { id: kept.subscription_id }) : null;
}

/** Why the event is none of the connector's products (docs/payments.md#products), or null. */
export function productProblem(
  connector: PaymentConnectorEntity,
  event: ProviderEvent,
  row: SubscriptionEntity | null,
): string | null {
  const listed = new Set((connector.products ?? []).map((p) => (typeof p === 'string' ? p : p.id)));
  if (listed.size === 0) return null;
  const named = event.productIds ?? row?.product_ids ?? [];
  if (named.some((id) => listed.has(id))) return null;
  return named.length > 0
    ? `Not one of this connector's products (the event names ${named.slice(0, 5).map(shown).join(', ')}): nothing changed.`
    : "Not one of this connector's products (the event names no product): nothing changed.";
}

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/**
 * Why the event is stale for its purchase (docs/payments.md#order-of-events), or null: an ended
 * purchase takes no paid event but its revival; an event older than the purchase's last changes
 * nothing; of one second, a paid event never undoes an unpaid one.
 */
export function staleness(row: SubscriptionEntity, event: ProviderEvent): string | null {
  const paid = event.verdict.kind === 'paid';
  const name = `${row.kind} ${shown(row.reference)}`;
  const ended =
    row.ended && paid && !event.revives
      ? `The ${name} was ended by ${row.last_event_type ?? 'the provider'}: a later paid event does not revive it (only the provider's own revival does). Nothing changed.`
      : null;
  if (!event.occurredAt || !row.last_event_at) return ended;
  const at = seconds(event.occurredAt);
  const last = seconds(row.last_event_at);
  const newer = `${row.last_event_type ?? 'an event'} of ${toIsoTimestamp(row.last_event_at)}`;
  if (at < last)
    return `The ${name} already took ${newer}, newer than this event (${toIsoTimestamp(wholeSecond(event.occurredAt))}): nothing changed.`;
  if (ended) return ended;
  if (at === last && paid && UNPAID_STATUSES.has(row.status))
    return `The ${name} already took ${newer}, an unpaid event of the same second: a paid one does not undo it. Nothing changed.`;
  return null;
}

/**
 * Records the event on its purchase (created when new): status, cancellation at the period's end, the
 * period, products, buyer, the provider's time and type of the event, whether it ended, and the
 * payment ids to keep. A Lemon Squeezy order row takes its subscription's id when that arrives. Racing
 * creations of one purchase meet the unique index; the loser's unit runs again and finds the row.
 */
export async function recordPurchase(
  manager: EntityManager,
  project: ProjectEntity,
  connector: PaymentConnectorEntity,
  event: ProviderEvent,
  row: SubscriptionEntity | null,
  customer: number | null,
): Promise<SubscriptionEntity> {
  const purchase = event.purchase ?? { kind: row!.kind, reference: row!.reference };
  const kind = row && (event.refund || row.kind === 'subscription') ? row.kind : purchase.kind;
  const paid = event.verdict.kind === 'paid';
  const restored: PurchaseStatus = kind === 'subscription' ? 'active' : 'paid';
  const status: PurchaseStatus = event.refund
    ? (event.refund.status ?? restored)
    : (event.status ?? row?.status ?? (paid ? restored : 'past_due'));
  const ended = event.revives
    ? false
    : event.ends || (event.refund?.status === 'refunded' && kind === 'order') || (row?.ended ?? false);
  const changes = {
    kind,
    reference: row && kind === row.kind ? row.reference : purchase.reference,
    status,
    cancel_at_period_end: event.notes
      ? true
      : (event.cancelAtPeriodEnd ?? row?.cancel_at_period_end ?? false),
    current_period_end: event.currentPeriodEnd
      ? wholeSecond(event.currentPeriodEnd)
      : (row?.current_period_end ?? null),
    product_ids: (event.refund ? null : event.productIds) ?? row?.product_ids ?? null,
    customer_id: customer ?? row?.customer_id ?? null,
    last_event_at: event.occurredAt ? wholeSecond(event.occurredAt) : (row?.last_event_at ?? null),
    last_event_type: event.type.slice(0, 128),
    ended,
  };
  let id: number;
  if (row) {
    id = row.id;
    await manager.update(SubscriptionEntity, { id }, changes);
  } else {
    const inserted = await manager.insert(SubscriptionEntity, {
      ...changes,
      project_id: project.id,
      connector_id: connector.id,
      provider: connector.provider,
      license_id: null,
      license_deleted_at: null,
      target_kind: null,
      target_id: null,
    });
    id = inserted.identifiers[0].id as number;
  }
  if (!event.refund && event.paymentIds.length > 0) {
    const kept = new Set(
      (
        await manager.find(SubscriptionPaymentEntity, {
          where: { connector_id: connector.id, payment_id: In(event.paymentIds) },
        })
      ).map((p) => p.payment_id),
    );
    for (const paymentId of event.paymentIds)
      if (!kept.has(paymentId))
        await manager.insert(SubscriptionPaymentEntity, {
          subscription_id: id,
          connector_id: connector.id,
          payment_id: paymentId,
        });
  }
  return manager.findOneByOrFail(SubscriptionEntity, { id });
}
