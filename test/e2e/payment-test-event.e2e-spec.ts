import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { READ_ONLY } from '../../src/auth/api-key.guard.js';
import { PROJECT_LOCKED } from '../../src/common/http/errors.js';
import {
  TEST_EVENT_INVALID,
  TEST_TARGET_NEEDS_PAYMENT,
  TEST_TARGET_TWICE,
} from '../../src/payments/dto/payment-connector.dto.js';
import {
  CONNECTOR_PAUSED,
  testLicenseBilledByProject,
  testTargetNotFound,
} from '../../src/payments/payment-test-events.service.js';
import { makeAccount, makeApiKey, makeDomain, makeLicense, makeProject } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { ManualClock } from '../utils/clock.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { deliver, fixture, makeConnector, PROVIDER_LIST, ProviderName } from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/** The type of each provider's sample event: one it sends, that moves nothing. */
const SAMPLE_TYPES: Record<ProviderName, string> = {
  stripe: 'customer.created',
  paddle: 'customer.created',
  lemonsqueezy: 'license_key_created',
  polar: 'customer.created',
  standard: 'contact.created',
};
/** Each provider's own paying event type: what a test payment sends. */
const PAID_TYPES: Record<ProviderName, string> = {
  stripe: 'checkout.session.completed',
  paddle: 'transaction.completed',
  lemonsqueezy: 'order_created',
  polar: 'order.paid',
  standard: 'payment.succeeded',
};
const NOT_FOUND = 'Payment connector not found.';

describe('a payment connector test event', () => {
  let t: TestApp;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';
  let readOnly = '';

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false' }, { clock });
    const account = await makeAccount(t.app);
    key = account.key;
    readOnly = await makeApiKey(t.app, account.user, { read_only: true });
  });
  afterAll(async () => t.close());

  const api = (k = key) => apiAs(t, k);
  const testEvent = (projectId: number, connectorId: number, k = key, body?: object) => {
    const req = api(k).post(`/project/${projectId}/payment-connectors/${connectorId}/test-event`);
    return body === undefined ? req : req.send(body);
  };
  const testPayment = (projectId: number, connectorId: number, target: object = {}) =>
    testEvent(projectId, connectorId, key, { event: 'payment', ...target });
  /** A Stripe checkout session completed now, its metadata naming a license. */
  const session = (id: string, licenseId: unknown) => {
    const event = fixture('stripe', 'checkout.session.completed');
    event.id = `evt_${id}`;
    event.created = Math.floor(clock.nowMs() / 1000);
    event.data.object.id = `cs_${id}`;
    event.data.object.subscription = `sub_${id}`;
    event.data.object.metadata = { licensegate_license: licenseId };
    return event;
  };
  const hasPaid = (licenseKey: string, domain: string) =>
    t
      .http()
      .post('/api/v1/project/has-paid')
      .set('Accept', 'application/json')
      .set('X-LICENSE-KEY', licenseKey)
      .set('X-Service-Domain', domain);
  const eventsOf = async (projectId: number, connectorId: number) =>
    expectSuccess(await api().get(`/project/${projectId}/payment-connectors/${connectorId}/events`))
      .data as Array<Record<string, unknown>>;
  const paidState = async (projectId: number) => {
    const project = expectSuccess(await api().get(`/project/${projectId}`));
    return { has_paid: project.has_paid as boolean, grace_until: project.grace_until as string | null };
  };

  it.each(PROVIDER_LIST)(
    '%s: signed and received as a delivery, logged as ignored, no paid state moved',
    async (provider) => {
      for (const paid of [false, true]) {
        const project = await makeProject(t, key, { has_paid: paid });
        const connector = await makeConnector(t, key, project.id, provider);
        const before = await paidState(project.id);
        clock.advance(61_000);
        const at = clock.now().toISOString().replace('.000Z', 'Z');

        const result = expectSuccess(await testEvent(project.id, connector.id));
        const detail = `The event type ${SAMPLE_TYPES[provider]} is not one that moves has_paid.`;
        expect(result).toEqual({
          event_id: expect.any(String),
          event_type: SAMPLE_TYPES[provider],
          http_status: 200,
          outcome: 'ignored',
          detail,
          target: { kind: 'project', id: project.id },
        });
        expect(await eventsOf(project.id, connector.id)).toEqual([
          {
            id: expect.any(Number),
            provider_event_id: result.event_id,
            type: SAMPLE_TYPES[provider],
            outcome: 'ignored',
            target: { kind: 'project', id: project.id },
            detail,
            subscription_id: null,
            received_at: at,
          },
        ]);
        expect(await paidState(project.id)).toEqual(before);
        expect(before).toEqual({ has_paid: paid, grace_until: null });
        const after = expectSuccess(
          await api().get(`/project/${project.id}/payment-connectors/${connector.id}`),
        );
        expect(after.last_event_at).toBe(at);

        // Each test event is a new event, never a duplicate of the last.
        const again = expectSuccess(await testEvent(project.id, connector.id));
        expect(again).toMatchObject({ http_status: 200, outcome: 'ignored' });
        expect(again.event_id).not.toBe(result.event_id);
        expect((await eventsOf(project.id, connector.id)).map((e) => e.provider_event_id)).toEqual([
          again.event_id,
          result.event_id,
        ]);
      }
    },
  );

  it("signs with the connector's current secret: after a rotation, the old one no longer passes, the test event does", async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const rotated = 'whsec_rotated-secret-of-the-endpoint';
    expectSuccess(
      await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
        signing_secret: rotated,
      }),
    );
    const stale = await deliver(t, connector, fixture('stripe', 'customer.created'), clock.nowMs());
    expect(stale.status).toBe(401);
    expect(expectSuccess(await testEvent(project.id, connector.id))).toMatchObject({
      http_status: 200,
      outcome: 'ignored',
    });
    expect(await eventsOf(project.id, connector.id)).toHaveLength(1);
  });

  it('answers what a paused connector answers the provider, and stores nothing', async () => {
    const project = await makeProject(t, key);
    const connector = await makeConnector(t, key, project.id, 'paddle', { name: 'Paused' });
    expectSuccess(
      await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, { is_active: false }),
    );
    expect(expectSuccess(await testEvent(project.id, connector.id))).toEqual({
      event_id: expect.stringMatching(/^evt_[0-9a-z]{26}$/),
      event_type: 'customer.created',
      http_status: 404,
      outcome: null,
      detail: CONNECTOR_PAUSED,
      target: null,
    });
    expect(await eventsOf(project.id, connector.id)).toEqual([]);
    const connectorNow = expectSuccess(
      await api().get(`/project/${project.id}/payment-connectors/${connector.id}`),
    );
    expect(connectorNow.last_event_at).toBeNull();
  });

  it('is refused for a connector of another project (404), a read-only key and a locked project (403), storing nothing', async () => {
    const project = await makeProject(t, key);
    const other = await makeProject(t, key);
    const connector = await makeConnector(t, key, other.id, 'standard');

    expect(expectError(await testEvent(project.id, connector.id), 404).message).toBe(NOT_FOUND);
    expect(expectError(await testEvent(project.id, 2_147_000_000), 404).message).toBe(NOT_FOUND);
    expect(expectError(await testEvent(other.id, connector.id, readOnly), 403).message).toBe(READ_ONLY);
    expectSuccess(await api().post(`/project/${other.id}/lock`, {}));
    expect(expectError(await testEvent(other.id, connector.id), 403).message).toBe(PROJECT_LOCKED);
    expect(await eventsOf(other.id, connector.id)).toEqual([]);
  });

  it.each(PROVIDER_LIST)(
    '%s: a test payment marks a license, a domain or the project paid, applied as a real payment',
    async (provider) => {
      const project = await makeProject(t, key, { has_paid: false });
      const domain = await makeDomain(t, key, project.id, { has_paid: false });
      const license = await makeLicense(t, key, project.id, { billing: 'license', has_paid: false });
      const connector = await makeConnector(t, key, project.id, provider);
      expect((await hasPaid(license.uuid as string, 'buyer.example.org')).body.data.has_paid).toBe(false);

      clock.advance(61_000);
      const forLicense = expectSuccess(
        await testPayment(project.id, connector.id, { license_id: license.id }),
      );
      expect(forLicense).toEqual({
        event_id: expect.any(String),
        event_type: PAID_TYPES[provider],
        http_status: 200,
        outcome: 'applied',
        detail: `License ${license.id} is paid.`,
        target: { kind: 'license', id: license.id },
      });
      const licenseNow = expectSuccess(await api().get(`/project/${project.id}/licenses/${license.id}`));
      expect(licenseNow.has_paid).toBe(true);
      expect((await hasPaid(license.uuid as string, 'buyer.example.org')).body.data.has_paid).toBe(true);

      const forDomain = expectSuccess(await testPayment(project.id, connector.id, { domain_id: domain.id }));
      expect(forDomain).toMatchObject({
        event_type: PAID_TYPES[provider],
        outcome: 'applied',
        detail: `The domain ${domain.domain} is paid.`,
        target: { kind: 'domain', id: domain.id },
      });
      const forProject = expectSuccess(await testPayment(project.id, connector.id));
      expect(forProject).toMatchObject({
        outcome: 'applied',
        detail: 'The project is paid.',
        target: { kind: 'project', id: project.id },
      });
      expect(expectSuccess(await api().get(`/project/${project.id}/domains/${domain.id}`)).has_paid).toBe(
        true,
      );
      expect((await paidState(project.id)).has_paid).toBe(true);

      const log = await eventsOf(project.id, connector.id);
      expect(log.map((e) => [e.provider_event_id, e.type, e.outcome, e.target])).toEqual([
        [forProject.event_id, PAID_TYPES[provider], 'applied', { kind: 'project', id: project.id }],
        [forDomain.event_id, PAID_TYPES[provider], 'applied', { kind: 'domain', id: domain.id }],
        [forLicense.event_id, PAID_TYPES[provider], 'applied', { kind: 'license', id: license.id }],
      ]);
      // Each recorded its purchase, as a real order does; the license's purchase leads to the license.
      const purchases = expectSuccess(await api().get(`/project/${project.id}/subscriptions`)).data as Array<
        Record<string, unknown>
      >;
      expect(purchases).toHaveLength(3);
      expect(purchases.filter((p) => p.license_id === license.id)).toHaveLength(1);
      expect(log.every((e) => typeof e.subscription_id === 'number')).toBe(true);

      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Array<
        Record<string, any>
      >;
      const paid = audit.filter((r) => (r.action as string).endsWith('.paid'));
      expect(paid.map((r) => [r.action, r.resource_id, r.actor.type, r.actor.provider])).toEqual([
        ['project.paid', project.id, 'payment', provider],
        ['domain.paid', domain.id, 'payment', provider],
        ['license.paid', license.id, 'payment', provider],
      ]);
    },
  );

  it('a test payment for a billing: project license pays its pinned domain, what answers for it; unpinned, 422 says what to pay', async () => {
    const project = await makeProject(t, key, { has_paid: false });
    const domain = await makeDomain(t, key, project.id, { has_paid: false });
    const pinned = await makeLicense(t, key, project.id, { domain_id: domain.id });
    const unpinned = await makeLicense(t, key, project.id);
    const connector = await makeConnector(t, key, project.id, 'stripe');
    expect([pinned.billing, unpinned.billing]).toEqual(['project', 'project']);
    expect((await hasPaid(pinned.uuid as string, domain.domain as string)).body.data.has_paid).toBe(false);

    const sent = expectSuccess(await testPayment(project.id, connector.id, { license_id: pinned.id }));
    expect(sent).toMatchObject({
      outcome: 'applied',
      detail: `The domain ${domain.domain} is paid.`,
      target: { kind: 'domain', id: domain.id },
    });
    expect((await hasPaid(pinned.uuid as string, domain.domain as string)).body.data.has_paid).toBe(true);
    expect((await paidState(project.id)).has_paid).toBe(false);

    const refused = expectError(
      await testPayment(project.id, connector.id, { license_id: unpinned.id }),
      422,
    );
    expect(refused.errors).toEqual({ license_id: [testLicenseBilledByProject(unpinned.id)] });
  });

  it("a test payment carries the connector's first product, so that a connector listing products takes it", async () => {
    const project = await makeProject(t, key, { has_paid: false });
    for (const provider of PROVIDER_LIST) {
      const connector = await makeConnector(t, key, project.id, provider, {
        products: ['prod_test_1', 'prod_2'],
      });
      expectSuccess(await api().patch(`/project/${project.id}`, { has_paid: false }));
      expect(expectSuccess(await testPayment(project.id, connector.id))).toMatchObject({
        outcome: 'applied',
        detail: 'The project is paid.',
      });
    }
  });

  it('refuses a target of another project (404) and a bad body (422), naming it, storing nothing', async () => {
    const project = await makeProject(t, key);
    const other = await makeProject(t, key);
    const foreignLicense = await makeLicense(t, key, other.id);
    const foreignDomain = await makeDomain(t, key, other.id);
    const connector = await makeConnector(t, key, project.id, 'stripe');

    expect(
      expectError(await testPayment(project.id, connector.id, { license_id: foreignLicense.id }), 404)
        .message,
    ).toBe(testTargetNotFound('License', foreignLicense.id));
    expect(
      expectError(await testPayment(project.id, connector.id, { domain_id: foreignDomain.id }), 404).message,
    ).toBe(
      `Domain ${foreignDomain.id} not found in this project: a test payment pays only the connector's own project, its domains and licenses.`,
    );
    const invalid = async (body: object) =>
      expectError(await testEvent(project.id, connector.id, key, body), 422).errors as Record<
        string,
        string[]
      >;
    expect(await invalid({ event: 'refund' })).toEqual({ event: [TEST_EVENT_INVALID] });
    expect(await invalid({ license_id: foreignLicense.id })).toEqual({
      license_id: [TEST_TARGET_NEEDS_PAYMENT],
    });
    expect(await invalid({ event: 'nothing', domain_id: 1 })).toEqual({
      domain_id: [TEST_TARGET_NEEDS_PAYMENT],
    });
    expect(await invalid({ event: 'payment', license_id: 1, domain_id: 1 })).toEqual({
      domain_id: [TEST_TARGET_TWICE],
    });
    expect(await invalid({ event: 'payment', license_id: 'one' })).toEqual({
      license_id: ['The license id field must be an integer.'],
    });
    expect(await invalid({ event: 'payment', domain_id: 0 })).toEqual({
      domain_id: ['The domain id field must be at least 1.'],
    });
    expect(await eventsOf(project.id, connector.id)).toEqual([]);
    // {"event": "nothing"} is the default, as no body is.
    expect(expectSuccess(await testEvent(project.id, connector.id, key, { event: 'nothing' }))).toMatchObject(
      {
        event_type: 'customer.created',
        outcome: 'ignored',
      },
    );
  });

  it("a provider's real event reaches a license by licensegate_license; a value that names none moves nothing, said why", async () => {
    const project = await makeProject(t, key, { has_paid: false });
    const other = await makeProject(t, key);
    const license = await makeLicense(t, key, project.id, { billing: 'license', has_paid: false });
    const foreign = await makeLicense(t, key, other.id, { billing: 'license', has_paid: false });
    const connector = await makeConnector(t, key, project.id, 'stripe');
    for (const [id, value, detail] of [
      [
        'foreign',
        String(foreign.id),
        `License ${foreign.id} named by licensegate_license is not a license of this project: nothing changed.`,
      ],
      ['word', 'first', 'licensegate_license is "first", not a license id: nothing changed.'],
      ['own', String(license.id), `License ${license.id} is paid.`],
    ] as const) {
      expect((await deliver(t, connector, session(id, value), clock.nowMs())).status).toBe(200);
      const [row] = await eventsOf(project.id, connector.id);
      expect(row.detail).toContain(detail);
    }
    expect(expectSuccess(await api().get(`/project/${project.id}/licenses/${license.id}`)).has_paid).toBe(
      true,
    );
    expect(expectSuccess(await api().get(`/project/${other.id}/licenses/${foreign.id}`)).has_paid).toBe(
      false,
    );
    expect((await paidState(project.id)).has_paid).toBe(false);
  });

  it('licensegate_license takes only an unpaid billing: license license that no purchase holds (a buyer may write it)', async () => {
    const project = await makeProject(t, key, { has_paid: false });
    const paid = await makeLicense(t, key, project.id, { billing: 'license', has_paid: true });
    const byProject = await makeLicense(t, key, project.id);
    const held = await makeLicense(t, key, project.id, { billing: 'license', has_paid: false });
    const connector = await makeConnector(t, key, project.id, 'stripe');
    const detailOf = async (id: string, licenseId: number) => {
      expect((await deliver(t, connector, session(id, String(licenseId)), clock.nowMs())).status).toBe(200);
      const [row] = await eventsOf(project.id, connector.id);
      return row.detail as string;
    };
    expect(await detailOf('paid', paid.id)).toContain(
      `License ${paid.id} named by licensegate_license is paid already: a purchase takes only an unpaid license; nothing changed.`,
    );
    expect(await detailOf('project', byProject.id)).toContain(
      `License ${byProject.id} named by licensegate_license answers with its project's or domain's flag (billing: project): nothing changed.`,
    );
    // Taken by a first purchase, then marked unpaid by the vendor: a second purchase may not take it.
    expect(await detailOf('first', held.id)).toContain(`License ${held.id} is paid.`);
    await api().patch(`/project/${project.id}/licenses/${held.id}`, { has_paid: false }).expect(200);
    expect(await detailOf('second', held.id)).toContain(
      `License ${held.id} named by licensegate_license has a purchase of its own already: nothing changed.`,
    );
    const state = async (id: number) =>
      expectSuccess(await api().get(`/project/${project.id}/licenses/${id}`)).has_paid as boolean;
    expect([await state(paid.id), await state(held.id)]).toEqual([true, false]);
    expect((await paidState(project.id)).has_paid).toBe(false);
  });
});
