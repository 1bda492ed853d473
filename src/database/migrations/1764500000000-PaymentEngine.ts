import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/** The kind of an existing license's payment reference, as the adapters named it before kinds. */
function kindOf(provider: string, reference: string): 'subscription' | 'order' {
  switch (provider) {
    case 'stripe':
    case 'paddle':
      return reference.startsWith('sub_') ? 'subscription' : 'order';
    case 'polar':
      // Polar's order events named their subscription when they had one, as its subscription events do.
      return 'subscription';
    default:
      // Lemon Squeezy's licenses were issued by order id; standard references are orders unless the sender says.
      return 'order';
  }
}

/**
 * Connectors gain their products allow-list and `match_customers_by_email`; a purchase row gains
 * `ended` (the provider ended it: later paid events are stale but for its explicit revival). Existing
 * licenses issued from orders get their purchase row (status from what the license shows: revoked,
 * in grace or paid) and the kind of their reference; revoked licenses get `revoked_by`: `payment`
 * where the audit row that revoked them has a payment actor, else `vendor`.
 */
export class PaymentEngine1764500000000 implements MigrationInterface {
  name = 'PaymentEngine1764500000000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTER TABLE, as in LicenseBilling: addColumn would rebuild these SQLite tables.
    await q.query('ALTER TABLE payment_connectors ADD COLUMN products text NULL');
    await q.query(
      'ALTER TABLE payment_connectors ADD COLUMN match_customers_by_email boolean NOT NULL DEFAULT 0',
    );
    await q.query('ALTER TABLE subscriptions ADD COLUMN ended boolean NOT NULL DEFAULT 0');

    await q.query(
      "UPDATE licenses SET revoked_by = 'vendor' WHERE revoked_at IS NOT NULL AND revoked_by IS NULL",
    );
    const revokedByPayment = (await q.query(
      `SELECT l.id AS id FROM licenses l
       WHERE l.revoked_at IS NOT NULL AND (
         SELECT a.actor_type FROM audit_events a
         WHERE a.resource_type = 'license' AND a.resource_id = l.id AND a.action = 'license.revoked'
         ORDER BY a.id DESC LIMIT 1
       ) = 'payment'`,
    )) as Array<{ id: number }>;
    for (const { id } of revokedByPayment)
      await q.query("UPDATE licenses SET revoked_by = 'payment' WHERE id = ?", [id]);

    const issued = (await q.query(
      `SELECT id, project_id, payment_provider, payment_reference_id, revoked_at, grace_until, customer_id
       FROM licenses WHERE payment_provider IS NOT NULL AND payment_reference_id IS NOT NULL`,
    )) as Array<{
      id: number;
      project_id: number;
      payment_provider: string;
      payment_reference_id: string;
      revoked_at: unknown;
      grace_until: unknown;
      customer_id: number | null;
    }>;
    // UTC, as the columns are written on both databases.
    const now = new Date().toISOString().replace('T', ' ').slice(0, 19);
    for (const license of issued) {
      const [connector] = (await q.query(
        'SELECT id FROM payment_connectors WHERE project_id = ? AND provider = ? ORDER BY id DESC LIMIT 1',
        [license.project_id, license.payment_provider],
      )) as Array<{ id: number }>;
      const kind = kindOf(license.payment_provider, license.payment_reference_id);
      await q.query('UPDATE licenses SET payment_reference_kind = ? WHERE id = ?', [kind, license.id]);
      if (!connector) continue;
      const [taken] = (await q.query(
        'SELECT id FROM subscriptions WHERE connector_id = ? AND kind = ? AND reference = ?',
        [connector.id, kind, license.payment_reference_id],
      )) as Array<{ id: number }>;
      if (taken) continue;
      const status =
        license.revoked_at !== null
          ? kind === 'subscription'
            ? 'canceled'
            : 'refunded'
          : license.grace_until !== null
            ? 'past_due'
            : kind === 'subscription'
              ? 'active'
              : 'paid';
      await q.query(
        `INSERT INTO subscriptions (project_id, connector_id, provider, kind, reference, status,
           cancel_at_period_end, customer_id, license_id, target_kind, target_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, 'license', ?, ?, ?)`,
        [
          license.project_id,
          connector.id,
          license.payment_provider,
          kind,
          license.payment_reference_id,
          status,
          license.customer_id,
          license.id,
          license.id,
          now,
          now,
        ],
      );
      // An order's own id is a payment id of it: a Lemon Squeezy subscription naming its order_id finds it.
      if (
        kind === 'order' &&
        license.payment_provider !== 'stripe' &&
        license.payment_provider !== 'standard'
      ) {
        const [row] = (await q.query(
          'SELECT id FROM subscriptions WHERE connector_id = ? AND kind = ? AND reference = ?',
          [connector.id, kind, license.payment_reference_id],
        )) as Array<{ id: number }>;
        await q.query(
          'INSERT INTO subscription_payments (subscription_id, connector_id, payment_id) VALUES (?, ?, ?)',
          [row.id, connector.id, license.payment_reference_id],
        );
      }
    }
    // One order and one subscription may share a number (Lemon Squeezy's): the kind tells their licenses apart.
    await q.dropIndex('licenses', 'uq_licenses_payment_reference');
    await q.createIndex(
      'licenses',
      new TableIndex({
        name: 'uq_licenses_payment_reference',
        columnNames: ['project_id', 'payment_provider', 'payment_reference_kind', 'payment_reference_id'],
        isUnique: true,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('licenses', 'uq_licenses_payment_reference');
    await q.createIndex(
      'licenses',
      new TableIndex({
        name: 'uq_licenses_payment_reference',
        columnNames: ['project_id', 'payment_provider', 'payment_reference_id'],
        isUnique: true,
      }),
    );
    await q.query('ALTER TABLE subscriptions DROP COLUMN ended');
    await q.query('ALTER TABLE payment_connectors DROP COLUMN match_customers_by_email');
    await q.query('ALTER TABLE payment_connectors DROP COLUMN products');
  }
}
