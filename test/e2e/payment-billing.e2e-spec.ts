import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { PaymentEngine1764500000000 } from '../../src/database/migrations/1764500000000-PaymentEngine.js';
import { PaymentGrace } from '../../src/payments/payment-grace.service.js';
import { makeAccount, makeDomain, makeProject } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import {
  Connector,
  dated,
  deliver,
  fixture,
  fixtureEvent,
  makeConnector,
  Payload,
  ProviderName,
} from '../utils/payments.js';
import { databaseBefore } from '../utils/upgrade.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const DAY_MS = 86_400_000;
const PRODUCTS_INVALID =
  'The products field must be a list of at most 200 product ids (strings of 1 to 255 characters) or {id, plan} objects.';

describe('licenses that carry their own payment, purchases and the order of events (docs/payments.md)', () => {
  let t: TestApp;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' }, { clock });
    key = (await makeAccount(t.app)).key;
  });
  afterAll(async () => t.close());

  const api = () => apiAs(t, key);
  const db = () => t.app.get(DataSource);
  const send = async (connector: Connector, payload: object) =>
    expectSuccess(await deliver(t, connector, payload, clock.nowMs())) as {
      outcome: string;
      event_id: string;
    };

  async function setup(
    provider: ProviderName,
    connector: Record<string, unknown> = { issue_licenses: true },
    project: Record<string, unknown> = {},
  ) {
    const p = await makeProject(t, key, { has_paid: true, ...project });
    const domain = await makeDomain(t, key, p.id, { domain: 'shop.example.com', has_paid: true });
    return { project: p, domain, connector: await makeConnector(t, key, p.id, provider, connector) };
  }

  const licensesOf = async (projectId: number) =>
    (
      await db().query<
        Array<{
          id: number;
          billing: string;
          has_paid: number | boolean;
          revoked_at: unknown;
          revoked_by: string | null;
          grace_until: unknown;
          customer_id: number | null;
          payment_reference_id: string;
          payment_reference_kind: string | null;
        }>
      >(
        'SELECT id, billing, has_paid, revoked_at, revoked_by, grace_until, customer_id, payment_reference_id, payment_reference_kind FROM licenses WHERE project_id = ? ORDER BY id',
        [projectId],
      )
    ).map((l) => ({ ...l, has_paid: Boolean(l.has_paid) }));
  const purchasesOf = async (connectorId: number) =>
    (
      await db().query<
        Array<{
          id: number;
          kind: string;
          reference: string;
          status: string;
          cancel_at_period_end: number | boolean;
          customer_id: number | null;
          license_id: number | null;
          license_deleted_at: unknown;
          target_kind: string | null;
          target_id: number | null;
          product_ids: string | null;
          last_event_type: string | null;
        }>
      >('SELECT * FROM subscriptions WHERE connector_id = ? ORDER BY id', [connectorId])
    ).map((r) => ({
      ...r,
      cancel_at_period_end: Boolean(r.cancel_at_period_end),
      product_ids: r.product_ids === null ? null : (JSON.parse(r.product_ids) as string[]),
    }));
  const eventsOf = async (projectId: number, connectorId: number) =>
    expectSuccess(
      await api().get(`/project/${projectId}/payment-connectors/${connectorId}/events?per_page=50`),
    ).data as Payload[];
  const latest = async (projectId: number, connectorId: number) =>
    (await eventsOf(projectId, connectorId))[0];

  describe('the story: two buyers on one project', () => {
    it("A's cancellation closes only A's license; the project and B's license are left alone", async () => {
      const { project, connector } = await setup(
        'stripe',
        { issue_licenses: true, grace_days: 2 },
        { webhook_url: 'http://127.0.0.1:9/hook' },
      );
      const buy = (sub: string, customer: string, email: string, seconds: number) =>
        fixtureEvent('stripe', 'checkout.session.completed', seconds, (p) => {
          p.data.object.id = `cs_${sub}`;
          p.data.object.subscription = sub;
          p.data.object.customer = customer;
          p.data.object.customer_details.email = email;
        });
      expect((await send(connector, buy('sub_A', 'cus_A', 'A@Example.com', 0))).outcome).toBe('applied');
      expect((await send(connector, buy('sub_B', 'cus_B', 'b@example.com', 1))).outcome).toBe('applied');
      const [a, b] = await licensesOf(project.id);
      expect(a).toMatchObject({
        billing: 'license',
        has_paid: true,
        payment_reference_id: 'sub_A',
        payment_reference_kind: 'subscription',
      });
      expect(b).toMatchObject({ billing: 'license', has_paid: true, payment_reference_id: 'sub_B' });
      const cancel = fixtureEvent('stripe', 'customer.subscription.deleted', 10, (p) => {
        p.data.object.id = 'sub_A';
        p.data.object.customer = 'cus_A';
      });
      expect((await send(connector, cancel)).outcome).toBe('applied');
      const [row] = await eventsOf(project.id, connector.id);
      expect(row).toMatchObject({
        target: { kind: 'license', id: a.id },
        subscription_id: expect.any(Number),
      });
      expect(row.detail).toMatch(
        new RegExp(`^License ${a.id} stays paid until .+ \\(grace of 2 days\\)\\.$`),
      );
      clock.advance(2 * DAY_MS + 1000);
      expect(await t.app.get(PaymentGrace).tick()).toBe(1);
      const [a2, b2] = await licensesOf(project.id);
      expect(a2).toMatchObject({ has_paid: false, revoked_at: null, revoked_by: null, grace_until: null });
      expect(b2).toMatchObject({ has_paid: true, revoked_at: null });
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(true);
      const purchases = await purchasesOf(connector.id);
      expect(purchases.map((p) => [p.kind, p.reference, p.status, p.license_id, p.target_kind])).toEqual([
        ['subscription', 'sub_A', 'canceled', a.id, 'license'],
        ['subscription', 'sub_B', 'active', b.id, 'license'],
      ]);
      // Each buyer is a customer of the project, email lower-case, with the provider's id.
      expect(a2.customer_id).not.toBeNull();
      expect(a2.customer_id).not.toBe(b2.customer_id);
      const [customer] = await db().query<Array<{ email: string }>>(
        'SELECT email FROM customers WHERE id = ?',
        [a2.customer_id],
      );
      expect(customer.email).toBe('a@example.com');
      expect(purchases[0].customer_id).toBe(a2.customer_id);
      // The unpaid change is the license's own event.
      const types = (
        await db().query<Array<{ type: string }>>(
          'SELECT type FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
          [project.id],
        )
      ).map((r) => r.type);
      expect(types.filter((type) => type.startsWith('customer.') || type.startsWith('license.'))).toEqual([
        'customer.created',
        'license.created',
        'customer.created',
        'license.created',
        'license.updated',
        'license.updated',
        'license.unpaid',
      ]);
      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Payload[];
      expect(audit[0]).toMatchObject({
        action: 'license.unpaid',
        resource_id: a.id,
        actor: { type: 'payment' },
      });
      expect(audit.filter((r) => r.action === 'customer.created')).toHaveLength(2);
    });
  });

  describe('order of events', () => {
    it('a cancellation that arrives before its purchase makes the purchase stale, with or without issue_licenses', async () => {
      for (const issue of [true, false]) {
        const { project, connector } = await setup('stripe', { issue_licenses: issue, grace_days: 0 });
        const cancel = fixtureEvent('stripe', 'customer.subscription.deleted', 10);
        expect((await send(connector, cancel)).outcome).toBe(issue ? 'ignored' : 'applied');
        const purchase = fixtureEvent('stripe', 'checkout.session.completed', 5);
        expect((await send(connector, purchase)).outcome).toBe('stale');
        const row = await latest(project.id, connector.id);
        expect(row).toMatchObject({ outcome: 'stale', target: null, subscription_id: expect.any(Number) });
        expect(row.detail).toBe(
          'The subscription "sub_1QdH6s" already took customer.subscription.deleted of 2026-01-15T12:00:10Z, newer than this event (2026-01-15T12:00:05Z): nothing changed.',
        );
        expect(await licensesOf(project.id)).toEqual([]);
        const [purchaseRow] = await purchasesOf(connector.id);
        expect(purchaseRow).toMatchObject({
          status: 'canceled',
          last_event_type: 'customer.subscription.deleted',
        });
        // A redelivery of the stale event is a duplicate.
        expect((await send(connector, purchase)).outcome).toBe('duplicate');
      }
    });

    it('of one second both apply in arrival order, but a paid event never undoes an unpaid one', async () => {
      const { project, domain, connector } = await setup('paddle', { grace_days: 0 });
      const sub = (name: string, seconds: number) => fixtureEvent('paddle', name, seconds);
      expect((await send(connector, sub('subscription.activated', 0))).outcome).toBe('applied');
      expect((await send(connector, sub('subscription.past_due', 0))).outcome).toBe('applied');
      const domainPaid = async () =>
        expectSuccess(await api().get(`/project/${project.id}/domains/${domain.id}`)).has_paid as boolean;
      expect(await domainPaid()).toBe(false);
      expect((await send(connector, sub('subscription.activated', 0))).outcome).toBe('stale');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'The subscription "sub_01hv8x29kz0t586xy6zn1a62ny" already took subscription.past_due of 2026-01-15T12:00:00Z, an unpaid event of the same second: a paid one does not undo it. Nothing changed.',
      );
      expect(await domainPaid()).toBe(false);
      expect((await send(connector, sub('subscription.activated', 1))).outcome).toBe('applied');
      expect(await domainPaid()).toBe(true);
      // Events of other types advance nothing, whatever their time.
      expect((await send(connector, sub('subscription.created', 100))).outcome).toBe('ignored');
      expect((await send(connector, sub('subscription.past_due', 2))).outcome).toBe('applied');
    });

    it.each([
      ['paddle', 'subscription.canceled', 'subscription.activated', 'subscription.resumed'],
      ['lemonsqueezy', 'subscription_expired', 'subscription_updated', 'subscription_resumed'],
      ['polar', 'subscription.revoked', 'subscription.active', 'subscription.uncanceled'],
      ['stripe', 'customer.subscription.deleted', 'invoice.paid', null],
    ] as Array<[ProviderName, string, string, string | null]>)(
      '%s: after %s, %s is stale; only the explicit revival (%s) pays again',
      async (provider, end, paid, revival) => {
        const { project, connector } = await setup(provider, { issue_licenses: true, grace_days: 0 });
        const first = {
          paddle: 'subscription.activated',
          lemonsqueezy: 'subscription_created',
          polar: 'subscription.active',
          stripe: 'customer.subscription.created',
        }[provider as 'paddle' | 'lemonsqueezy' | 'polar' | 'stripe'];
        expect((await send(connector, fixtureEvent(provider, first, 0))).outcome).toBe('applied');
        const [license] = await licensesOf(project.id);
        expect(license.has_paid).toBe(true);
        expect((await send(connector, fixtureEvent(provider, end, 10))).outcome).toBe('applied');
        expect((await licensesOf(project.id))[0]).toMatchObject({ has_paid: false, revoked_at: null });
        expect((await send(connector, fixtureEvent(provider, paid, 20))).outcome).toBe('stale');
        expect((await latest(project.id, connector.id)).detail).toContain(
          `was ended by ${end}: a later paid event does not revive it`,
        );
        expect((await licensesOf(project.id))[0].has_paid).toBe(false);
        if (revival) {
          expect((await send(connector, fixtureEvent(provider, revival, 30))).outcome).toBe('applied');
          expect((await licensesOf(project.id))[0].has_paid).toBe(true);
          // Revived, it takes paid events again.
          expect((await send(connector, fixtureEvent(provider, paid, 40))).outcome).toBe('applied');
        }
        expect(await licensesOf(project.id)).toHaveLength(1);
      },
    );

    it('a standard event without a time applies in arrival order', async () => {
      const { project, connector } = await setup('standard', { grace_days: 0 });
      const undated = (name: string) => {
        const p = fixture('standard', name);
        delete p.timestamp;
        return p;
      };
      expect((await send(connector, fixtureEvent('standard', 'payment.failed', 10))).outcome).toBe('applied');
      expect((await send(connector, undated('payment.succeeded'))).outcome).toBe('applied');
      const dated = fixtureEvent('standard', 'payment.failed', 5);
      delete dated.timestamp;
      dated.occurred_at = '2026-01-15T12:00:05Z';
      expect((await send(connector, dated)).outcome).toBe('stale');
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(true);
    });
  });

  describe('refunds and disputes', () => {
    it('stripe: a full refund closes at once (no grace), a partial one is ignored, an unknown one too', async () => {
      const { project, connector } = await setup('stripe', { issue_licenses: true, grace_days: 5 });
      // A one-time Checkout Session: its payment intent is kept.
      expect(
        (await send(connector, fixtureEvent('stripe', 'checkout.session.async_payment_succeeded', 0)))
          .outcome,
      ).toBe('applied');
      const partial = fixtureEvent('stripe', 'charge.refunded', 5, (p) => {
        p.data.object.refunded = false;
        p.data.object.amount_refunded = 100;
      });
      expect((await send(connector, partial)).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'charge.refunded for part of the charge: only a full refund stops payment.',
      );
      const unknown = fixtureEvent('stripe', 'charge.refunded', 6, (p) => {
        p.data.object.id = 'ch_unknown';
        p.data.object.payment_intent = 'pi_unknown';
      });
      expect((await send(connector, unknown)).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'charge.refunded names the payment "ch_unknown", "pi_unknown", which no purchase of this connector has: nothing changed.',
      );
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect((await send(connector, fixtureEvent('stripe', 'charge.refunded', 10))).outcome).toBe('applied');
      const [license] = await licensesOf(project.id);
      expect(license).toMatchObject({ has_paid: false, grace_until: null, revoked_at: null });
      expect((await latest(project.id, connector.id)).detail).toBe(
        `License ${license.id} is unpaid (no grace).`,
      );
      expect((await purchasesOf(connector.id))[0]).toMatchObject({ kind: 'order', status: 'refunded' });
      // A refunded one-time order is final.
      expect(
        (await send(connector, fixtureEvent('stripe', 'checkout.session.async_payment_succeeded', 20)))
          .outcome,
      ).toBe('stale');
    });

    it('stripe: a dispute closes at once, a dispute won pays again; a subscription refunded pays again on renewal', async () => {
      const { project, connector } = await setup('stripe', { issue_licenses: true, grace_days: 5 });
      // A subscription: its invoice's payment intent and charge are kept.
      const invoice = (seconds: number, id: string) =>
        fixtureEvent('stripe', 'invoice.paid', seconds, (p) => {
          p.data.object.id = id;
          p.data.object.payment_intent = `pi_${id}`;
          p.data.object.charge = `ch_${id}`;
        });
      expect((await send(connector, invoice(0, 'in_1'))).outcome).toBe('applied');
      const dispute = fixtureEvent('stripe', 'charge.dispute.created', 5, (p) => {
        p.data.object.charge = 'ch_in_1';
        delete p.data.object.payment_intent;
      });
      expect((await send(connector, dispute)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await purchasesOf(connector.id))[0].status).toBe('disputed');
      const lost = fixtureEvent('stripe', 'charge.dispute.created', 6, (p) => {
        p.type = 'charge.dispute.closed';
        p.data.object.charge = 'ch_in_1';
        p.data.object.status = 'lost';
      });
      expect((await send(connector, lost)).outcome).toBe('ignored');
      const won = fixtureEvent('stripe', 'charge.dispute.created', 7, (p) => {
        p.type = 'charge.dispute.closed';
        p.data.object.charge = 'ch_in_1';
        p.data.object.status = 'won';
      });
      expect((await send(connector, won)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect((await purchasesOf(connector.id))[0].status).toBe('active');
      // A refund of the subscription's payment: unpaid at once, not final; the next renewal pays.
      const refund = fixtureEvent('stripe', 'charge.refunded', 8, (p) => {
        p.data.object.id = 'ch_in_1';
        p.data.object.payment_intent = 'pi_in_1';
      });
      expect((await send(connector, refund)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await send(connector, invoice(20, 'in_2'))).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect(await licensesOf(project.id)).toHaveLength(1);
    });

    it('paddle: approved adjustments (refund, chargeback) close at once, chargeback_reverse pays; partial and pending ones are ignored', async () => {
      const { project, connector } = await setup('paddle', { issue_licenses: true, grace_days: 5 });
      expect((await send(connector, fixtureEvent('paddle', 'transaction.completed', 0))).outcome).toBe(
        'applied',
      );
      const adjustment = (seconds: number, fields: Record<string, unknown>) =>
        dated(
          'paddle',
          {
            event_id: `evt_adj_${seconds}`,
            event_type: 'adjustment.created',
            occurred_at: '',
            notification_id: `ntf_adj_${seconds}`,
            data: {
              id: `adj_${seconds}`,
              action: 'refund',
              type: 'full',
              transaction_id: 'txn_01hv8wptq8987qeep44cyrewp9',
              subscription_id: 'sub_01hv8x29kz0t586xy6zn1a62ny',
              customer_id: 'ctm_01hv6y1jedq4p1n0yqn5ba3ky4',
              reason: 'error',
              currency_code: 'USD',
              status: 'approved',
              items: [{ item_id: 'txnitm_1', type: 'full', amount: '4900' }],
              ...fields,
            },
          },
          seconds,
        );
      expect((await send(connector, adjustment(1, { status: 'pending_approval' }))).outcome).toBe('ignored');
      expect(
        (await send(connector, adjustment(2, { type: 'partial', items: [{ type: 'partial' }] }))).outcome,
      ).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'adjustment.created (refund) for part of the amount: only a full refund stops payment.',
      );
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect((await send(connector, adjustment(3, {}))).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await purchasesOf(connector.id))[0].status).toBe('refunded');
      expect((await send(connector, adjustment(4, { action: 'chargeback' }))).outcome).toBe('applied');
      expect((await purchasesOf(connector.id))[0].status).toBe('disputed');
      expect((await send(connector, adjustment(5, { action: 'chargeback_reverse' }))).outcome).toBe(
        'applied',
      );
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect((await purchasesOf(connector.id))[0].status).toBe('active');
    });

    it('lemon squeezy: order_refunded through the order id, subscription_payment_refunded through its subscription', async () => {
      const { project, connector } = await setup('lemonsqueezy', { issue_licenses: true, grace_days: 5 });
      expect((await send(connector, fixtureEvent('lemonsqueezy', 'order_created', 0))).outcome).toBe(
        'applied',
      );
      expect((await purchasesOf(connector.id)).map((p) => [p.kind, p.reference])).toEqual([
        ['order', '1001'],
      ]);
      // The subscription whose order_id names the order: the same purchase, now named by the subscription.
      expect((await send(connector, fixtureEvent('lemonsqueezy', 'subscription_created', 1))).outcome).toBe(
        'applied',
      );
      expect((await purchasesOf(connector.id)).map((p) => [p.kind, p.reference])).toEqual([
        ['subscription', '2002'],
      ]);
      expect(await licensesOf(project.id)).toHaveLength(1);
      expect((await send(connector, fixtureEvent('lemonsqueezy', 'order_refunded', 2))).outcome).toBe(
        'applied',
      );
      expect((await licensesOf(project.id))[0]).toMatchObject({ has_paid: false, grace_until: null });
      // Not final for a subscription: the next payment pays again.
      const renewal = (seconds: number, type = 'subscription_payment_success') => {
        const p = fixture('lemonsqueezy', 'subscription_payment_success');
        p.meta.event_name = type;
        return dated('lemonsqueezy', p, seconds);
      };
      expect((await send(connector, renewal(3))).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      const partial = renewal(4, 'subscription_payment_refunded');
      partial.data.attributes.refunded_amount = 100;
      expect((await send(connector, partial)).outcome).toBe('ignored');
      const full = renewal(5, 'subscription_payment_refunded');
      full.data.attributes.refunded_amount = 4900;
      expect((await send(connector, full)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await purchasesOf(connector.id))[0].status).toBe('refunded');
    });

    it('polar: order.refunded in full closes a one-time order for good; a partial one is ignored', async () => {
      const { project, connector } = await setup('polar', { issue_licenses: true, grace_days: 5 });
      const oneTime = (name: string, seconds: number, change?: (p: Payload) => void) =>
        fixtureEvent('polar', name, seconds, (p) => {
          delete p.data.subscription_id;
          change?.(p);
        });
      expect((await send(connector, oneTime('order.paid', 0))).outcome).toBe('applied');
      const partial = oneTime('order.refunded', 1, (p) => (p.data.refunded_amount = 1000));
      expect((await send(connector, partial)).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'order.refunded for part of the amount: only a full refund stops payment.',
      );
      const full = oneTime('order.refunded', 2, (p) => (p.data.refunded_amount = 4900));
      expect((await send(connector, full)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await purchasesOf(connector.id))[0]).toMatchObject({ kind: 'order', status: 'refunded' });
      expect((await send(connector, oneTime('order.paid', 3))).outcome).toBe('stale');
    });

    it('standard: payment.refunded names its purchase by data.reference; an unknown reference is ignored', async () => {
      const { project, connector } = await setup('standard', { grace_days: 5 });
      const unknown = fixtureEvent(
        'standard',
        'payment.refunded',
        0,
        (p) => (p.data.reference = 'ord_unknown'),
      );
      expect((await send(connector, unknown)).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'payment.refunded names the order "ord_unknown", which no purchase of this connector has: nothing changed.',
      );
      expect((await send(connector, fixtureEvent('standard', 'payment.succeeded', 1))).outcome).toBe(
        'applied',
      );
      expect((await send(connector, fixtureEvent('standard', 'payment.refunded', 2))).outcome).toBe(
        'applied',
      );
      const domains = expectSuccess(await api().get(`/project/${project.id}/domains`)).data as Payload[];
      expect(domains[0]).toMatchObject({ has_paid: false, grace_until: null });
    });
  });

  it('an order and a subscription of one number are two purchases, each with its license', async () => {
    const { project, connector } = await setup('lemonsqueezy', { issue_licenses: true });
    await send(connector, fixtureEvent('lemonsqueezy', 'subscription_created', 0));
    // Another buyer's order whose id is the subscription's number.
    const order = fixtureEvent('lemonsqueezy', 'order_created', 1, (p) => {
      p.data.id = '2002';
      p.data.attributes.user_email = 'other@example.com';
    });
    expect((await send(connector, order)).outcome).toBe('applied');
    expect(
      (await licensesOf(project.id)).map((l) => [l.payment_reference_kind, l.payment_reference_id]),
    ).toEqual([
      ['subscription', '2002'],
      ['order', '2002'],
    ]);
  });

  it('with issue_licenses, an event that names no purchase moves no project or domain', async () => {
    const { project, connector } = await setup('standard', { issue_licenses: true, grace_days: 0 });
    const bare = fixtureEvent('standard', 'payment.failed', 0, (p) => delete p.data.reference);
    expect((await send(connector, bare)).outcome).toBe('ignored');
    expect((await latest(project.id, connector.id)).detail).toBe(
      'The event names no purchase, so it reaches no license: a connector that issues licenses moves no project or domain.',
    );
    const domains = expectSuccess(await api().get(`/project/${project.id}/domains`)).data as Payload[];
    expect(domains[0].has_paid).toBe(true);
  });

  describe("the providers' own refund and dispute payloads", () => {
    it('paddle: a partial refund pending, then approved, moves nothing', async () => {
      const { project, connector } = await setup('paddle', { issue_licenses: true });
      await send(connector, fixture('paddle', 'transaction.completed'));
      expect((await send(connector, fixture('paddle', 'adjustment.created'))).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'adjustment.created with status "pending_approval": an adjustment moves nothing until it is approved.',
      );
      expect((await send(connector, fixture('paddle', 'adjustment.updated'))).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'adjustment.updated (refund) for part of the amount: only a full refund stops payment.',
      );
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
    });

    it('stripe: a dispute, then the dispute won', async () => {
      const { project, connector } = await setup('stripe', { issue_licenses: true });
      await send(connector, fixture('stripe', 'checkout.session.async_payment_succeeded'));
      expect((await send(connector, fixture('stripe', 'charge.dispute.created'))).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      expect((await send(connector, fixture('stripe', 'charge.dispute.closed'))).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(true);
      expect((await purchasesOf(connector.id))[0].status).toBe('paid');
    });

    it('lemon squeezy: a subscription payment refunded in full', async () => {
      const { project, connector } = await setup('lemonsqueezy', { issue_licenses: true });
      await send(connector, fixture('lemonsqueezy', 'order_created'));
      await send(connector, fixtureEvent('lemonsqueezy', 'subscription_created', 60));
      expect((await send(connector, fixture('lemonsqueezy', 'subscription_payment_refunded'))).outcome).toBe(
        'applied',
      );
      expect((await licensesOf(project.id))[0]).toMatchObject({ has_paid: false, grace_until: null });
      expect((await purchasesOf(connector.id))[0]).toMatchObject({ reference: '2002', status: 'refunded' });
    });
  });

  describe('what the vendor did stays', () => {
    it('a vendor-revoked license stays revoked: later events are ignored with the reason, no new license', async () => {
      const { project, connector } = await setup('paddle', { issue_licenses: true, grace_days: 0 });
      await send(connector, fixtureEvent('paddle', 'subscription.activated', 0));
      const [license] = await licensesOf(project.id);
      expectSuccess(await api().post(`/project/${project.id}/licenses/${license.id}/revoke`), 200);
      expect((await send(connector, fixtureEvent('paddle', 'subscription.updated', 10))).outcome).toBe(
        'ignored',
      );
      expect((await latest(project.id, connector.id)).detail).toBe(
        `License ${license.id} was revoked by the vendor: it stays revoked, whatever the provider sends.`,
      );
      // The purchase still records the event.
      expect((await purchasesOf(connector.id))[0].last_event_type).toBe('subscription.updated');
      expect(await licensesOf(project.id)).toHaveLength(1);
      expect((await licensesOf(project.id))[0].revoked_at).not.toBeNull();
    });

    it('a deleted license is not issued again; its purchase keeps the row with license_deleted_at', async () => {
      const { project, connector } = await setup('polar', { issue_licenses: true });
      await send(connector, fixtureEvent('polar', 'subscription.active', 0));
      const [license] = await licensesOf(project.id);
      expectSuccess(await api().delete(`/project/${project.id}/licenses/${license.id}`), 200);
      // Marked at once, before any event arrives.
      expect((await purchasesOf(connector.id))[0].license_deleted_at).not.toBeNull();
      expect((await send(connector, fixtureEvent('polar', 'order.paid', 10))).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        `License ${license.id} of this purchase was deleted: nothing changed, and no license is issued for it again.`,
      );
      expect(await licensesOf(project.id)).toEqual([]);
      const [row] = await purchasesOf(connector.id);
      expect(row.license_id).toBe(license.id);
      expect(row.license_deleted_at).not.toBeNull();
    });

    it('a billing: project license that payment revoked is reactivated by a paid event, with revoked_by payment', async () => {
      const { project, connector } = await setup('stripe', { issue_licenses: true, grace_days: 0 });
      await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0));
      const [license] = await licensesOf(project.id);
      // A license issued before licenses carried their own payment.
      await db().query("UPDATE licenses SET billing = 'project' WHERE id = ?", [license.id]);
      expect(
        (await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 1))).outcome,
      ).toBe('applied');
      expect((await licensesOf(project.id))[0]).toMatchObject({ revoked_by: 'payment' });
      expect((await licensesOf(project.id))[0].revoked_at).not.toBeNull();
      const domains = expectSuccess(await api().get(`/project/${project.id}/domains`)).data as Payload[];
      expect(domains[0].has_paid).toBe(false);
      const renewed = fixtureEvent(
        'stripe',
        'customer.subscription.updated',
        2,
        (p) => (p.data.object.status = 'active'),
      );
      expect((await send(connector, renewed)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0]).toMatchObject({ revoked_at: null, revoked_by: null });
      expect((await latest(project.id, connector.id)).detail).toContain(
        `License ${license.id} is reactivated.`,
      );
    });
  });

  describe('products', () => {
    it('validates, stores and answers the list', async () => {
      const project = await makeProject(t, key);
      // A product's plan is the code of a plan of the project.
      expectSuccess(await api().post(`/project/${project.id}/plans`, { code: 'pro', name: 'Pro' }), 201);
      const products = ['price_1', { id: 'prod_2', plan: 'pro' }];
      const connector = await makeConnector(t, key, project.id, 'stripe', { products });
      expect(connector.products).toEqual(products);
      expect(connector.match_customers_by_email).toBe(false);
      const bad = async (value: unknown) =>
        expectError(
          await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, { products: value }),
          422,
        ).errors;
      for (const value of [
        'price_1',
        [''],
        [{ id: 'p' }],
        [{ id: 'p', plan: 'x', extra: 1 }],
        Array.from({ length: 201 }, (_, i) => `price_${i}`),
      ])
        expect(await bad(value)).toEqual({ products: [PRODUCTS_INVALID] });
      const cleared = expectSuccess(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
          products: null,
          match_customers_by_email: true,
        }),
      );
      expect(cleared).toMatchObject({ products: [], match_customers_by_email: true });
      // null leaves it as it is, as it does issue_licenses and grace_days: not a 500.
      const kept = expectSuccess(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
          match_customers_by_email: null,
          issue_licenses: null,
        }),
      );
      expect(kept).toMatchObject({
        match_customers_by_email: true,
        issue_licenses: connector.issue_licenses,
      });
    });

    it('ignores events of other products; invoices follow their subscription; refunds follow their reference', async () => {
      const { project, connector } = await setup('stripe', {
        issue_licenses: true,
        grace_days: 0,
        products: ['price_1'],
      });
      const other = fixtureEvent('stripe', 'customer.subscription.created', 0, (p) => {
        p.data.object.id = 'sub_other';
        p.data.object.items.data[0].price = { id: 'price_9', product: 'prod_9' };
      });
      expect((await send(connector, other)).outcome).toBe('ignored');
      expect((await latest(project.id, connector.id)).detail).toBe(
        'Not one of this connector\'s products (the event names "price_9", "prod_9"): nothing changed.',
      );
      const otherInvoice = fixtureEvent(
        'stripe',
        'invoice.paid',
        1,
        (p) => (p.data.object.subscription = 'sub_other'),
      );
      expect((await send(connector, otherInvoice)).outcome).toBe('ignored');
      expect(
        (await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 2))).outcome,
      ).toBe('applied');
      expect((await send(connector, fixtureEvent('stripe', 'invoice.paid', 3))).outcome).toBe('applied');
      expect(await licensesOf(project.id)).toHaveLength(1);
      expect((await purchasesOf(connector.id)).map((p) => [p.reference, p.product_ids])).toEqual([
        ['sub_1QdH6s', ['price_1']],
      ]);
      const refund = fixtureEvent(
        'stripe',
        'charge.refunded',
        4,
        (p) => (p.data.object.invoice = 'in_1QdInv'),
      );
      expect((await send(connector, refund)).outcome).toBe('applied');
      expect((await licensesOf(project.id))[0].has_paid).toBe(false);
      // A Checkout Session by metadata.licensegate_product.
      const session = fixtureEvent('stripe', 'checkout.session.async_payment_succeeded', 5, (p) => {
        p.data.object.id = 'cs_listed';
        p.data.object.payment_intent = 'pi_listed';
        p.data.object.metadata.licensegate_product = 'price_1';
      });
      expect((await send(connector, session)).outcome).toBe('applied');
      expect(await licensesOf(project.id)).toHaveLength(2);
    });
  });

  describe('customers', () => {
    it('finds by the provider id; by email only with match_customers_by_email and no id of this provider', async () => {
      const { project, connector } = await setup('polar', { issue_licenses: true });
      const buy = (order: string, customer: string, email: string, seconds: number) =>
        fixtureEvent('polar', 'order.paid', seconds, (p) => {
          p.data.id = order;
          delete p.data.subscription_id;
          p.data.customer_id = customer;
          p.data.customer = { id: customer, email, name: 'Jane' };
        });
      await send(connector, buy('o1', 'c1', 'Same@Example.com', 0));
      await send(connector, buy('o2', 'c1', 'other@example.com', 1));
      await send(connector, buy('o3', 'c2', 'same@example.com', 2));
      const customers = () =>
        db().query<Array<{ id: number; email: string }>>(
          'SELECT id, email FROM customers WHERE project_id = ? ORDER BY id',
          [project.id],
        );
      const [first, second] = await customers();
      expect((await customers()).map((c) => c.email)).toEqual(['same@example.com', 'same@example.com']);
      expect((await licensesOf(project.id)).map((l) => l.customer_id)).toEqual([
        first.id,
        first.id,
        second.id,
      ]);
      // A customer the vendor made (no Polar id): matched by email once the connector says so.
      const made = await db().query<unknown>(
        "INSERT INTO customers (project_id, email, name, created_at, updated_at) VALUES (?, 'vendor@example.com', NULL, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
        [project.id],
      );
      void made;
      const [vendorMade] = await db().query<Array<{ id: number }>>(
        "SELECT id FROM customers WHERE email = 'vendor@example.com' AND project_id = ?",
        [project.id],
      );
      await send(connector, buy('o4', 'c3', 'VENDOR@example.com', 3));
      expect((await licensesOf(project.id))[3].customer_id).not.toBe(vendorMade.id);
      expectSuccess(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
          match_customers_by_email: true,
        }),
      );
      await send(connector, buy('o5', 'c4', 'vendor@example.com', 4));
      expect((await licensesOf(project.id))[4].customer_id).toBe(vendorMade.id);
      const ids = await db().query<Array<{ external_id: string }>>(
        'SELECT external_id FROM customer_external_ids WHERE customer_id = ?',
        [vendorMade.id],
      );
      expect(ids.map((i) => i.external_id)).toEqual(['c4']);
      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log?per_page=50`))
        .data as Payload[];
      expect(audit.filter((r) => r.action === 'customer.created')).toHaveLength(3);
    });
  });

  describe('concurrency', () => {
    it('20 concurrent deliveries of one event: one purchase row, one license, one customer', async () => {
      const { project, connector } = await setup('lemonsqueezy', { issue_licenses: true });
      const payload = fixtureEvent('lemonsqueezy', 'order_created', 0);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => deliver(t, connector, payload, clock.nowMs())),
      );
      const outcomes = answers.map((r) => expectSuccess(r).outcome as string).sort();
      expect(outcomes.filter((o) => o === 'applied')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(19);
      expect(await purchasesOf(connector.id)).toHaveLength(1);
      expect(await licensesOf(project.id)).toHaveLength(1);
      const [{ n }] = await db().query<Array<{ n: number | string }>>(
        'SELECT COUNT(*) AS n FROM customers WHERE project_id = ?',
        [project.id],
      );
      expect(Number(n)).toBe(1);
    });

    it('a cancellation racing its purchase: one row each, canceled, whatever arrives first', async () => {
      const { project, connector } = await setup('stripe', { issue_licenses: true, grace_days: 0 });
      const subs = Array.from({ length: 8 }, (_, i) => `sub_race_${i}`);
      const sent = subs.flatMap((sub) => [
        fixtureEvent('stripe', 'customer.subscription.created', 0, (p) => (p.data.object.id = sub)),
        fixtureEvent('stripe', 'customer.subscription.deleted', 1, (p) => (p.data.object.id = sub)),
      ]);
      const answers = await Promise.all(sent.map((p) => deliver(t, connector, p, clock.nowMs())));
      for (const answer of answers)
        expect(['applied', 'stale', 'ignored']).toContain(expectSuccess(answer).outcome);
      const rows = await purchasesOf(connector.id);
      expect(rows.map((r) => r.reference).sort()).toEqual([...subs].sort());
      for (const row of rows) expect(row).toMatchObject({ status: 'canceled' });
      // A license exists only where the purchase came first, and then it is unpaid.
      for (const license of await licensesOf(project.id)) expect(license.has_paid).toBe(false);
    });
  });
});

describe('upgrading to purchases', () => {
  it('makes purchase rows from existing payment references and tells who revoked each license', async () => {
    const db = await databaseBefore(PaymentEngine1764500000000, async (before, { user, project }) => {
      for (const provider of ['stripe', 'lemonsqueezy'])
        await before.query(
          "INSERT INTO payment_connectors (project_id, provider, signing_secret, token_hash, token_sealed, issue_licenses, is_active, created_at, updated_at) VALUES (?, ?, 's', ?, 't', 1, 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
          [project.id, provider, `hash-${provider}`],
        );
      const license = (title: string, provider: string | null, reference: string | null, revoked: boolean) =>
        before.query(
          'INSERT INTO licenses (project_id, user_id, uuid, uuid_hash, title, payment_provider, payment_reference_id, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
          [
            project.id,
            user.id,
            `uuid-${title}`,
            `hash-${title}`,
            title,
            provider,
            reference,
            revoked ? '2026-01-02 00:00:00' : null,
          ],
        );
      await license('sub', 'stripe', 'sub_1', true);
      await license('session', 'stripe', 'cs_1', false);
      await license('order', 'lemonsqueezy', '1001', false);
      await license('vendor', null, null, true);
      const id = async (title: string) =>
        (await before.query<Array<{ id: number }>>('SELECT id FROM licenses WHERE title = ?', [title]))[0].id;
      const audit = async (licenseId: number, actor: string) =>
        before.query(
          "INSERT INTO audit_events (owner_id, project_id, action, resource_type, resource_id, actor_type, changes, created_at) VALUES (?, ?, 'license.revoked', 'license', ?, ?, '{}', '2026-01-02 00:00:00')",
          [user.id, project.id, licenseId, actor],
        );
      await audit(await id('sub'), 'payment');
      await audit(await id('vendor'), 'api_key');
    });
    let t: TestApp | undefined;
    try {
      t = await createTestApp({}, { databaseUrl: db.url });
      const licenses = await t.dataSource.query<
        Array<{
          title: string;
          revoked_by: string | null;
          payment_reference_kind: string | null;
          billing: string;
        }>
      >('SELECT title, revoked_by, payment_reference_kind, billing FROM licenses ORDER BY title');
      expect(licenses).toEqual([
        { title: 'order', revoked_by: null, payment_reference_kind: 'order', billing: 'project' },
        { title: 'session', revoked_by: null, payment_reference_kind: 'order', billing: 'project' },
        { title: 'sub', revoked_by: 'payment', payment_reference_kind: 'subscription', billing: 'project' },
        { title: 'vendor', revoked_by: 'vendor', payment_reference_kind: null, billing: 'project' },
      ]);
      const rows = await t.dataSource.query<
        Array<{ provider: string; kind: string; reference: string; status: string; target_kind: string }>
      >('SELECT provider, kind, reference, status, target_kind FROM subscriptions ORDER BY reference');
      expect(rows).toEqual([
        {
          provider: 'lemonsqueezy',
          kind: 'order',
          reference: '1001',
          status: 'paid',
          target_kind: 'license',
        },
        { provider: 'stripe', kind: 'order', reference: 'cs_1', status: 'paid', target_kind: 'license' },
        {
          provider: 'stripe',
          kind: 'subscription',
          reference: 'sub_1',
          status: 'canceled',
          target_kind: 'license',
        },
      ]);
      // The Lemon Squeezy order's id is kept: its subscription, when it arrives, names the same purchase.
      const kept = await t.dataSource.query<Array<{ payment_id: string }>>(
        'SELECT payment_id FROM subscription_payments',
      );
      expect(kept).toEqual([{ payment_id: '1001' }]);
    } finally {
      await t?.close();
      await db.drop();
    }
  });
});
