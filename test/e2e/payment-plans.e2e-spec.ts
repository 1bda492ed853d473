import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { Connector, deliver, fixtureEvent, makeConnector, Payload } from '../utils/payments.js';
import { outboxData } from '../utils/outbox.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** The subscription's current item: another price (an upgrade or a downgrade), paid. */
const onPrice = (price: string) => (p: Payload) => {
  p.data.object.status = 'active';
  p.data.object.items.data[0].price = { id: price, product: `prod_of_${price}` };
};

describe('plans from payments: connector products that grant a plan', () => {
  let t: TestApp;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' }, { clock });
    key = (await makeAccount(t.app)).key;
  });
  afterAll(async () => t.close());

  const api = () => apiAs(t, key);
  const send = async (connector: Connector, payload: object) =>
    (expectSuccess(await deliver(t, connector, payload, clock.nowMs())) as { outcome: string }).outcome;

  /** A paid project sending webhooks (kept in the outbox) with plans basic and pro. */
  async function setup() {
    const project = await makeProject(t, key, {
      has_paid: true,
      webhook_url: 'http://127.0.0.1:9/hook',
      webhook_secret: `whsec_${uniqueToken()}${uniqueToken()}`,
    });
    const plan = async (code: string) =>
      expectSuccess(await api().post(`/project/${project.id}/plans`, { code, name: code }), 201) as {
        id: number;
      };
    return { project, basic: await plan('basic'), pro: await plan('pro') };
  }
  /** A Stripe connector that issues licenses, price_1 granting plan basic and price_2 plan pro. */
  const issuingConnector = (projectId: number) =>
    makeConnector(t, key, projectId, 'stripe', {
      issue_licenses: true,
      products: [
        { id: 'price_1', plan: 'basic' },
        { id: 'price_2', plan: 'pro' },
      ],
    });
  const events = (projectId: number, type: string) => outboxData(t, projectId, type);
  const audits = async (projectId: number, action: string) =>
    t.dataSource.query<Array<{ actor_type: string }>>(
      'SELECT actor_type FROM audit_events WHERE project_id = ? AND action = ? ORDER BY id',
      [projectId, action],
    );
  const licenses = async (projectId: number) =>
    (expectSuccess(await api().get(`/project/${projectId}/licenses`)) as { data: Payload[] }).data;

  describe('validation', () => {
    it('refuses a product whose plan is not a plan of the project (422 on products)', async () => {
      const { project } = await setup();
      const other = await setup();
      expectSuccess(
        await api().post(`/project/${other.project.id}/plans`, { code: 'gold', name: 'Gold' }),
        201,
      );
      const body = (products: unknown) => ({
        provider: 'stripe',
        signing_secret: `whsec_${uniqueToken()}${uniqueToken()}`,
        products,
      });
      const refused = expectError(
        await api().post(
          `/project/${project.id}/payment-connectors`,
          body(['price_1', { id: 'price_2', plan: 'gold' }]),
        ),
        422,
      );
      expect(refused.errors).toEqual({
        products: ['The plan "gold" in products is not a plan of this project.'],
      });
      const connector = await makeConnector(t, key, project.id, 'stripe', {
        products: [{ id: 'price_2', plan: 'pro' }],
      });
      expect(connector.products).toEqual([{ id: 'price_2', plan: 'pro' }]);
      const patched = expectError(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
          products: [
            { id: 'price_2', plan: 'pro' },
            { id: 'price_3', plan: 'platinum' },
          ],
        }),
        422,
      );
      expect(patched.errors).toEqual({
        products: ['The plan "platinum" in products is not a plan of this project.'],
      });
    });

    it('refuses to delete a plan the products of a connector name (409), then deletes it once they do not', async () => {
      const { project, basic, pro } = await setup();
      const connector = await makeConnector(t, key, project.id, 'stripe', {
        products: ['price_1', { id: 'price_2', plan: 'pro' }],
      });
      const refused = expectError(await api().delete(`/project/${project.id}/plans/${pro.id}`), 409);
      expect(refused.message).toBe(
        'The plan cannot be deleted: 1 payment connector names it in its products.',
      );
      expectSuccess(await api().delete(`/project/${project.id}/plans/${basic.id}`));
      expectSuccess(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
          products: ['price_1', 'price_2'],
        }),
      );
      expectSuccess(await api().delete(`/project/${project.id}/plans/${pro.id}`));
    });
  });

  describe('paid events', () => {
    it('issues the license on the plan, then follows an upgrade once: audited with the payment actor', async () => {
      const { project, basic, pro } = await setup();
      const connector = await issuingConnector(project.id);
      expect(await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0))).toBe(
        'applied',
      );
      const [issued] = await licenses(project.id);
      expect(issued).toMatchObject({ plan_id: basic.id, plan: { id: basic.id, code: 'basic' } });
      expect(await events(project.id, 'license.plan_changed')).toEqual([]);

      // The same items again (an invoice, a renewal): the plan stays, nothing announced.
      expect(await send(connector, fixtureEvent('stripe', 'invoice.paid', 1))).toBe('applied');
      expect(await events(project.id, 'license.plan_changed')).toEqual([]);

      const upgrade = fixtureEvent('stripe', 'customer.subscription.updated', 2, onPrice('price_2'));
      expect(await send(connector, upgrade)).toBe('applied');
      // A redelivery changes nothing more.
      expect(await send(connector, upgrade)).toBe('duplicate');
      const [moved] = await licenses(project.id);
      expect(moved).toMatchObject({ id: issued.id, plan_id: pro.id, plan: { code: 'pro' } });
      expect(await events(project.id, 'license.plan_changed')).toEqual([
        { license_id: issued.id, project_id: project.id, from: 'basic', to: 'pro' },
      ]);
      expect(await audits(project.id, 'license.plan_changed')).toEqual([{ actor_type: 'payment' }]);

      // And back down.
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 3, onPrice('price_1'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: basic.id });
      expect((await events(project.id, 'license.plan_changed')).at(-1)).toEqual({
        license_id: issued.id,
        project_id: project.id,
        from: 'pro',
        to: 'basic',
      });
      expect(await audits(project.id, 'license.plan_changed')).toHaveLength(2);
      expect(await licenses(project.id)).toHaveLength(1);
    });

    it('follows the items only when they change: a plan set by hand stays through a renewal', async () => {
      const { project, basic, pro } = await setup();
      const connector = await issuingConnector(project.id);
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0, onPrice('price_1'))),
      ).toBe('applied');
      const [issued] = await licenses(project.id);
      expect(issued).toMatchObject({ plan_id: basic.id });
      // The vendor moves the buyer to pro by hand.
      expectSuccess(await api().patch(`/project/${project.id}/licenses/${issued.id}`, { plan_id: pro.id }));
      // A later paid event with the same items (still price_1) leaves the vendor's choice.
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 1, onPrice('price_1'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: pro.id });
      // The items change to price_2 and back to price_1: the plan follows the change.
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 2, onPrice('price_2'))),
      ).toBe('applied');
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 3, onPrice('price_1'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: basic.id });
    });

    it('a product listed without a plan, or none matched, leaves the plan alone', async () => {
      const { project, pro } = await setup();
      const connector = await makeConnector(t, key, project.id, 'stripe', {
        issue_licenses: true,
        products: ['price_1', { id: 'price_2', plan: 'pro' }],
      });
      expect(await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0))).toBe(
        'applied',
      );
      const [issued] = await licenses(project.id);
      expect(issued).toMatchObject({ plan_id: null, plan: null });

      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 1, onPrice('price_2'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: pro.id });

      // Back to the product without a plan: the plan stays.
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 2, onPrice('price_1'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: pro.id });

      // A connector that lists no products matches none: the plan stays.
      expectSuccess(
        await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, { products: [] }),
      );
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 3, onPrice('price_9'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: pro.id });
      expect(await events(project.id, 'license.plan_changed')).toEqual([
        { license_id: issued.id, project_id: project.id, from: null, to: 'pro' },
      ]);
      expect(await audits(project.id, 'license.plan_changed')).toHaveLength(1);
    });

    it('a plan renamed since the connector named it is left alone, with the reason in the event log', async () => {
      const { project, basic, pro } = await setup();
      const connector = await issuingConnector(project.id);
      await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0));
      expectSuccess(await api().patch(`/project/${project.id}/plans/${pro.id}`, { code: 'pro-2' }));
      expect(
        await send(connector, fixtureEvent('stripe', 'customer.subscription.updated', 1, onPrice('price_2'))),
      ).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: basic.id });
      const log = expectSuccess(
        await api().get(`/project/${project.id}/payment-connectors/${connector.id}/events`),
      ) as { data: Payload[] };
      expect(log.data[0].detail).toContain(
        'The plan "pro" of product "price_2" is not a plan of this project: the plan is left as it is.',
      );
      expect(await events(project.id, 'license.plan_changed')).toEqual([]);
    });

    it('an unpaid event leaves the plan alone', async () => {
      const { project, basic } = await setup();
      const connector = await issuingConnector(project.id);
      await send(connector, fixtureEvent('stripe', 'customer.subscription.created', 0));
      const pastDue = fixtureEvent('stripe', 'customer.subscription.updated', 1, (p) => {
        p.data.object.items.data[0].price = { id: 'price_2', product: 'prod_2' };
      });
      expect(await send(connector, pastDue)).toBe('applied');
      expect((await licenses(project.id))[0]).toMatchObject({ plan_id: basic.id });
      expect(await events(project.id, 'license.plan_changed')).toEqual([]);
    });
  });
});
