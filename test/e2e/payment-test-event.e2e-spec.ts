import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { READ_ONLY } from '../../src/auth/api-key.guard.js';
import { PROJECT_LOCKED } from '../../src/common/http/errors.js';
import { CONNECTOR_PAUSED } from '../../src/payments/payment-test-events.service.js';
import { makeAccount, makeApiKey, makeProject } from '../factories/index.js';
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
  const testEvent = (projectId: number, connectorId: number, k = key) =>
    api(k).post(`/project/${projectId}/payment-connectors/${connectorId}/test-event`);
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
});
