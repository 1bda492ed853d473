import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { READ_ONLY } from '../../src/auth/api-key.guard.js';
import { PaymentGrace } from '../../src/payments/payment-grace.service.js';
import { registry } from '../../src/metrics/metrics.js';
import { providerNamed } from '../../src/payments/providers/registry.js';
import { makeAccount, makeApiKey, makeDomain, makeProject } from '../factories/index.js';
import { ManualClock } from '../utils/clock.js';
import { waitFor } from '../utils/processes.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { apiAs } from '../utils/api.js';
import {
  Connector,
  deliver,
  endpointPath,
  fixture,
  makeConnector,
  Payload,
  PROVIDER_LIST,
  ProviderName,
  secretFor,
} from '../utils/payments.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const CONNECTOR_KEYS = [
  'created_at',
  'endpoint_url',
  'grace_days',
  'id',
  'is_active',
  'issue_licenses',
  'last_event_at',
  'license_template',
  'match_customers_by_email',
  'name',
  'products',
  'project_id',
  'provider',
  'updated_at',
].sort();
const NOT_FOUND = 'Payment connector not found.';
const DAY_MS = 86_400_000;

describe('payment connectors (docs/payments.md)', () => {
  let t: TestApp;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  let key = '';
  let userId = 0;

  beforeAll(async () => {
    // The grace scheduler is run by hand (tick) here: no timer moves anything behind a test's back.
    t = await createTestApp({ WEBHOOK_DISPATCHER: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' }, { clock });
    const account = await makeAccount(t.app);
    key = account.key;
    userId = account.user.id;
  });
  afterAll(async () => t.close());

  const api = (k = key) => apiAs(t, k);
  const send = (connector: Connector, payload: object | string, options = {}) =>
    deliver(t, connector, payload, clock.nowMs(), options);

  /** A project with the fixtures' domain, shop.example.com, and a connector of `provider`. */
  async function setup(
    provider: ProviderName,
    options: { paid?: boolean; connector?: Record<string, unknown>; project?: Record<string, unknown> } = {},
  ) {
    const project = await makeProject(t, key, { has_paid: options.paid ?? false, ...options.project });
    const domain = await makeDomain(t, key, project.id, {
      domain: 'shop.example.com',
      has_paid: options.paid ?? false,
    });
    const connector = await makeConnector(t, key, project.id, provider, options.connector);
    return { project, domain, connector };
  }

  const domainOf = async (projectId: number, domainId: number) =>
    expectSuccess(await api().get(`/project/${projectId}/domains/${domainId}`));
  /** The webhook events recorded for the project, oldest first. */
  const deliveryTypes = async (projectId: number) =>
    (
      await t.app
        .get(DataSource)
        .query<Array<{ type: string }>>(
          'SELECT type FROM webhook_deliveries WHERE project_id = ? ORDER BY id',
          [projectId],
        )
    ).map((r) => r.type);
  const eventsOf = async (projectId: number, connectorId: number) =>
    expectSuccess(
      await api().get(`/project/${projectId}/payment-connectors/${connectorId}/events?per_page=50`),
    ).data as Array<Payload>;

  describe('the connector resource', () => {
    it('creates with defaults, never returns the secret, and answers an absolute endpoint_url', async () => {
      const project = await makeProject(t, key);
      const secret = secretFor('stripe');
      const data = expectSuccess(
        await api().post(`/project/${project.id}/payment-connectors`, {
          provider: 'stripe',
          signing_secret: secret,
        }),
        201,
      );
      expect(Object.keys(data).sort()).toEqual(CONNECTOR_KEYS);
      expect(data).toMatchObject({
        project_id: project.id,
        provider: 'stripe',
        name: null,
        grace_days: 3,
        issue_licenses: false,
        license_template: null,
        is_active: true,
        last_event_at: null,
      });
      expect(data.created_at).toMatch(TIMESTAMP);
      // PUBLIC_URL's default: http://localhost:PORT.
      expect(data.endpoint_url).toMatch(
        new RegExp(`^http://localhost:${t.config.env.PORT}/api/v1/payments/stripe/[A-Za-z0-9_-]{43}$`),
      );
      expect(JSON.stringify(data)).not.toContain(secret);
      const got = expectSuccess(await api().get(`/project/${project.id}/payment-connectors/${data.id}`));
      expect(got).toEqual(data);
      const list = expectSuccess(await api().get(`/project/${project.id}/payment-connectors`));
      expect(list).toEqual({ data: [data], next_cursor: null });
      // The token is not the id, and another connector gets another.
      const other = await makeConnector(t, key, project.id, 'stripe');
      expect(endpointPath(other)).not.toBe(endpointPath(data));
    });

    it('stores the secret encrypted and audits it as [redacted], with its event', async () => {
      const project = await makeProject(t, key, { webhook_url: 'http://127.0.0.1:9/hook' });
      const connector = await makeConnector(t, key, project.id, 'paddle', { name: 'Paddle live' });
      const ds = t.app.get(DataSource);
      const [row] = await ds.query('SELECT signing_secret, token_hash FROM payment_connectors WHERE id = ?', [
        connector.id,
      ]);
      expect(row.signing_secret).toMatch(/^lgbox1:/);
      expect(row.signing_secret).not.toContain(connector.secret);
      expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Array<Payload>;
      const created = audit.find((a) => a.action === 'payment_connector.created');
      expect(created).toMatchObject({
        resource_type: 'payment_connector',
        resource_id: connector.id,
        actor: { type: 'api_key' },
        changes: { signing_secret: [null, '[redacted]'], provider: [null, 'paddle'] },
      });
      expect(JSON.stringify(audit)).not.toContain(connector.secret);
      await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, {
        signing_secret: secretFor('paddle'),
      });
      await api().delete(`/project/${project.id}/payment-connectors/${connector.id}`);
      const types = await deliveryTypes(project.id);
      expect(types).toEqual(
        expect.arrayContaining([
          'payment_connector.created',
          'payment_connector.updated',
          'payment_connector.deleted',
        ]),
      );
      const after = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Array<Payload>;
      expect(after.find((a) => a.action === 'payment_connector.updated')?.changes).toEqual({
        signing_secret: ['[redacted]', '[redacted]'],
      });
    });

    it('refuses bad fields with 422 messages naming them', async () => {
      const project = await makeProject(t, key);
      const base = `/project/${project.id}/payment-connectors`;
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [{ signing_secret: 's' }, 'provider', 'The provider field is required.'],
        [
          { provider: 'paypal', signing_secret: 's' },
          'provider',
          'The selected provider is invalid: it must be one of stripe, paddle, lemonsqueezy, polar, standard.',
        ],
        [{ provider: 'stripe' }, 'signing_secret', 'The signing secret field is required.'],
        [
          { provider: 'stripe', signing_secret: 's', grace_days: 91 },
          'grace_days',
          'The grace days field must not be greater than 90.',
        ],
        [
          { provider: 'stripe', signing_secret: 's', grace_days: -1 },
          'grace_days',
          'The grace days field must be at least 0.',
        ],
        [
          { provider: 'stripe', signing_secret: 's', grace_days: 1.5 },
          'grace_days',
          'The grace days field must be an integer.',
        ],
        [
          { provider: 'stripe', signing_secret: 's', issue_licenses: 'yes' },
          'issue_licenses',
          'The issue licenses field must be true or false.',
        ],
        [
          { provider: 'paddle', signing_secret: 'a' },
          'signing_secret',
          'The signing secret field must be at least 16 characters and not only white space: paste the secret the provider shows.',
        ],
        [
          { provider: 'lemonsqueezy', signing_secret: ' '.repeat(20) },
          'signing_secret',
          'The signing secret field is required.',
        ],
        [
          { provider: 'stripe', signing_secret: 'a-long-secret-without-the-prefix' },
          'signing_secret',
          "The signing secret field must be a Stripe signing secret: it starts with whsec_ (copy it from the webhook endpoint in Stripe's dashboard, or what stripe listen prints).",
        ],
        [
          { provider: 'paddle', signing_secret: 'whsec_0123456789abcdef' },
          'signing_secret',
          'The signing secret field must be a Paddle signing secret: it starts with pdl_ntfset_ (copy it from the notification destination in Paddle).',
        ],
        [
          { provider: 'standard', signing_secret: 'not-whsec' },
          'signing_secret',
          'The signing secret field must be a Standard Webhooks secret: whsec_ followed by base64 (24 to 64 bytes).',
        ],
        [
          { provider: 'stripe', signing_secret: 's', license_template: { max_domains: -1 } },
          'license_template.max_domains',
          'The max domains field must be at least 0.',
        ],
        [
          { provider: 'stripe', signing_secret: 's', license_template: { domain_id: 999999 } },
          'license_template.domain_id',
          'The selected domain id is invalid.',
        ],
        [
          { provider: 'stripe', signing_secret: 's', license_template: 'x' },
          'license_template',
          'The license template field must be a JSON object.',
        ],
      ];
      for (const [body, field, message] of cases) {
        const error = expectError(await api().post(base, body), 422, [field]);
        expect({ field, message: error.errors[field][0] }).toEqual({ field, message });
      }
      const connector = await makeConnector(t, key, project.id, 'stripe');
      const error = expectError(await api().patch(`${base}/${connector.id}`, { provider: 'paddle' }), 422, [
        'provider',
      ]);
      expect(error.message).toBe('The provider of a connector cannot be changed: create another connector.');
      expect(expectSuccess(await api().get(base)).data).toHaveLength(1);
    });

    it('updates only what is sent, keeps a template, and deletes with its events', async () => {
      const { project, connector } = await setup('stripe');
      const base = `/project/${project.id}/payment-connectors/${connector.id}`;
      const updated = expectSuccess(
        await api().patch(base, {
          name: 'Live',
          grace_days: 0,
          issue_licenses: true,
          license_template: { max_domains: 2, is_test_license: false },
        }),
      );
      expect(updated).toMatchObject({
        name: 'Live',
        grace_days: 0,
        issue_licenses: true,
        license_template: { max_domains: 2, is_test_license: false },
        endpoint_url: connector.endpoint_url,
      });
      expect(expectSuccess(await api().patch(base, { is_active: false })).is_active).toBe(false);
      expectSuccess(await api().delete(base));
      expectError(await api().get(base), 404);
      expect((await send(connector, fixture('stripe', 'invoice.paid'))).body.message).toBe(NOT_FOUND);
    });

    it('applies the access rules of licenses: 404 before 403, read-only keys and locked projects refused', async () => {
      const { project, connector } = await setup('stripe');
      const base = `/project/${project.id}/payment-connectors`;
      const stranger = (await makeAccount(t.app)).key;
      expectError(await api(stranger).get(`${base}/${connector.id}`), 403);
      expectError(await api(stranger).get(`${base}/999999`), 404);
      expectError(await api(stranger).get(`/project/999999/payment-connectors/${connector.id}`), 404);
      expectError(await api(stranger).post(base, { provider: 'stripe', signing_secret: 's' }), 403);
      const other = await makeProject(t, key);
      // A connector of another project of the same owner is not in this one.
      expectError(await api().get(`/project/${other.id}/payment-connectors/${connector.id}`), 404);
      const scoped = await makeApiKey(
        t.app,
        (await t.app.get(DataSource).query('SELECT * FROM users WHERE id = ?', [userId]))[0],
        {
          project_id: other.id,
        },
      );
      expectError(await api(scoped).get(`${base}/${connector.id}`), 403);
      expectSuccess(await api(scoped).get(`/project/${other.id}/payment-connectors`));
      const user = (await t.app.get(DataSource).query('SELECT * FROM users WHERE id = ?', [userId]))[0];
      const readOnly = await makeApiKey(t.app, user, { read_only: true });
      expectSuccess(await api(readOnly).get(`${base}/${connector.id}`));
      expect(
        expectError(await api(readOnly).patch(`${base}/${connector.id}`, { name: 'x' }), 403).message,
      ).toBe(READ_ONLY);
      expect(
        expectError(await api(readOnly).post(base, { provider: 'stripe', signing_secret: 's' }), 403).message,
      ).toBe(READ_ONLY);
      expectSuccess(await api().post(`/project/${project.id}/lock`, {}));
      expect(
        expectError(await api().post(base, { provider: 'stripe', signing_secret: 's' }), 403).message,
      ).toBe('Project is locked.');
      expectError(await api().delete(`${base}/${connector.id}`), 403);
      expectSuccess(await api().get(`${base}/${connector.id}/events`));
    });
  });

  describe('receiving: signatures and what is refused', () => {
    it.each(PROVIDER_LIST)(
      '%s: a signed event is applied; refused deliveries store nothing',
      async (provider) => {
        const { project, domain, connector } = await setup(provider);
        const payload =
          provider === 'standard' ? fixture('standard', 'payment.succeeded') : paidFixture(provider);
        const body = JSON.stringify(payload);
        const now = Math.floor(clock.nowMs() / 1000);
        const refused = [
          await send(connector, body, { ts: now - 301 }),
          await send(connector, body, { ts: now + 301 }),
          await send(connector, body, { secret: secretFor(provider) }),
          await send(connector, body, { sentBody: body.replace('shop.example.com', 'shop.example.con') }),
          await send(connector, body, { omitSignature: true }),
        ];
        // Lemon Squeezy signs no timestamp: its stale and future deliveries are valid.
        const expected = provider === 'lemonsqueezy' ? [200, 200, 401, 401, 401] : [401, 401, 401, 401, 401];
        expect(refused.map((res) => res.status)).toEqual(expected);
        for (const res of refused.filter((r) => r.status === 401)) {
          expectError(res, 401);
          expect(res.body.message).toMatch(/^The payment provider signature is missing or invalid: /);
        }
        if (provider !== 'lemonsqueezy') {
          expect(await eventsOf(project.id, connector.id)).toEqual([]);
          expect((await domainOf(project.id, domain.id)).has_paid).toBe(false);
          const ok = expectSuccess(await send(connector, body));
          expect(ok).toEqual({ outcome: 'applied', event_id: expect.any(String) });
        }
        expect((await domainOf(project.id, domain.id)).has_paid).toBe(true);
        const metrics = await registry.getSingleMetricAsString('licensegate_payment_events_total');
        expect(metrics).toContain(
          `licensegate_payment_events_total{provider="${provider}",outcome="invalid_signature"}`,
        );
        expect(metrics).toContain(
          `licensegate_payment_events_total{provider="${provider}",outcome="applied"}`,
        );
      },
    );

    it.each(['stripe', 'paddle', 'polar', 'standard'] as ProviderName[])(
      '%s: a timestamp exactly 300 s away is accepted either way, 301 s refused, whatever the milliseconds of now',
      async (provider) => {
        const { connector } = await setup(provider);
        const at = clock.nowMs();
        // The last millisecond of a second: a signature made 300 whole seconds ago is 300.999 s old.
        clock.set(new Date(Math.floor(at / 1000) * 1000 + 999));
        try {
          const now = Math.floor(clock.nowMs() / 1000);
          const edge = (ts: number, n: number) => {
            const payload = paidFixture(provider);
            if (provider === 'stripe') payload.id = `evt_edge_${n}`;
            if (provider === 'paddle') payload.event_id = `evt_edge_${n}`;
            return send(connector, payload, { ts, id: `msg_edge_${n}` });
          };
          const answers = [
            await edge(now - 300, 1),
            await edge(now + 300, 2),
            await edge(now - 301, 3),
            await edge(now + 301, 4),
          ];
          expect(answers.map((res) => res.status)).toEqual([200, 200, 401, 401]);
          expect(expectError(answers[2], 401).message).toBe(
            'The payment provider signature is missing or invalid: the signed timestamp is more than 300 seconds from now.',
          );
        } finally {
          clock.set(new Date(at));
        }
      },
    );

    it('lists events latest first in cursor pages (20 by default, at most 50), and connectors likewise', async () => {
      const { project, connector } = await setup('standard');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await send(connector, fixture('standard', 'invoice.created'), { id: `msg_page_${i}` });
        ids.push(expectSuccess(res).event_id as string);
      }
      const base = `/project/${project.id}/payment-connectors/${connector.id}/events`;
      const first = expectSuccess(await api().get(`${base}?per_page=2`));
      expect(first.data.map((e: Payload) => e.provider_event_id)).toEqual([ids[2], ids[1]]);
      const second = expectSuccess(await api().get(`${base}?per_page=2&cursor=${first.next_cursor}`));
      expect(second).toEqual({
        data: [expect.objectContaining({ provider_event_id: ids[0] })],
        next_cursor: null,
      });
      expectError(await api().get(`${base}?per_page=51`), 422, ['per_page']);
      const more = await makeConnector(t, key, project.id, 'stripe');
      const connectors = expectSuccess(
        await api().get(`/project/${project.id}/payment-connectors?per_page=1`),
      );
      expect(connectors.data.map((c: Payload) => c.id)).toEqual([more.id]);
      expect(connectors.next_cursor).toEqual(expect.any(String));
    });

    it('answers one 404 for an unknown token, a token of another provider and an inactive connector', async () => {
      const { project, connector } = await setup('stripe');
      const payload = fixture('stripe', 'invoice.paid');
      const path = endpointPath(connector);
      const answers = [
        await send(
          { ...connector, endpoint_url: `http://x${path.replace(/[^/]+$/, 'A'.repeat(43))}` },
          payload,
        ),
        await send(
          { ...connector, endpoint_url: `http://x${path.replace('/stripe/', '/paddle/')}` },
          payload,
        ),
        await send(
          { ...connector, endpoint_url: `http://x${path.replace('/stripe/', '/paypal/')}` },
          payload,
        ),
      ];
      await api().patch(`/project/${project.id}/payment-connectors/${connector.id}`, { is_active: false });
      answers.push(await send(connector, payload));
      for (const res of answers) expect(expectError(res, 404).message).toBe(NOT_FOUND);
      expect(await eventsOf(project.id, connector.id)).toEqual([]);
    });

    it('reads the raw body whatever its content type; malformed JSON after a valid signature is a 400 that stores nothing', async () => {
      const { project, domain, connector } = await setup('paddle');
      const res = await send(connector, paidFixture('paddle'), { contentType: 'text/plain' });
      expect(expectSuccess(res).outcome).toBe('applied');
      expect((await domainOf(project.id, domain.id)).has_paid).toBe(true);
      const bad = await send(connector, '{"event_id": "evt_x",');
      expect(expectError(bad, 400).message).toBe('The event body must be a JSON object.');
      const array = await send(connector, '[1,2]');
      expect(expectError(array, 400).message).toBe('The event body must be a JSON object.');
      const noId = await send(connector, { event_type: 'transaction.completed', data: {} });
      expect(expectError(noId, 400).message).toBe(
        'The event carries no event id (or one longer than 255 characters).',
      );
      expect(await eventsOf(project.id, connector.id)).toHaveLength(1);
    });

    it('refuses a signed body that is not UTF-8 text, or an event id with an unpaired surrogate: 400, nothing stored', async () => {
      const { project, connector } = await setup('stripe');
      // Signed over the bytes as Stripe signs (the adapter's sign): the body is read, then refused.
      const post = (bytes: Buffer) => {
        // As bytes: superagent would send a Buffer given with a JSON type as a JSON object.
        const req = t.http().post(endpointPath(connector)).set('Content-Type', 'application/octet-stream');
        for (const [name, value] of Object.entries(
          providerNamed('stripe')!.sign(connector.secret, bytes, clock.nowMs()),
        ))
          req.set(name, value);
        return req.send(bytes);
      };
      const bodies = [
        // Two ids that decoding would both turn into evt_bad_U+FFFD.
        Buffer.concat([Buffer.from('{"id":"evt_bad_'), Buffer.from([0xfe]), Buffer.from('","type":"x"}')]),
        Buffer.concat([Buffer.from('{"id":"evt_bad_'), Buffer.from([0xfd]), Buffer.from('","type":"x"}')]),
        Buffer.from('{"id":"evt_sur_\\udfff","type":"x"}'),
      ];
      for (const bytes of bodies)
        expect(expectError(await post(bytes), 400).message).toBe(
          'The event body must be UTF-8 text, with no unpaired surrogate.',
        );
      expect(await eventsOf(project.id, connector.id)).toEqual([]);
      // The signature first: the same bytes with a bad one are a 401.
      const unsigned = await t
        .http()
        .post(endpointPath(connector))
        .set('Content-Type', 'application/octet-stream')
        .set('Stripe-Signature', `t=${Math.floor(clock.nowMs() / 1000)},v1=${'0'.repeat(64)}`)
        .send(bodies[0]);
      expect(unsigned.status).toBe(401);
      // Elsewhere in the payload, an unpaired surrogate (a buyer's free text) does not cost the event.
      expect(
        expectSuccess(
          await post(Buffer.from('{"id":"evt_free","type":"x","data":{"object":{"name":"\\ud800"}}}')),
        ).outcome,
      ).toBe('ignored');
      // A pair is text: the same event with an emoji is read.
      expect(
        expectSuccess(await post(Buffer.from('{"id":"evt_pair","type":"x","n":"\\ud83d\\ude00"}'))).outcome,
      ).toBe('ignored');
    });

    it('refuses a body over 1 MiB with 413 in the envelope', async () => {
      const { connector } = await setup('stripe');
      const big = JSON.stringify({ ...fixture('stripe', 'invoice.paid'), pad: 'x'.repeat(1024 * 1024) });
      const res = await send(connector, big);
      expect(expectError(res, 413).message).toBe('Request body is too large.');
    });

    it('answers a redelivery `duplicate` and applies 20 concurrent deliveries of one event once, with one license', async () => {
      const { project, connector } = await setup('stripe', {
        connector: { issue_licenses: true, license_template: { max_domains: 2 } },
      });
      const payload = fixture('stripe', 'checkout.session.completed');
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(connector, payload)));
      const outcomes = answers.map((res) => expectSuccess(res).outcome as string);
      expect(outcomes.filter((o) => o === 'applied')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(19);
      expect(expectSuccess(await send(connector, payload))).toEqual({
        outcome: 'duplicate',
        event_id: 'evt_1QdCheckout',
      });
      expect(await eventsOf(project.id, connector.id)).toHaveLength(1);
      const licenses = expectSuccess(await api().get(`/project/${project.id}/licenses`)).data;
      expect(licenses).toHaveLength(1);
    });
    it('event ids and payment references that differ only in case are two, on every database', async () => {
      const { project, connector } = await setup('stripe', {
        connector: { issue_licenses: true, license_template: { max_domains: 2 } },
      });
      const upper = fixture('stripe', 'checkout.session.completed');
      upper.id = 'evt_CaseMatters';
      upper.data.object.subscription = 'sub_CaseMatters';
      const lower = structuredClone(upper);
      lower.id = 'evt_casematters';
      lower.data.object.subscription = 'sub_casematters';
      expect(expectSuccess(await send(connector, upper))).toEqual({
        outcome: 'applied',
        event_id: 'evt_CaseMatters',
      });
      expect(expectSuccess(await send(connector, lower))).toEqual({
        outcome: 'applied',
        event_id: 'evt_casematters',
      });
      expect(expectSuccess(await send(connector, lower)).outcome).toBe('duplicate');
      expect(await eventsOf(project.id, connector.id)).toHaveLength(2);
      const licenses = expectSuccess(await api().get(`/project/${project.id}/licenses`)).data as Payload[];
      expect(licenses.map((l) => l.payment_reference.reference).sort()).toEqual([
        'sub_CaseMatters',
        'sub_casematters',
      ]);
    });
  });

  describe('the mapping table', () => {
    type Case = [ProviderName, string, 'paid' | 'unpaid' | 'ignored', ((p: Payload) => void)?];
    const stripeStatus = (status: string) => (p: Payload) => {
      p.data.object.status = status;
      p.id = `${p.id}_${status}`;
    };
    const paddleStatus = (status: string) => (p: Payload) => {
      p.data.status = status;
    };
    const lemonStatus = (status: string) => (p: Payload) => {
      p.data.attributes.status = status;
    };
    const cases: Case[] = [
      ['stripe', 'checkout.session.completed', 'paid'],
      ['stripe', 'checkout.session.completed', 'ignored', (p) => (p.data.object.payment_status = 'unpaid')],
      ['stripe', 'checkout.session.async_payment_succeeded', 'paid'],
      ['stripe', 'invoice.paid', 'paid'],
      ['stripe', 'customer.subscription.created', 'paid'],
      ['stripe', 'customer.subscription.created', 'paid', stripeStatus('trialing')],
      ['stripe', 'customer.subscription.created', 'ignored', stripeStatus('incomplete')],
      ['stripe', 'customer.subscription.updated', 'paid', stripeStatus('active')],
      ['stripe', 'customer.subscription.updated', 'paid', stripeStatus('trialing')],
      ...['past_due', 'unpaid', 'canceled', 'incomplete_expired', 'paused'].map((status): Case => [
        'stripe',
        'customer.subscription.updated',
        'unpaid',
        stripeStatus(status),
      ]),
      ['stripe', 'customer.subscription.updated', 'ignored', stripeStatus('incomplete')],
      ['stripe', 'customer.subscription.deleted', 'unpaid'],
      ['stripe', 'charge.refunded', 'unpaid'],
      [
        'stripe',
        'charge.refunded',
        'ignored',
        (p) => {
          p.data.object.refunded = false;
          p.data.object.amount_refunded = 100;
        },
      ],
      ['stripe', 'charge.dispute.created', 'unpaid'],
      ['stripe', 'customer.created', 'ignored'],
      ['paddle', 'transaction.completed', 'paid'],
      ['paddle', 'subscription.activated', 'paid'],
      ['paddle', 'subscription.resumed', 'paid'],
      ['paddle', 'subscription.updated', 'paid'],
      ['paddle', 'subscription.updated', 'paid', paddleStatus('trialing')],
      ['paddle', 'subscription.updated', 'ignored', paddleStatus('past_due')],
      ['paddle', 'subscription.canceled', 'unpaid'],
      ['paddle', 'subscription.past_due', 'unpaid'],
      ['paddle', 'subscription.paused', 'unpaid'],
      ['paddle', 'subscription.created', 'ignored'],
      ['lemonsqueezy', 'order_created', 'paid'],
      ['lemonsqueezy', 'order_created', 'ignored', lemonStatus('pending')],
      ['lemonsqueezy', 'subscription_payment_success', 'paid'],
      ['lemonsqueezy', 'subscription_created', 'paid'],
      ['lemonsqueezy', 'subscription_created', 'paid', lemonStatus('on_trial')],
      ['lemonsqueezy', 'subscription_updated', 'paid'],
      ['lemonsqueezy', 'subscription_updated', 'paid', lemonStatus('on_trial')],
      ['lemonsqueezy', 'subscription_resumed', 'paid'],
      ['lemonsqueezy', 'subscription_resumed', 'paid', lemonStatus('on_trial')],
      ...['past_due', 'unpaid', 'expired', 'paused'].map((status): Case => [
        'lemonsqueezy',
        'subscription_updated',
        'unpaid',
        lemonStatus(status),
      ]),
      ['lemonsqueezy', 'subscription_updated', 'ignored', lemonStatus('cancelled')],
      ['lemonsqueezy', 'subscription_expired', 'unpaid'],
      ['lemonsqueezy', 'subscription_paused', 'unpaid'],
      ['lemonsqueezy', 'order_refunded', 'unpaid'],
      ['lemonsqueezy', 'subscription_cancelled', 'ignored'],
      ['polar', 'order.paid', 'paid'],
      ['polar', 'subscription.active', 'paid'],
      ['polar', 'subscription.uncanceled', 'paid'],
      ['polar', 'subscription.revoked', 'unpaid'],
      ['polar', 'order.refunded', 'unpaid'],
      ['polar', 'subscription.canceled', 'ignored'],
      ['standard', 'payment.succeeded', 'paid'],
      ['standard', 'payment.failed', 'unpaid'],
      ['standard', 'payment.refunded', 'unpaid'],
      ['standard', 'invoice.created', 'ignored'],
    ];

    // A refund or dispute reaches its purchase through the payment ids kept from the purchase's paid event.
    const PURCHASE_OF: Record<string, string> = {
      'stripe charge.refunded': 'checkout.session.async_payment_succeeded',
      'stripe charge.dispute.created': 'checkout.session.async_payment_succeeded',
      'lemonsqueezy order_refunded': 'order_created',
      'polar order.refunded': 'order.paid',
      'standard payment.refunded': 'payment.succeeded',
    };

    it.each(cases)('%s %s → %s', async (...[provider, event, verdict, mutate]: Case) => {
      // Paid events meet an unpaid domain, the rest a paid one; grace 0 closes at once.
      const paidBefore = verdict !== 'paid';
      const { project, domain, connector } = await setup(provider, {
        paid: paidBefore,
        connector: { grace_days: 0 },
      });
      const purchase = PURCHASE_OF[`${provider} ${event}`];
      if (purchase && verdict !== 'ignored') await send(connector, fixture(provider, purchase));
      const payload = fixture(provider, event);
      mutate?.(payload);
      const answer = expectSuccess(await send(connector, payload));
      expect(answer.outcome).toBe(verdict === 'ignored' ? 'ignored' : 'applied');
      const after = await domainOf(project.id, domain.id);
      expect(after.has_paid).toBe(verdict === 'ignored' ? paidBefore : verdict === 'paid');
      expect(after.grace_until).toBeNull();
      const [row] = await eventsOf(project.id, connector.id);
      expect(row).toMatchObject({
        provider_event_id: answer.event_id,
        type: event,
        outcome: answer.outcome,
        target: { kind: 'domain', id: domain.id },
      });
      expect(row.received_at).toMatch(TIMESTAMP);
      expect(row.detail.length).toBeGreaterThan(10);
      // The project itself is left alone: the event named the domain.
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(paidBefore);
    });
  });

  describe('targets', () => {
    it('moves the project when no licensegate_domain is set, and ignores an unregistered domain with its detail', async () => {
      const { project, domain, connector } = await setup('polar');
      const bare = fixture('polar', 'order.paid');
      delete bare.data.metadata.licensegate_domain;
      expect(expectSuccess(await send(connector, bare)).outcome).toBe('applied');
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(true);
      expect((await domainOf(project.id, domain.id)).has_paid).toBe(false);
      const elsewhere = fixture('polar', 'subscription.active');
      elsewhere.data.metadata.licensegate_domain = 'Other.Example.COM.';
      expect(expectSuccess(await send(connector, elsewhere)).outcome).toBe('ignored');
      const [latest, first] = await eventsOf(project.id, connector.id);
      expect(latest).toMatchObject({
        type: 'subscription.active',
        outcome: 'ignored',
        target: null,
        detail:
          'The domain "Other.Example.COM." named by licensegate_domain is not registered under this project: nothing changed.',
      });
      expect(first).toMatchObject({ type: 'order.paid', target: { kind: 'project', id: project.id } });
      // A name written otherwise than registered is normalised as domains are.
      const upper = fixture('polar', 'subscription.uncanceled');
      upper.data.metadata.licensegate_domain = 'SHOP.example.com.';
      expect(expectSuccess(await send(connector, upper)).outcome).toBe('applied');
      expect((await domainOf(project.id, domain.id)).has_paid).toBe(true);
      const connectorRow = expectSuccess(
        await api().get(`/project/${project.id}/payment-connectors/${connector.id}`),
      );
      expect(connectorRow.last_event_at).toBe(
        new Date(clock.nowMs()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      );
    });

    it('stores an event whose metadata or status is no string, however deep, as ignored: never a 500', async () => {
      const { project, domain, connector } = await setup('stripe');
      // Signed, so only a sender with the secret can send it; still no 500, which the provider would retry for days.
      const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      const event = (id: string, type: string, object: string) =>
        `{"id":"${id}","type":"${type}","data":{"object":${object}}}`;
      const sent = [
        event('evt_deep_domain', 'invoice.paid', `{"metadata":{"licensegate_domain":${deep}}}`),
        event('evt_deep_status', 'customer.subscription.updated', `{"id":"sub_1","status":${deep}}`),
        event('evt_deep_payment', 'checkout.session.completed', `{"id":"cs_1","payment_status":${deep}}`),
        event('evt_number_domain', 'invoice.paid', '{"metadata":{"licensegate_domain":12}}'),
        event('evt_object_domain', 'invoice.paid', '{"metadata":{"licensegate_domain":{"a":1}}}'),
      ];
      for (const body of sent) expect(expectSuccess(await send(connector, body)).outcome).toBe('ignored');
      const details = (await eventsOf(project.id, connector.id)).map((e) => [e.provider_event_id, e.detail]);
      expect(details).toEqual([
        ['evt_object_domain', 'licensegate_domain is an object, not a domain name: nothing changed.'],
        ['evt_number_domain', 'licensegate_domain is 12, not a domain name: nothing changed.'],
        [
          'evt_deep_payment',
          'checkout.session.completed with payment_status an array: paid only once the payment succeeds (checkout.session.async_payment_succeeded).',
        ],
        [
          'evt_deep_status',
          'customer.subscription.updated with status an array neither pays nor stops payment.',
        ],
        ['evt_deep_domain', 'licensegate_domain is an array, not a domain name: nothing changed.'],
      ]);
      expect((await domainOf(project.id, domain.id)).has_paid).toBe(false);
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(false);
    });

    it('records audit rows with the payment actor and the usual webhook events', async () => {
      const { project, domain, connector } = await setup('standard', {
        project: { webhook_url: 'http://127.0.0.1:9/hook' },
      });
      expect(expectSuccess(await send(connector, fixture('standard', 'payment.succeeded'))).outcome).toBe(
        'applied',
      );
      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Array<Payload>;
      expect(audit[0]).toMatchObject({
        action: 'domain.paid',
        resource_type: 'domain',
        resource_id: domain.id,
        actor: { type: 'payment', provider: 'standard', connector_id: connector.id, api_key_id: null },
        changes: { has_paid: [false, true] },
      });
      const types = await deliveryTypes(project.id);
      expect(types.slice(-2)).toEqual(['domain.updated', 'domain.paid']);
    });
  });

  describe('grace', () => {
    it('keeps the gate open until grace_until, shows it in runtime answers, then closes it once', async () => {
      const { project, domain, connector } = await setup('stripe', {
        paid: true,
        connector: { grace_days: 2 },
      });
      const license = expectSuccess(
        await api().post(`/project/${project.id}/licenses`, { title: 'Runtime' }),
        201,
      );
      const started = clock.nowMs();
      expect(
        expectSuccess(await send(connector, fixture('stripe', 'customer.subscription.deleted'))).outcome,
      ).toBe('applied');
      const graceUntil = new Date(started + 2 * DAY_MS).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const row = await domainOf(project.id, domain.id);
      expect(row).toMatchObject({ has_paid: true, grace_until: graceUntil });
      const [event] = await eventsOf(project.id, connector.id);
      expect(event.detail).toBe(
        `The domain shop.example.com stays paid until ${graceUntil} (grace of 2 days).`,
      );
      const runtime = () =>
        t
          .http()
          .post('/api/v1/project/has-paid')
          .set('X-LICENSE-KEY', license.uuid)
          .set('X-Service-Domain', 'shop.example.com');
      const byKey = () =>
        api().get(`/project/${project.id}/has-paid`).set('X-Service-Domain', 'shop.example.com');
      expect(expectSuccess(await runtime())).toEqual({
        has_paid: true,
        grace_until: graceUntil,
        is_test_license: false,
      });
      // The same answer through Express (an instance without the fast path, on the same database).
      const routed = await createTestApp(
        { WEBHOOK_DISPATCHER: 'false' },
        {
          databaseUrl: t.config.env.DATABASE_URL,
          runtimeFastPath: false,
          clock,
        },
      );
      try {
        const viaExpress = await routed
          .http()
          .post('/api/v1/project/has-paid')
          .set('X-LICENSE-KEY', license.uuid)
          .set('X-Service-Domain', 'shop.example.com');
        expect(expectSuccess(viaExpress)).toEqual({
          has_paid: true,
          grace_until: graceUntil,
          is_test_license: false,
        });
      } finally {
        await routed.close();
      }
      expect(expectSuccess(await byKey())).toEqual({ has_paid: true, grace_until: graceUntil });
      // The project's own answer has no grace: the event named the domain.
      expect(expectSuccess(await api().get(`/project/${project.id}/has-paid?action=check_project`))).toEqual({
        has_paid: true,
      });
      // A second unpaid event keeps the grace already running.
      clock.advance(DAY_MS);
      const again = fixture('stripe', 'customer.subscription.updated');
      expect(expectSuccess(await send(connector, again)).outcome).toBe('applied');
      expect((await domainOf(project.id, domain.id)).grace_until).toBe(graceUntil);
      const grace = t.app.get(PaymentGrace);
      expect(await grace.tick()).toBe(0);
      clock.advance(DAY_MS + 1000);
      // Past grace_until the runtime answers unpaid at once, before the scheduler has run.
      expect(expectSuccess(await runtime()).has_paid).toBe(false);
      expect(await grace.tick()).toBe(1);
      expect(await grace.tick()).toBe(0);
      expect(await domainOf(project.id, domain.id)).toMatchObject({ has_paid: false, grace_until: null });
      expect(expectSuccess(await byKey())).toEqual({ has_paid: false, redirect_url: null });
      const audit = expectSuccess(await api().get(`/project/${project.id}/audit-log`)).data as Array<Payload>;
      expect(audit[0]).toMatchObject({
        action: 'domain.unpaid',
        resource_id: domain.id,
        actor: { type: 'payment', provider: 'stripe', connector_id: connector.id },
        changes: { has_paid: [true, false], grace_until: [graceUntil, null] },
        request_id: null,
      });
      // Paid again (another subscription: the deleted one is ended): open at once.
      const paid = fixture('stripe', 'invoice.paid');
      paid.data.object.subscription = 'sub_1QdRenewed';
      expect(expectSuccess(await send(connector, paid)).outcome).toBe('applied');
      expect(expectSuccess(await runtime())).toEqual({ has_paid: true, is_test_license: false });
    });

    it('the scheduler runs by itself where the dispatcher runs, every PAYMENT_GRACE_POLL_MS', async () => {
      const own = new ManualClock(clock.nowMs());
      const app = await createTestApp(
        { WEBHOOK_DISPATCHER: 'true', PAYMENT_GRACE_POLL_MS: '50' },
        { databaseUrl: t.config.env.DATABASE_URL, clock: own },
      );
      try {
        const { project, domain, connector } = await setup('polar', {
          paid: true,
          connector: { grace_days: 1 },
        });
        expect(
          // A revocation takes the connector's grace (a refund would close at once).
          expectSuccess(await deliver(app, connector, fixture('polar', 'subscription.revoked'), own.nowMs()))
            .outcome,
        ).toBe('applied');
        own.advance(DAY_MS + 1000);
        await waitFor(async () => (await domainOf(project.id, domain.id)).has_paid === false, 5000);
      } finally {
        await app.close();
      }
    });

    it('a paid event, or a manual change of has_paid, clears grace_until', async () => {
      const { project, domain, connector } = await setup('paddle', {
        paid: true,
        connector: { grace_days: 5 },
      });
      // Each event a second after the one before: of one second, a paid event never undoes an unpaid one.
      let second = 0;
      const later = (event: string) => {
        const payload = fixture('paddle', event);
        payload.occurred_at = new Date(
          Date.parse(payload.occurred_at as string) + ++second * 1000,
        ).toISOString();
        return payload;
      };
      await send(connector, later('subscription.past_due'));
      expect((await domainOf(project.id, domain.id)).grace_until).toMatch(TIMESTAMP);
      expect(expectSuccess(await send(connector, later('subscription.activated'))).outcome).toBe('applied');
      expect(await domainOf(project.id, domain.id)).toMatchObject({ has_paid: true, grace_until: null });
      const [latest] = await eventsOf(project.id, connector.id);
      expect(latest.detail).toBe('The domain shop.example.com stays paid: its grace ended.');
      await send(connector, later('subscription.paused'));
      expect((await domainOf(project.id, domain.id)).grace_until).toMatch(TIMESTAMP);
      const patched = expectSuccess(
        await api().patch(`/project/${project.id}/domains/${domain.id}`, { has_paid: true }),
      );
      expect(patched).toMatchObject({ has_paid: true, grace_until: null });
      // The project: without licensegate_domain.
      const bare = later('subscription.canceled');
      delete bare.data.custom_data;
      await send(connector, bare);
      expect(expectSuccess(await api().get(`/project/${project.id}`)).grace_until).toMatch(TIMESTAMP);
      const put = expectSuccess(await api().patch(`/project/${project.id}`, { has_paid: false }));
      expect(put).toMatchObject({ has_paid: false, grace_until: null });
    });
  });

  describe('licenses from orders', () => {
    it('issues one license per order from the template, paid on its own; unpaid after grace, paid again (never revoked)', async () => {
      const { project, connector } = await setup('stripe', {
        paid: true,
        project: { webhook_url: 'http://127.0.0.1:9/hook' },
        connector: {
          issue_licenses: true,
          grace_days: 1,
          license_template: { max_domains: 2, allow_configs: true },
        },
      });
      await send(connector, fixture('stripe', 'checkout.session.completed'));
      // The subscription's invoice is the same order: no second license.
      await send(connector, fixture('stripe', 'invoice.paid'));
      const [license, ...rest] = expectSuccess(await api().get(`/project/${project.id}/licenses`)).data;
      expect(rest).toEqual([]);
      expect(license).toMatchObject({
        title: 'stripe buyer@example.com',
        max_domains: 2,
        allow_configs: true,
        revoked_at: null,
        grace_until: null,
        payment_reference: { provider: 'stripe', reference: 'sub_1QdH6s', kind: 'subscription' },
      });
      const own = async () =>
        (
          await t.app
            .get(DataSource)
            .query<Array<{ billing: string; has_paid: number | boolean }>>(
              'SELECT billing, has_paid FROM licenses WHERE id = ?',
              [license.id],
            )
        ).map((r) => ({ billing: r.billing, has_paid: Boolean(r.has_paid) }))[0];
      // Connectors that issue licenses issue licenses that carry their own payment.
      expect(await own()).toEqual({ billing: 'license', has_paid: true });
      const [created] = await t.app
        .get(DataSource)
        .query<Array<{ payload: string }>>(
          "SELECT payload FROM webhook_deliveries WHERE project_id = ? AND type = 'license.created'",
          [project.id],
        );
      expect(JSON.parse(created.payload).data.uuid).toBe(license.uuid);
      // Another order by the same customer: another license, its title made unique.
      const second = fixture('stripe', 'checkout.session.async_payment_succeeded');
      await send(connector, second);
      const titles = (
        expectSuccess(await api().get(`/project/${project.id}/licenses`)).data as Array<{ title: string }>
      )
        .map((l) => l.title)
        .sort();
      expect(titles).toEqual(['stripe buyer@example.com', 'stripe buyer@example.com (2)']);
      // Unpaid: a grace of one day on the license, then the scheduler clears its has_paid, and only its.
      const lapsed = fixture('stripe', 'customer.subscription.updated');
      lapsed.created += 1;
      await send(connector, lapsed);
      const inGrace = expectSuccess(await api().get(`/project/${project.id}/licenses/${license.id}`));
      expect(inGrace.grace_until).toMatch(TIMESTAMP);
      expect(inGrace.revoked_at).toBeNull();
      clock.advance(DAY_MS + 1000);
      expect(await t.app.get(PaymentGrace).tick()).toBe(1);
      expect(await own()).toEqual({ billing: 'license', has_paid: false });
      const unpaid = expectSuccess(await api().get(`/project/${project.id}/licenses/${license.id}`));
      expect(unpaid).toMatchObject({ grace_until: null, revoked_at: null });
      expect(expectSuccess(await api().get(`/project/${project.id}`)).has_paid).toBe(true);
      // Paid again: its own flag.
      const renewed = fixture('stripe', 'customer.subscription.updated');
      renewed.data.object.status = 'active';
      renewed.id = 'evt_renewed';
      renewed.created += 2;
      await send(connector, renewed);
      expect(await own()).toEqual({ billing: 'license', has_paid: true });
      const [latest] = await eventsOf(project.id, connector.id);
      expect(latest.detail).toContain(`License ${license.id} is paid.`);
    });

    it('leaves licenses alone while issue_licenses is false', async () => {
      const { project, connector } = await setup('lemonsqueezy');
      await send(connector, fixture('lemonsqueezy', 'order_created'));
      expect(expectSuccess(await api().get(`/project/${project.id}/licenses`)).data).toEqual([]);
    });
  });

  it('leaves the graces of a deleted project alone', async () => {
    const { project, domain, connector } = await setup('standard', {
      paid: true,
      connector: { grace_days: 1 },
    });
    expect(expectSuccess(await send(connector, fixture('standard', 'payment.failed'))).outcome).toBe(
      'applied',
    );
    expect((await domainOf(project.id, domain.id)).grace_until).toMatch(TIMESTAMP);
    expectSuccess(await api().delete(`/project/${project.id}`));
    clock.advance(DAY_MS + 1000);
    expect(await t.app.get(PaymentGrace).tick()).toBe(0);
    // Its connector answers 404 from then on.
    expect(expectError(await send(connector, fixture('standard', 'payment.succeeded')), 404).message).toBe(
      NOT_FOUND,
    );
  });
});

/** A paid event of each provider, from its fixtures. */
function paidFixture(provider: ProviderName): Payload {
  const event = {
    stripe: 'invoice.paid',
    paddle: 'transaction.completed',
    lemonsqueezy: 'order_created',
    polar: 'order.paid',
    standard: 'payment.succeeded',
  }[provider];
  return fixture(provider, event);
}
