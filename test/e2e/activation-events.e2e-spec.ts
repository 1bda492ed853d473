import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { LicenseLifecycle } from '../../src/licenses/license-lifecycle.service.js';
import { makeAccount, makeDomain, makeLicense, makeProject, uniqueToken } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { ManualClock } from '../utils/clock.js';
import { outboxCount } from '../utils/outbox.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { sleep, waitFor } from '../utils/wait.js';
import { startReceiver } from '../utils/webhook-receiver.js';

/** The receiver is on 127.0.0.1; deliveries are polled every 100 ms. */
const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_POLL_MS: '100',
  THROTTLE_API_LIMIT: '100000',
  THROTTLE_RUNTIME_LIMIT: '100000',
};
const DAY_MS = 86_400_000;

/** A receiver that keeps the events; each delivery's signature is checked when the test ends. */
async function receiver(secret: string) {
  const rx = await startReceiver();
  return Object.assign(rx, { problems: () => rx.badSignatures(secret) });
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

describe('activation and lifecycle webhooks', () => {
  let t: TestApp;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    t = await createTestApp(ENV);
  });
  afterEach(async () => {
    for (const rx of receivers.splice(0)) await rx.close();
  });
  afterAll(async () => t.close());

  /** An owner, a paid project sending its webhooks to a fresh receiver, one paid domain, a license with `license` settings. */
  async function setup(license: Record<string, unknown> = {}) {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const rx = await receiver(secret);
    receivers.push(rx);
    const { key } = await makeAccount(t.app);
    const project = await makeProject(t, key, {
      has_paid: true,
      webhook_url: rx.url,
      webhook_secret: secret,
    });
    const domain = (
      await makeDomain(t, key, project.id, { domain: `shop-${uniqueToken()}.example.com`, has_paid: true })
    ).domain as string;
    const l = await makeLicense(t, key, project.id, license);
    await waitFor(() => rx.of('license.created').length === 1, 10_000, 'license.created');
    return { rx, key, project, domain, license: l, uuid: l.uuid as string };
  }
  const api = (key: string) => apiAs(t, key);
  const outbox = (projectId: number, type: string) => outboxCount(t, projectId, type);
  /**
   * The expiry notices the outbox holds for a license, oldest first: once tick() has returned, every
   * notice it claimed is here, so "nothing more" needs no wait for the receiver.
   */
  const queued = async (licenseId: number) =>
    (
      await t.dataSource.query<Array<{ type: string; payload: string }>>(
        "SELECT type, payload FROM webhook_deliveries WHERE type LIKE 'license.expir%' ORDER BY id",
      )
    )
      .filter((row) => (JSON.parse(row.payload) as { data: { id: number } }).data.id === licenseId)
      .map((row) => row.type);
  const check = (uuid: string, domain: string) =>
    t.http().post('/api/v1/project/has-paid').set('X-LICENSE-KEY', uuid).set('X-Service-Domain', domain);

  it('license.deactivated for a vendor delete (by api_key) and a self-service one (by license), one per activation', async () => {
    const { rx, key, project, domain, license, uuid } = await setup();
    expectSuccess(await check(uuid, domain));
    expectSuccess(await check(uuid, `www.${domain}`));
    const base = `/project/${project.id}/licenses/${license.id}/activations`;
    const [own, sub] = expectSuccess(await api(key).get(base)).data;
    expectSuccess(await api(key).delete(`${base}/${sub.id}`));
    expectSuccess(
      await t.http().post('/api/v1/license/deactivate').set('X-LICENSE-KEY', uuid).send({ domain }),
    );
    expect(own.host).toBe('');
    const events = await waitFor(
      () => rx.of('license.deactivated').length === 2 && rx.of('license.deactivated'),
      10_000,
      'two license.deactivated',
    );
    expect(events.map((e) => e.data)).toEqual([
      { license_id: license.id, project_id: project.id, domain, host: `www.${domain}`, by: 'api_key' },
      { license_id: license.id, project_id: project.id, domain, host: '', by: 'license' },
    ]);
    // A refused or empty deactivation sends nothing.
    expectError(await api(key).delete(`${base}/${sub.id}`), 404);
    expect(
      expectSuccess(
        await t
          .http()
          .post('/api/v1/license/deactivate')
          .set('X-LICENSE-KEY', uuid)
          .set('X-Service-Domain', domain),
      ),
    ).toEqual({ deactivated: 0 });
    expect(await outbox(project.id, 'license.deactivated')).toBe(2);
    expect(rx.of('license.deactivated')).toHaveLength(2);
    expect(rx.problems()).toEqual([]);
  });

  it('deleting or renaming a registered domain frees the activations of its old name (license.deactivated), so a license can take a new domain', async () => {
    const { rx, key, project, domain, license, uuid } = await setup({
      max_domains: 1,
      max_subdomains_per_domain: 1,
    });
    const other = await makeLicense(t, key, project.id, { max_domains: 1 });
    const renamed = await makeDomain(t, key, project.id, {
      domain: `old-${uniqueToken()}.example.com`,
      has_paid: true,
    });
    const moved = `new-${uniqueToken()}.example.com`;
    const fresh = (
      await makeDomain(t, key, project.id, { domain: `fresh-${uniqueToken()}.example.com`, has_paid: true })
    ).domain;
    expectSuccess(await check(uuid, domain));
    expectSuccess(await check(uuid, `www.${domain}`));
    expectSuccess(await check(other.uuid, renamed.domain));
    expectError(await check(uuid, fresh), 403);
    expectError(await check(other.uuid, fresh), 403);

    const domains = expectSuccess(await api(key).get(`/project/${project.id}/domains`)).data as Array<{
      id: number;
      domain: string;
    }>;
    expectSuccess(
      await api(key).delete(`/project/${project.id}/domains/${domains.find((d) => d.domain === domain)!.id}`),
    );
    expectSuccess(await api(key).patch(`/project/${project.id}/domains/${renamed.id}`, { domain: moved }));

    // The slots the old names held are free: each license takes a domain it was refused before.
    expect(
      expectSuccess(await api(key).get(`/project/${project.id}/licenses/${license.id}/activations`)).data,
    ).toEqual([]);
    expect(
      expectSuccess(await api(key).get(`/project/${project.id}/licenses/${other.id}/activations`)).data,
    ).toEqual([]);
    expectSuccess(await check(uuid, fresh));
    expectSuccess(await check(other.uuid, moved));
    const events = await waitFor(
      () => rx.of('license.deactivated').length === 3 && rx.of('license.deactivated'),
      10_000,
      'three license.deactivated',
    );
    expect(events.map((e) => e.data)).toEqual([
      { license_id: license.id, project_id: project.id, domain, host: '', by: 'api_key' },
      { license_id: license.id, project_id: project.id, domain, host: `www.${domain}`, by: 'api_key' },
      { license_id: other.id, project_id: project.id, domain: renamed.domain, host: '', by: 'api_key' },
    ]);
    // A write that keeps the name (a flag) frees nothing.
    expectSuccess(
      await api(key).patch(`/project/${project.id}/domains/${renamed.id}`, {
        domain: moved.toUpperCase(),
        has_paid: true,
      }),
    );
    expect(
      expectSuccess(await api(key).get(`/project/${project.id}/licenses/${other.id}/activations`)).data.map(
        (a: any) => a.domain,
      ),
    ).toEqual([moved]);
    expect(await outbox(project.id, 'license.deactivated')).toBe(3);
    expect(rx.of('license.deactivated')).toHaveLength(3);
    expect(rx.problems()).toEqual([]);
  });

  it('license.domain_limit_reached once per license, limit and UTC day, however many refusals and places (also racing ones)', async () => {
    const { rx, key, project, domain, license, uuid } = await setup({
      max_domains: 1,
      max_subdomains_per_domain: 0,
    });
    const b = (
      await makeDomain(t, key, project.id, { domain: `b-${uniqueToken()}.example.com`, has_paid: true })
    ).domain;
    const c = (
      await makeDomain(t, key, project.id, { domain: `c-${uniqueToken()}.example.com`, has_paid: true })
    ).domain;
    expectSuccess(await check(uuid, domain));
    for (let i = 0; i < 3; i++) expectError(await check(uuid, b), 403);
    const racing = await Promise.all(Array.from({ length: 10 }, () => check(uuid, c)));
    expect(racing.every((r) => r.status === 403)).toBe(true);
    expect(expectError(await check(uuid, `www.${domain}`), 403).message).toBe(
      `This license has reached its limit of 0 subdomains for ${domain}.`,
    );
    // Random subdomains (anyone holding the public key can make them up) make no more events.
    for (let i = 1; i <= 5; i++) expectError(await check(uuid, `r${i}.${domain}`), 403);
    const randomAtOnce = await Promise.all(
      Array.from({ length: 10 }, (_, i) => check(uuid, `q${i}-${uniqueToken()}.${domain}`)),
    );
    expect(randomAtOnce.every((r) => r.status === 403)).toBe(true);
    await waitFor(
      () => rx.of('license.domain_limit_reached').length >= 2,
      10_000,
      'two license.domain_limit_reached',
    );
    await sleep(400);
    const reached = rx.of('license.domain_limit_reached').map((e) => e.data);
    expect(reached).toHaveLength(2);
    expect(reached).toEqual(
      expect.arrayContaining([
        { license_id: license.id, project_id: project.id, limit: 'max_domains', domain: b, host: '' },
        {
          license_id: license.id,
          project_id: project.id,
          limit: 'max_subdomains_per_domain',
          domain,
          host: `www.${domain}`,
        },
      ]),
    );
    expect(await outbox(project.id, 'license.domain_limit_reached')).toBe(2);
    expect(rx.problems()).toEqual([]);
  });

  it('LICENSE_MAX_ACTIVATIONS (default 1000): past it a new host is answered but not recorded; the report lists the 100 most recent and the total; license.activation_cap_reached once', async () => {
    expect(t.config.env.LICENSE_MAX_ACTIVATIONS).toBe(1000);
    const { rx, key, project, domain, license, uuid } = await setup();
    // The domain row and 999 hosts fill the cap; 50 more hosts are answered, none recorded.
    const hosts = Array.from({ length: 1049 }, (_, i) => `h${i}.${domain}`);
    for (const host of hosts)
      expect(expectSuccess(await check(uuid, host))).toMatchObject({ has_paid: true });
    const report = expectSuccess(await api(key).get(`/project/${project.id}/licenses/${license.id}/usage`));
    expect(report).toMatchObject({
      activations_total: 1000,
      max_activations: 1000,
      activations_capped: true,
    });
    expect(report.activations).toHaveLength(100);
    const [{ n }] = await t.dataSource.query<Array<{ n: number | string }>>(
      'SELECT COUNT(*) AS n FROM license_activations WHERE license_id = ?',
      [license.id],
    );
    expect(Number(n)).toBe(1000);
    expect(hosts.slice(999).some((host) => report.activations.some((a: any) => a.host === host))).toBe(false);
    // A capped host keeps being answered; a recorded one too.
    expectSuccess(await check(uuid, hosts[1040]));
    expectSuccess(await check(uuid, hosts[3]));
    await waitFor(
      () => rx.of('license.activation_cap_reached').length >= 1,
      10_000,
      'license.activation_cap_reached',
    );
    await sleep(300);
    expect(rx.of('license.activation_cap_reached').map((e) => e.data)).toEqual([
      { license_id: license.id, project_id: project.id, max_activations: 1000, domain, host: hosts[999] },
    ]);
    expect(await outbox(project.id, 'license.activation_cap_reached')).toBe(1);
    // Freeing an activation frees a slot for the next new host.
    const first = report.activations[0];
    expectSuccess(
      await api(key).delete(`/project/${project.id}/licenses/${license.id}/activations/${first.id}`),
    );
    expectSuccess(await check(uuid, `fresh.${domain}`));
    const after = expectSuccess(await api(key).get(`/project/${project.id}/licenses/${license.id}/usage`));
    expect(after).toMatchObject({ activations_total: 1000, activations_capped: true });
    expect(after.activations.map((a: any) => a.host)).toContain(`fresh.${domain}`);
  }, 240_000);

  it('license.expiring LICENSE_EXPIRY_NOTICE_DAYS (7) before expires_at and license.expired once it passed, each once; a new expires_at is announced again', async () => {
    const lifecycle = t.app.get(LicenseLifecycle);
    const expiresAt = new Date(Math.ceil((Date.now() + 10 * DAY_MS) / 1000) * 1000);
    const { rx, key, project, license } = await setup({ expires_at: expiresAt.toISOString() });
    const revoked = await makeLicense(t, key, project.id, { expires_at: expiresAt.toISOString() });
    expectSuccess(await api(key).post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
    const far = await makeLicense(t, key, project.id, {
      expires_at: new Date(Date.now() + 30 * DAY_MS).toISOString(),
    });
    const mine = () =>
      rx.events().filter((e) => e.type.startsWith('license.expir') && e.data.id === license.id);
    const at = (ms: number) => new Date(expiresAt.getTime() + ms);

    await lifecycle.tick(at(-7 * DAY_MS - 60_000)); // more than 7 days before: nothing
    await lifecycle.tick(at(-7 * DAY_MS + 60_000));
    await lifecycle.tick(at(-6 * DAY_MS));
    await waitFor(() => mine().length === 1, 10_000, 'license.expiring');
    await lifecycle.tick(at(-1000)); // still before: nothing more
    await lifecycle.tick(at(1000));
    await lifecycle.tick(at(60_000));
    expect(await queued(license.id)).toEqual(['license.expiring', 'license.expired']);
    await waitFor(() => mine().length === 2, 10_000, 'license.expired');
    expect(mine().map((e) => e.type)).toEqual(['license.expiring', 'license.expired']);
    for (const e of mine())
      expect(e.data).toMatchObject({
        id: license.id,
        project_id: project.id,
        expires_at: expiresAt.toISOString().replace('.000Z', 'Z'),
      });
    expect(mine()[0].data).not.toHaveProperty('expiry_notice');
    // Neither the revoked license nor the one expiring in 30 days said anything.
    expect(await queued(revoked.id)).toEqual([]);
    expect(await queued(far.id)).toEqual([]);

    // Renewed: the new date is announced in its turn; the notice bookkeeping does not touch updated_at.
    const before = expectSuccess(await api(key).get(`/project/${project.id}/licenses/${license.id}`));
    const renewed = new Date(expiresAt.getTime() + 365 * DAY_MS);
    await lifecycle.tick(at(120_000));
    expect(
      expectSuccess(await api(key).get(`/project/${project.id}/licenses/${license.id}`)).updated_at,
    ).toBe(before.updated_at);
    expectSuccess(
      await api(key).patch(`/project/${project.id}/licenses/${license.id}`, {
        expires_at: renewed.toISOString(),
      }),
    );
    await lifecycle.tick(new Date(renewed.getTime() - 3 * DAY_MS));
    await lifecycle.tick(new Date(renewed.getTime() + 1000));
    await waitFor(() => mine().length === 4, 10_000, 'the renewed date announced');
    expect(mine().map((e) => e.type)).toEqual([
      'license.expiring',
      'license.expired',
      'license.expiring',
      'license.expired',
    ]);
    expect(rx.problems()).toEqual([]);
  });

  it('saving a license unchanged, its expires_at sent with milliseconds or as returned, announces nothing again', async () => {
    const lifecycle = t.app.get(LicenseLifecycle);
    // Beyond the week (the scheduler on the real clock says nothing meanwhile), with a fraction of a second.
    const sent = new Date(Math.floor((Date.now() + 8 * DAY_MS) / 1000) * 1000 + 600).toISOString();
    const { rx, key, project, license } = await setup({ expires_at: sent });
    const path = `/project/${project.id}/licenses/${license.id}`;
    const notices = () =>
      rx
        .events()
        .filter((e) => e.type.startsWith('license.expir') && e.data.id === license.id)
        .map((e) => e.type);
    // Stored and returned in whole seconds, the same on both databases (MySQL would round, SQLite keep the fraction).
    expect(license.expires_at).toBe(sent.replace(/\.\d{3}Z$/, 'Z'));
    const expiresAt = new Date(license.expires_at);
    await lifecycle.tick(new Date(expiresAt.getTime() - 6 * DAY_MS));
    await waitFor(() => notices().length === 1, 10_000, 'license.expiring');
    // A dashboard saving the form as it was read, then a client re-sending what it first sent.
    expectSuccess(await api(key).patch(path, { title: license.title, expires_at: license.expires_at }));
    expectSuccess(await api(key).put(path, { title: license.title, expires_at: sent }));
    expect(expectSuccess(await api(key).get(path)).expires_at).toBe(license.expires_at);
    await lifecycle.tick(new Date(expiresAt.getTime() - 5 * DAY_MS));
    expect(await queued(license.id)).toEqual(['license.expiring']);
    expect(notices()).toEqual(['license.expiring']);
  });

  it('a license already past expires_at when first seen gets license.expired only', async () => {
    const lifecycle = t.app.get(LicenseLifecycle);
    // Beyond the week, so the scheduler running on the real clock has nothing to say about it meanwhile.
    const expiresAt = new Date(Date.now() + 8 * DAY_MS);
    const { rx, license } = await setup({ expires_at: expiresAt.toISOString() });
    await lifecycle.tick(new Date(expiresAt.getTime() + 5000));
    await waitFor(
      () => rx.events().some((e) => e.type === 'license.expired' && e.data.id === license.id),
      10_000,
      'license.expired',
    );
    expect(await queued(license.id)).toEqual(['license.expired']);
  });

  it('racing schedulers claim each notice once', async () => {
    const lifecycle = t.app.get(LicenseLifecycle);
    const { rx, key, project } = await setup();
    const expiresAt = new Date(Date.now() + 9 * DAY_MS);
    const licenses: Array<Record<string, any>> = [];
    for (let i = 0; i < 5; i++)
      licenses.push(await makeLicense(t, key, project.id, { expires_at: expiresAt.toISOString() }));
    const claimed = await Promise.all(
      Array.from({ length: 4 }, () => lifecycle.tick(new Date(expiresAt.getTime() - DAY_MS))),
    );
    const ours = () =>
      rx.events().filter((e) => e.type === 'license.expiring' && licenses.some((l) => l.id === e.data.id));
    // At least these five (earlier tests' licenses may fall due at that date too).
    expect(claimed.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(5);
    for (const license of licenses) expect(await queued(license.id as number)).toEqual(['license.expiring']);
    await waitFor(() => ours().length >= 5, 10_000, 'five license.expiring');
  });
});

describe('the expiry scheduler on its own timer (LICENSE_EXPIRY_POLL_MS=200)', () => {
  it('sends license.expiring at once for a license expiring within the week, then license.expired when the clock passes it', async () => {
    const clock = new ManualClock(Date.now());
    const t = await createTestApp({ ...ENV, LICENSE_EXPIRY_POLL_MS: '200' }, { clock });
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const rx = await receiver(secret);
    try {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { webhook_url: rx.url, webhook_secret: secret });
      const expiresAt = new Date(Math.ceil((clock.nowMs() + 3 * DAY_MS) / 1000) * 1000);
      const license = await makeLicense(t, key, project.id, { expires_at: expiresAt.toISOString() });
      const types = () =>
        rx
          .events()
          .filter((e) => e.data.id === license.id && e.type.startsWith('license.expir'))
          .map((e) => e.type);
      const queued = async () =>
        (
          await t.dataSource.query<Array<{ type: string }>>(
            "SELECT type FROM webhook_deliveries WHERE project_id = ? AND type LIKE 'license.expir%' ORDER BY id",
            [project.id],
          )
        ).map((row) => row.type);
      await waitFor(() => types().length === 1, 5000, 'license.expiring');
      expect(types()).toEqual(['license.expiring']);
      // Nothing more is due until the clock reaches expires_at (tick() runs at the clock's now).
      expect(await t.app.get(LicenseLifecycle).tick()).toBe(0);
      expect(await queued()).toEqual(['license.expiring']);
      clock.set(new Date(expiresAt.getTime() + 1000));
      await waitFor(() => types().length === 2, 5000, 'license.expired');
      expect(types()).toEqual(['license.expiring', 'license.expired']);
      expect(await queued()).toEqual(['license.expiring', 'license.expired']);
      expect(rx.problems()).toEqual([]);
    } finally {
      await t.close();
      await rx.close();
    }
  });
});
