import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { makeAccount, makeApiKey, makeDomain, makeProject } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { deliver, fixture, makeConnector } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

describe("a payment event's payload (docs/payments.md#the-event-log)", () => {
  let t: TestApp;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';
  let userId = 0;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' }, { clock });
    const account = await makeAccount(t.app);
    key = account.key;
    userId = account.user.id;
  });
  afterAll(async () => t.close());

  it('stores the body with personal data redacted and answers it by id; the list has no payloads', async () => {
    const project = await makeProject(t, key);
    await makeDomain(t, key, project.id, { domain: 'shop.example.com' });
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const event = fixture('stripe', 'invoice.paid');
    event.data.object.customer_name = 'Ada Lovelace';
    event.data.object.customer_address = { line1: '1 Main St', city: 'London' };
    event.data.object.customer_shipping = { name: 'Ada', phone: '+44 20 0000 0000' };
    event.data.object.client_ip = '203.0.113.9';
    event.data.object.lines = [{ description: 'Pro plan', billing_details: { email: 'a@example.com' } }];
    expect((await deliver(t, connector, event, clock.nowMs())).status).toBe(200);

    const base = `/project/${project.id}/payment-connectors/${connector.id}/events`;
    const list = expectSuccess(await apiAs(t, key).get(base));
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).not.toHaveProperty('payload');
    const item = expectSuccess(await apiAs(t, key).get(`${base}/${list.data[0].id}`));
    expect(item).toEqual({ ...list.data[0], payload: expect.any(Object) });
    const object = item.payload.data.object;
    expect(object).toMatchObject({
      id: 'in_1QdInv',
      customer: 'cus_Qx1',
      customer_email: '[redacted]',
      customer_name: '[redacted]',
      customer_address: '[redacted]',
      customer_shipping: { name: '[redacted]', phone: '[redacted]' },
      client_ip: '[redacted]',
      subscription: 'sub_1QdH6s',
      lines: [{ description: 'Pro plan', billing_details: { email: '[redacted]' } }],
      subscription_details: { metadata: { licensegate_domain: 'shop.example.com' } },
    });
    expect(item.payload.id).toBe('evt_1QdInvoicePaid');
    const [row] = await t.app
      .get(DataSource)
      .query('SELECT payload FROM payment_events WHERE id = ?', [item.id]);
    expect(String(row.payload)).not.toMatch(
      /buyer@example\.com|Ada Lovelace|203\.0\.113\.9|1 Main St|Stripe-Signature|v1=/,
    );
  });

  it('stores a body over 64 KiB as {"truncated": true}, nesting past 64 levels as "[too deep]"', async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const event = { ...fixture('stripe', 'invoice.paid'), id: 'evt_big', pad: 'x'.repeat(70 * 1024) };
    expect((await deliver(t, connector, event, clock.nowMs())).status).toBe(200);
    const base = `/project/${project.id}/payment-connectors/${connector.id}/events`;
    const [listed] = expectSuccess(await apiAs(t, key).get(base)).data;
    expect(expectSuccess(await apiAs(t, key).get(`${base}/${listed.id}`)).payload).toEqual({
      truncated: true,
    });

    const deep = {
      ...fixture('stripe', 'invoice.paid'),
      id: 'evt_deep',
      nested: JSON.parse(`${'['.repeat(100)}${']'.repeat(100)}`) as unknown,
    };
    expect((await deliver(t, connector, deep, clock.nowMs())).status).toBe(200);
    const [latest] = expectSuccess(await apiAs(t, key).get(base)).data;
    let level: unknown = expectSuccess(await apiAs(t, key).get(`${base}/${latest.id}`)).payload.nested;
    let depth = 1;
    while (Array.isArray(level)) [level, depth] = [level[0], depth + 1];
    expect({ level, depth }).toEqual({ level: '[too deep]', depth: 64 });
  });

  it("answers 404 for another connector's or project's event, null for rows stored before payloads; a read-only key reads it", async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const other = await makeProject(t, key);
    const otherConnector = await makeConnector(t, key, other.id, 'stripe');
    expect((await deliver(t, otherConnector, fixture('stripe', 'invoice.paid'), clock.nowMs())).status).toBe(
      200,
    );
    const otherBase = `/project/${other.id}/payment-connectors/${otherConnector.id}/events`;
    const [foreign] = expectSuccess(await apiAs(t, key).get(otherBase)).data;
    const base = `/project/${project.id}/payment-connectors/${connector.id}/events`;
    expect(expectError(await apiAs(t, key).get(`${base}/${foreign.id}`), 404).message).toBe(
      'Event not found.',
    );
    expect(expectError(await apiAs(t, key).get(`${base}/999999`), 404).message).toBe('Event not found.');
    // The event's connector through another project's path: the connector is not in that project.
    expectError(
      await apiAs(t, key).get(
        `/project/${project.id}/payment-connectors/${otherConnector.id}/events/${foreign.id}`,
      ),
      404,
    );

    await t.app.get(DataSource).query('UPDATE payment_events SET payload = NULL WHERE id = ?', [foreign.id]);
    const user = (await t.app.get(DataSource).query('SELECT * FROM users WHERE id = ?', [userId]))[0];
    const readOnly = await makeApiKey(t.app, user, { read_only: true });
    expect(expectSuccess(await apiAs(t, readOnly).get(`${otherBase}/${foreign.id}`)).payload).toBeNull();
  });
});
