import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { PaymentGrace } from '../../src/payments/payment-grace.service.js';
import { makeAccount, makeDomain, makeProject } from '../factories/index.js';
import { ManualClock } from '../utils/clock.js';
import { DbProxy } from '../utils/db-proxy.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { Connector, deliver, fixture, makeConnector } from '../utils/payments.js';
import { createTestApp, createTestDatabase, TestApp } from '../utils/test-app.js';

const DAY_MS = 86_400_000;

/**
 * Payment connectors on MariaDB (docs/payments.md): two instances on one database and one Redis, each
 * with its grace scheduler, close a grace exactly once; concurrent deliveries race on the unique
 * index; a database that goes away during a receipt answers 503 and the provider's retry applies it.
 */
describe('payment connectors on MariaDB', () => {
  let db: { url: string; drop: () => Promise<void> };
  let proxy: DbProxy;
  const apps: TestApp[] = [];
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await DbProxy.start(db.url);
    const env = {
      WEBHOOK_DISPATCHER: 'false',
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/2',
      REDIS_KEY_PREFIX: `lgpay${randomBytes(4).toString('hex')}:`,
    };
    // The first instance runs the migrations and reaches the database through the proxy.
    apps.push(await createTestApp(env, { databaseUrl: proxy.urlFor(db.url), clock }));
    apps.push(await createTestApp(env, { databaseUrl: db.url, clock }));
    key = (await makeAccount(apps[0].app)).key;
  }, 60_000);

  afterAll(async () => {
    await proxy?.pass();
    for (const app of apps) await app.close();
    await proxy?.close();
    await db?.drop();
  });

  async function setup(graceDays: number, issueLicenses = false) {
    const t = apps[1];
    const project = await makeProject(t, key, { has_paid: true });
    const domain = await makeDomain(t, key, project.id, { domain: 'shop.example.com', has_paid: true });
    const connector = await makeConnector(t, key, project.id, 'stripe', {
      grace_days: graceDays,
      issue_licenses: issueLicenses,
    });
    return { project, domain, connector };
  }
  const send = (i: number, connector: Connector, payload: object) =>
    deliver(apps[i], connector, payload, clock.nowMs());
  const domainOf = async (projectId: number, domainId: number) =>
    expectSuccess(
      await apps[1].http().get(`/api/v1/project/${projectId}/domains/${domainId}`).set('X-API-KEY', key),
    );

  it('two instances and two schedulers close one grace exactly once', async () => {
    const graces: Array<{ projectId: number; domainId: number }> = [];
    for (let i = 0; i < 5; i++) {
      const { project, domain, connector } = await setup(1);
      const event = fixture('stripe', 'customer.subscription.deleted');
      event.id = `evt_deleted_${i}`;
      expect(expectSuccess(await send(i % 2, connector, event)).outcome).toBe('applied');
      graces.push({ projectId: project.id, domainId: domain.id });
    }
    clock.advance(DAY_MS + 1000);
    const schedulers = apps.map((t) => t.app.get(PaymentGrace));
    // Both schedulers of both instances, twice each, at once.
    const claimed = await Promise.all([...schedulers, ...schedulers].map((s) => s.tick()));
    expect(claimed.reduce((a, b) => a + b, 0)).toBe(5);
    for (const { projectId, domainId } of graces) {
      expect(await domainOf(projectId, domainId)).toMatchObject({ has_paid: false, grace_until: null });
      const audit = expectSuccess(
        await apps[0].http().get(`/api/v1/project/${projectId}/audit-log`).set('X-API-KEY', key),
      ).data as Array<{ action: string }>;
      expect(audit.filter((row) => row.action === 'domain.unpaid')).toHaveLength(1);
    }
  }, 60_000);

  it('20 concurrent deliveries of one event over two instances are applied once, with one license', async () => {
    const { project, connector } = await setup(3, true);
    const payload = fixture('stripe', 'checkout.session.completed');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i % 2, connector, payload)));
    const outcomes = answers.map((res) => expectSuccess(res).outcome as string).sort();
    expect(outcomes).toEqual(['applied', ...Array<string>(19).fill('duplicate')]);
    // Another event of the same subscription, at the same time from both instances: still one license.
    const invoices = await Promise.all(
      [0, 1].map((i) => {
        const invoice = fixture('stripe', 'invoice.paid');
        invoice.id = `evt_invoice_${i}`;
        return send(i, connector, invoice);
      }),
    );
    for (const res of invoices) expect(expectSuccess(res).outcome).toBe('applied');
    const licenses = expectSuccess(
      await apps[0].http().get(`/api/v1/project/${project.id}/licenses`).set('X-API-KEY', key),
    ).data as unknown[];
    expect(licenses).toHaveLength(1);
  }, 60_000);

  it('a database away during the receipt answers 503; the retry later applies it', async () => {
    const { project, domain, connector } = await setup(0);
    const payload = fixture('stripe', 'customer.subscription.deleted');
    payload.id = 'evt_outage';
    // The server gets the event's INSERT; its answer, and everything after, is held.
    proxy.pauseAfter(/INSERT INTO `payment_events`/);
    const away = await send(0, connector, payload);
    expectError(away, 503);
    expect(away.headers['retry-after']).toBeDefined();
    await proxy.pass();
    expect((await domainOf(project.id, domain.id)).has_paid).toBe(true);
    const retried = await send(0, connector, payload);
    expect(expectSuccess(retried).outcome).toBe('applied');
    expect((await domainOf(project.id, domain.id)).has_paid).toBe(false);
    expect(expectSuccess(await send(1, connector, payload)).outcome).toBe('duplicate');
  }, 60_000);
});
