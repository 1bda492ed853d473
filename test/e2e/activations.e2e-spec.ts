import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { ProjectGenerations } from '../../src/common/cache/generations.js';
import { Activations1732000000006 } from '../../src/database/migrations/1732000000006-Activations.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  uniqueToken,
} from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { databaseBefore } from '../utils/upgrade.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const ACTIVATION_KEYS = ['id', 'license_id', 'domain', 'host', 'first_seen_at', 'last_seen_at'].sort();
const REDIRECT = 'https://example.com/pay-here';
const NOT_A_HOST =
  'The domain must be a host name such as shop.example.com (not an IP address, a wildcard or anything else).';
const DOMAIN_REQUIRED =
  'The domain field is required: send the host to deactivate in the X-Service-Domain header or as domain in the body.';

/** A host under example.com that no other test uses. */
const host = (prefix = 'shop') => `${prefix}-${uniqueToken()}.example.com`;

const tally = (responses: Response[]) => {
  const out: Record<number, number> = {};
  for (const r of responses) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

function expect429UntilMidnight(res: Response, message: string) {
  expect(expectError(res, 429).message).toBe(message);
  const retry = Number(res.headers['retry-after']);
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  expect(Math.abs(retry - (midnight - now.getTime()) / 1000)).toBeLessThan(5);
}

describe('activations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', THROTTLE_RUNTIME_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  const api = (key?: string) => apiAs(t, key);
  const check = (license: string, domain: string) =>
    t
      .http()
      .post('/api/v1/project/has-paid')
      .set('Accept', 'application/json')
      .set('X-LICENSE-KEY', license)
      .set('X-Service-Domain', domain);
  const deactivate = (license?: string, domain?: string) => {
    const req = t.http().post('/api/v1/license/deactivate').set('Accept', 'application/json');
    if (license !== undefined) req.set('X-LICENSE-KEY', license);
    if (domain !== undefined) req.set('X-Service-Domain', domain);
    return req;
  };

  /** An owner, a paid project with one paid registered domain, and a license with `license` settings. */
  async function setup(license: Record<string, unknown> = {}) {
    const { user, key } = await makeAccount(t.app);
    const project = await makeProject(t, key, { default_redirect_url: REDIRECT, has_paid: true });
    const domain = await makeDomain(t, key, project.id, { domain: host(), has_paid: true });
    const l = await makeLicense(t, key, project.id, license);
    const base = `/project/${project.id}/licenses/${l.id}/activations`;
    return { user, key, project, domain: domain.domain as string, license: l, uuid: l.uuid as string, base };
  }
  const list = async (key: string, base: string, query = '') =>
    expectSuccess(await api(key).get(`${base}${query}`));

  describe('GET /project/{id}/licenses/{license}/activations', () => {
    it('lists the places the license was used from, oldest first, each with exactly its fields', async () => {
      const { key, domain, uuid, license, base } = await setup();
      const before = Date.now();
      expectSuccess(await check(uuid, domain));
      expectSuccess(await check(uuid, `www.${domain}`));
      expectSuccess(await check(uuid, `WWW.${domain.toUpperCase()}.`)); // the same place, spelled otherwise
      const page = await list(key, base);
      expect(Object.keys(page).sort()).toEqual(['data', 'next_cursor']);
      expect(page.next_cursor).toBeNull();
      expect(page.data.map((a: Record<string, unknown>) => [a.domain, a.host])).toEqual([
        [domain, ''],
        [domain, `www.${domain}`],
      ]);
      for (const a of page.data) {
        expect(Object.keys(a).sort()).toEqual(ACTIVATION_KEYS);
        expect(a.license_id).toBe(license.id);
        expect(a.first_seen_at).toMatch(TIMESTAMP);
        expect(a.last_seen_at).toMatch(TIMESTAMP);
        expect(Date.parse(a.first_seen_at)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
        expect(Date.parse(a.last_seen_at)).toBeGreaterThanOrEqual(Date.parse(a.first_seen_at));
      }
      expect(page.data[0].id).toBeLessThan(page.data[1].id);
    });

    it('pages with an opaque cursor, and refuses a per_page outside 1..50 or a cursor not of this list with 422', async () => {
      const { key, project, uuid, base } = await setup();
      const domains: string[] = [];
      for (let i = 0; i < 3; i++)
        domains.push(
          (await makeDomain(t, key, project.id, { domain: host(`p${i}`), has_paid: true })).domain,
        );
      for (const d of domains) expectSuccess(await check(uuid, d));
      const first = await list(key, base, '?per_page=2');
      expect(first.data.map((a: { domain: string }) => a.domain)).toEqual(domains.slice(0, 2));
      expect(typeof first.next_cursor).toBe('string');
      const second = await list(key, base, `?per_page=2&cursor=${encodeURIComponent(first.next_cursor)}`);
      expect(second.data.map((a: { domain: string }) => a.domain)).toEqual([domains[2]]);
      expect(second.next_cursor).toBeNull();
      expect((await list(key, base)).data).toHaveLength(3);
      for (const query of ['?per_page=0', '?per_page=51', '?per_page=abc']) {
        expect(expectError(await api(key).get(`${base}${query}`), 422, ['per_page']).errors.per_page).toEqual(
          [
            query === '?per_page=abc'
              ? 'The per page field must be an integer.'
              : 'The per page field must be between 1 and 50.',
          ],
        );
      }
      expect(
        expectError(await api(key).get(`${base}?cursor=${first.next_cursor}x`), 422, ['cursor']).message,
      ).toBe('The cursor is invalid.');
      // A cursor of another license's list is not this list's.
      const other = await setup();
      expectSuccess(await check(other.uuid, other.domain));
      expectSuccess(await check(other.uuid, `a.${other.domain}`));
      const foreign = await list(other.key, other.base, '?per_page=1');
      expectError(await api(key).get(`${base}?cursor=${encodeURIComponent(foreign.next_cursor)}`), 422, [
        'cursor',
      ]);
    });

    it('answers 50 a page by default', async () => {
      const { key, uuid, domain, base } = await setup();
      const subdomains = Array.from({ length: 50 }, (_, i) => `s${i}.${domain}`);
      for (const d of [domain, ...subdomains]) expectSuccess(await check(uuid, d));
      const first = await list(key, base);
      expect(first.data).toHaveLength(50);
      expect(first.data[0].host).toBe('');
      const second = await list(key, base, `?cursor=${encodeURIComponent(first.next_cursor)}`);
      expect(second.data.map((a: { host: string }) => a.host)).toEqual([subdomains[49]]);
      expect(second.next_cursor).toBeNull();
    });

    it('follows the access rules of a license: 401, 403 for strangers and other scopes, 404 (before any 403) for what is not there', async () => {
      const { user, key, project, uuid, domain, base } = await setup();
      expectSuccess(await check(uuid, domain));
      expect(expectError(await api().get(base), 401).message).toBe(
        'API key missing: send it in the X-API-KEY header.',
      );
      const stranger = await makeAccount(t.app);
      expect(expectError(await api(stranger.key).get(base), 403).message).toBe(
        'This API key does not belong to the owner of this project.',
      );
      const other = await makeProject(t, key);
      const scopedOther = await makeApiKey(t.app, user, { project_id: other.id });
      expect(expectError(await api(scopedOther).get(base), 403).message).toBe(
        'This API key is scoped to another project.',
      );
      const scoped = await makeApiKey(t.app, user, { project_id: project.id });
      expect((await list(scoped, base)).data).toHaveLength(1);
      // 404 first: an unknown license, a license of another project, a malformed id.
      const otherLicense = await makeLicense(t, key, other.id);
      for (const who of [key, stranger.key, scopedOther]) {
        for (const lid of ['999999', String(otherLicense.id), 'abc', '0']) {
          expectError(await api(who).get(`/project/${project.id}/licenses/${lid}/activations`), 404);
        }
      }
      expect(
        expectError(await api(key).get(`/project/${project.id}/licenses/${otherLicense.id}/activations`), 404)
          .message,
      ).toBe('License not found.');
      expect(
        expectError(await api(key).get(`/project/999999/licenses/${otherLicense.id}/activations`), 404)
          .message,
      ).toBe('Project not found.');
    });

    it('is not served stale from the read cache: a new activation shows on the next read', async () => {
      const { key, project, uuid, domain, base } = await setup();
      expect((await list(key, base)).data).toEqual([]);
      expectSuccess(await check(uuid, domain));
      expect((await list(key, base)).data).toHaveLength(1);
      const second = (await makeDomain(t, key, project.id, { domain: host('second'), has_paid: true }))
        .domain;
      expectSuccess(await check(uuid, second));
      expect((await list(key, base)).data).toHaveLength(2);
    });
  });

  describe('DELETE /project/{id}/licenses/{license}/activations/{activation}', () => {
    it('frees the slot at once: the next call from a new domain takes it, the old place is refused', async () => {
      const { key, project, uuid, domain, base } = await setup({ max_domains: 1 });
      const next = (await makeDomain(t, key, project.id, { domain: host('next'), has_paid: true })).domain;
      expectSuccess(await check(uuid, domain));
      expectSuccess(await check(uuid, domain)); // remembered in process now
      expect(expectError(await check(uuid, next), 403).message).toBe(
        'This license has reached its limit of 1 domain.',
      );
      const [activation] = (await list(key, base)).data;
      expect(expectSuccess(await api(key).delete(`${base}/${activation.id}`))).toBeNull();
      expect((await list(key, base)).data).toEqual([]);
      expectSuccess(await check(uuid, next));
      expect(expectError(await check(uuid, domain), 403).message).toBe(
        'This license has reached its limit of 1 domain.',
      );
      expect((await list(key, base)).data.map((a: { domain: string }) => a.domain)).toEqual([next]);
    });

    it("deleting a domain's own activation frees its max_domains slot; its subdomains' stay listed but need the slot again", async () => {
      const { key, project, uuid, domain, base } = await setup({ max_domains: 1 });
      const next = (await makeDomain(t, key, project.id, { domain: host('next'), has_paid: true })).domain;
      expectSuccess(await check(uuid, `www.${domain}`));
      const rows = (await list(key, base)).data;
      expect(rows.map((a: { host: string }) => a.host)).toEqual(['', `www.${domain}`]);
      expectSuccess(await api(key).delete(`${base}/${rows[0].id}`));
      expectSuccess(await check(uuid, next));
      expect(expectError(await check(uuid, `www.${domain}`), 403).message).toBe(
        'This license has reached its limit of 1 domain.',
      );
      expect(
        (await list(key, base)).data.map((a: { domain: string; host: string }) => [a.domain, a.host]),
      ).toEqual([
        [domain, `www.${domain}`],
        [next, ''],
      ]);
    });

    it('404 for an unknown activation or one of another license (before any 403), 403 for strangers and while locked', async () => {
      const a = await setup();
      const b = await setup();
      expectSuccess(await check(a.uuid, a.domain));
      expectSuccess(await check(b.uuid, b.domain));
      const [mine] = (await list(a.key, a.base)).data;
      const [theirs] = (await list(b.key, b.base)).data;
      const sibling = await makeLicense(t, a.key, a.project.id);
      expectSuccess(await check(sibling.uuid, a.domain));
      const [siblings] = (await list(a.key, `/project/${a.project.id}/licenses/${sibling.id}/activations`))
        .data;
      for (const who of [a.key, b.key]) {
        for (const id of ['999999', String(theirs.id), String(siblings.id), 'abc', '0']) {
          const res = await api(who).delete(`${a.base}/${id}`);
          expect({ id, status: res.status }).toEqual({ id, status: 404 });
          if (/^\d+$/.test(id) && id !== '0')
            expect(expectError(res, 404).message).toBe('Activation not found.');
        }
      }
      expect(expectError(await api(b.key).delete(`${a.base}/${mine.id}`), 403).message).toBe(
        'This API key does not belong to the owner of this project.',
      );
      expectSuccess(await api(a.key).post(`/project/${a.project.id}/lock`, { reason: 'chargeback' }));
      expect(expectError(await api(a.key).delete(`${a.base}/${mine.id}`), 403).message).toBe(
        'Project is locked.',
      );
      expectSuccess(await api(a.key).post(`/project/${a.project.id}/unlock`));
      // Nothing was deleted by any of those.
      expect((await list(a.key, a.base)).data).toEqual([mine]);
      expect((await list(b.key, b.base)).data).toEqual([theirs]);
      expectSuccess(await api(a.key).delete(`${a.base}/${mine.id}`));
      expect(expectError(await api(a.key).delete(`${a.base}/${mine.id}`), 404).message).toBe(
        'Activation not found.',
      );
    });

    it('of racing deletes of one activation, one answers 200 and the others 404', async () => {
      const { key, uuid, domain, base } = await setup();
      expectSuccess(await check(uuid, domain));
      const [activation] = (await list(key, base)).data;
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => api(key).delete(`${base}/${activation.id}`)),
      );
      expect(tally(answers)).toEqual({ 200: 1, 404: 5 });
    });

    it.each([1, 2])(
      'round %i: 60 racing calls from new domains after one deactivation at the limit take exactly one slot',
      async () => {
        const { key, project, uuid, domain, base } = await setup({ max_domains: 2 });
        const second = (await makeDomain(t, key, project.id, { domain: host('second'), has_paid: true }))
          .domain;
        const fresh: string[] = [];
        for (let i = 0; i < 60; i++)
          fresh.push(
            (await makeDomain(t, key, project.id, { domain: host(`new${i}`), has_paid: true })).domain,
          );
        expectSuccess(await check(uuid, domain));
        expectSuccess(await check(uuid, second));
        const [first] = (await list(key, base)).data;
        expectSuccess(await api(key).delete(`${base}/${first.id}`));
        const answers = await Promise.all(fresh.map((d) => check(uuid, d)));
        expect(tally(answers)).toEqual({ 200: 1, 403: 59 });
        for (const res of answers)
          if (res.status === 403)
            expect(res.body.message).toBe('This license has reached its limit of 2 domains.');
        const winner = fresh[answers.findIndex((r) => r.status === 200)];
        expect((await list(key, base)).data.map((a: { domain: string }) => a.domain).sort()).toEqual(
          [second, winner].sort(),
        );
      },
    );
  });

  describe('POST /license/deactivate', () => {
    it('deactivates the exact host sent and answers how many; the slot is free at once', async () => {
      const { key, project, uuid, domain, base } = await setup({ max_domains: 1 });
      const next = (await makeDomain(t, key, project.id, { domain: host('next'), has_paid: true })).domain;
      expectSuccess(await check(uuid, domain));
      expectSuccess(await check(uuid, `www.${domain}`));
      // The subdomain only: the domain keeps its slot.
      expect(expectSuccess(await deactivate(uuid, `WWW.${domain.toUpperCase()}`))).toEqual({
        deactivated: 1,
      });
      expect((await list(key, base)).data.map((a: { host: string }) => a.host)).toEqual(['']);
      expectError(await check(uuid, next), 403);
      // The domain itself, named as a URL (reduced to its host, as for has-paid).
      expect(expectSuccess(await deactivate(uuid, `https://${domain}/shop`))).toEqual({ deactivated: 1 });
      expect((await list(key, base)).data).toEqual([]);
      expectSuccess(await check(uuid, next));
      // Nothing there: 0.
      expect(expectSuccess(await deactivate(uuid, domain))).toEqual({ deactivated: 0 });
    });

    it('leaves an audit row per activation it deletes, with the actor "license"; one that frees nothing or is refused leaves none', async () => {
      const { key, project, uuid, domain, license, base } = await setup({ max_subdomains_per_domain: 5 });
      expectSuccess(await check(uuid, domain));
      const [own] = (await list(key, base)).data;
      const res = await deactivate(uuid, domain)
        .set('X-Request-Id', 'self-service-1')
        .set('User-Agent', 'shop-plugin/2.0');
      expect(expectSuccess(res)).toEqual({ deactivated: 1 });
      expectSuccess(await deactivate(uuid, domain).set('X-Request-Id', 'self-service-2'));
      expectError(await deactivate(uuid, '*.bad').set('X-Request-Id', 'self-service-3'), 422);
      const log = expectSuccess(await api(key).get(`/project/${project.id}/audit-log`)).data;
      const rows = log.filter((row: { request_id: string }) => row.request_id.startsWith('self-service-'));
      expect(rows).toEqual([
        {
          id: expect.any(Number),
          action: 'license.deactivated',
          resource_type: 'license',
          resource_id: license.id,
          project_id: project.id,
          actor: { type: 'license', api_key_id: null, api_key_prefix: null, user_id: null },
          changes: { activation: [{ id: own.id, domain, host: '' }, null] },
          request_id: 'self-service-1',
          ip: '127.0.0.1',
          user_agent: 'shop-plugin/2.0',
          created_at: expect.stringMatching(TIMESTAMP),
        },
      ]);
    });

    it('takes the domain from X-Service-Domain, else `domain` in the body, else the query — never from Origin', async () => {
      const { uuid, domain, project, key } = await setup();
      const other = (await makeDomain(t, key, project.id, { domain: host('other'), has_paid: true })).domain;
      expectSuccess(await check(uuid, domain));
      expectSuccess(await check(uuid, other));
      expect(expectSuccess(await deactivate(uuid).send({ domain }))).toEqual({ deactivated: 1 });
      expect(expectSuccess(await deactivate(uuid).query({ domain: other }))).toEqual({ deactivated: 1 });
      const res = await deactivate(uuid).set('Origin', `https://${domain}`);
      expect(expectError(res, 422, ['domain']).errors).toEqual({ domain: [DOMAIN_REQUIRED] });
      // The license key may come from the body too.
      expect(expectSuccess(await deactivate().send({ license: uuid, domain }))).toEqual({ deactivated: 0 });
    });

    it('422 on `domain` for a value that is not a host name, and nothing is deactivated', async () => {
      const { key, uuid, domain, base } = await setup();
      expectSuccess(await check(uuid, domain));
      for (const bad of [
        '*.example.com',
        '203.0.113.7',
        '[::1]',
        'not a domain',
        'a..b',
        `${'x'.repeat(64)}.com`,
      ]) {
        const res = await deactivate(uuid, bad);
        expect({ bad, status: res.status }).toEqual({ bad, status: 422 });
        expect(expectError(res, 422, ['domain']).errors).toEqual({ domain: [NOT_A_HOST] });
      }
      expect(expectError(await deactivate(uuid).send({ domain: 42 }), 422, ['domain']).errors).toEqual({
        domain: ['The domain field must be a string.'],
      });
      expect(expectError(await deactivate(uuid), 422, ['domain']).message).toBe(DOMAIN_REQUIRED);
      expect((await list(key, base)).data).toHaveLength(1);
    });

    it('refuses like has-paid: 401 without a key, 403 for an unknown, revoked or expired license, a locked project or a refused address', async () => {
      const { key, project, uuid, domain, license, base } = await setup();
      expectSuccess(await check(uuid, domain));
      expect(expectError(await deactivate(undefined, domain), 401).message).toBe(
        'License key missing: send it in the X-LICENSE-KEY header.',
      );
      const unknown = expectError(await deactivate('00000000-0000-4000-8000-000000000000', domain), 403);
      expect(unknown).toMatchObject({ message: 'Invalid license key.', data: { redirect_url: null } });
      expectSuccess(await api(key).post(`/project/${project.id}/licenses/${license.id}/revoke`));
      expect(expectError(await deactivate(uuid, domain), 403)).toMatchObject({
        message: 'This license has been revoked.',
        data: { redirect_url: REDIRECT },
      });
      expectSuccess(await api(key).post(`/project/${project.id}/licenses/${license.id}/reactivate`));
      expectSuccess(await api(key).post(`/project/${project.id}/lock`, {}));
      expect(expectError(await deactivate(uuid, domain), 403).message).toBe('Project is locked.');
      expectSuccess(await api(key).post(`/project/${project.id}/unlock`));
      expectSuccess(
        await api(key).patch(`/project/${project.id}/licenses/${license.id}`, {
          allowed_ips: '198.51.100.0/24',
        }),
      );
      expect(expectError(await deactivate(uuid, domain), 403).message).toBe(
        'Your IP address is not allowed to use this license.',
      );
      expectSuccess(
        await api(key).patch(`/project/${project.id}/licenses/${license.id}`, {
          allowed_ips: null,
          allowed_countries: 'DE',
        }),
      );
      expect(expectError(await deactivate(uuid, domain).set('CF-IPCountry', 'US'), 403).message).toBe(
        'Requests from your country are not allowed for this license.',
      );
      expect((await list(key, base)).data).toHaveLength(1);
      expect(expectSuccess(await deactivate(uuid, domain).set('CF-IPCountry', 'DE'))).toEqual({
        deactivated: 1,
      });
    });

    it('allows 3 deactivations that free something per license and UTC day, then 429 with Retry-After until midnight; one that frees nothing is not counted', async () => {
      const { key, project, uuid, base } = await setup();
      const used = async () => {
        const d = (await makeDomain(t, key, project.id, { domain: host('swap'), has_paid: true })).domain;
        expectSuccess(await check(uuid, d));
        return d;
      };
      for (let i = 0; i < 3; i++) {
        expect(expectSuccess(await deactivate(uuid, await used()))).toEqual({ deactivated: 1 });
        expect(expectSuccess(await deactivate(uuid, host('never')))).toEqual({ deactivated: 0 });
      }
      const fourth = await used();
      expect429UntilMidnight(
        await deactivate(uuid, fourth),
        'This license has used its 3 self-service deactivations for today; more are possible after midnight UTC.',
      );
      expect((await list(key, base)).data.map((a: { domain: string }) => a.domain)).toEqual([fourth]);
      // Another license has its own allowance; the vendor is not limited.
      const other = await makeLicense(t, key, project.id);
      expectSuccess(await check(other.uuid, fourth));
      expect(expectSuccess(await deactivate(other.uuid, fourth))).toEqual({ deactivated: 1 });
      const [row] = (await list(key, base)).data;
      expectSuccess(await api(key).delete(`${base}/${row.id}`));
    });

    it("drops the project's cached answers only when it frees something: a holder calling it in a loop cannot", async () => {
      const { key, project, uuid } = await setup();
      const generations = t.app.get(ProjectGenerations);
      // A stopped clock: without Redis, generations also move on with age (UNSHARED_MAX_AGE_MS).
      const stopped = Date.now();
      generations.now = () => stopped;
      const swap = async () => {
        const d = (await makeDomain(t, key, project.id, { domain: host('gen'), has_paid: true })).domain;
        expectSuccess(await check(uuid, d));
        return d;
      };
      const hosts = [await swap(), await swap(), await swap(), await swap()];
      const warm = generations.current(project.id);
      expect(warm).not.toBeNull();
      for (let i = 0; i < 5; i++)
        expect(expectSuccess(await deactivate(uuid, host('never')))).toEqual({ deactivated: 0 });
      expect(generations.current(project.id)).toBe(warm);
      // Freeing a slot is a change every instance must see.
      expect(expectSuccess(await deactivate(uuid, hosts[0]))).toEqual({ deactivated: 1 });
      const freed = generations.current(project.id);
      expect(freed).toBeGreaterThan(warm as number);
      expect(expectSuccess(await deactivate(uuid, hosts[1]))).toEqual({ deactivated: 1 });
      expect(expectSuccess(await deactivate(uuid, hosts[2]))).toEqual({ deactivated: 1 });
      const used = generations.current(project.id);
      // Past the allowance: refused, and nothing dropped.
      for (let i = 0; i < 5; i++)
        expect(expectError(await deactivate(uuid, hosts[3]), 429).message).toBe(
          'This license has used its 3 self-service deactivations for today; more are possible after midnight UTC.',
        );
      expect(generations.current(project.id)).toBe(used);
      generations.now = Date.now;
    });

    it('racing deactivations of different hosts never exceed the allowance', async () => {
      const { key, project, uuid } = await setup();
      const hosts: string[] = [];
      for (let i = 0; i < 8; i++) {
        hosts.push(
          (await makeDomain(t, key, project.id, { domain: host(`race${i}`), has_paid: true })).domain,
        );
        expectSuccess(await check(uuid, hosts[i]));
      }
      const answers = await Promise.all(hosts.map((h) => deactivate(uuid, h)));
      expect(tally(answers)).toEqual({ 200: 3, 429: 5 });
      for (const res of answers) if (res.status === 200) expect(res.body.data).toEqual({ deactivated: 1 });
    });
  });
});

describe('activations with SELF_DEACTIVATIONS_PER_DAY set', () => {
  it.each([
    [
      '1',
      429,
      'This license has used its 1 self-service deactivation for today; more are possible after midnight UTC.',
    ],
    ['0', 403, 'Self-service deactivation is turned off on this service; ask the vendor to free the slot.'],
  ])('SELF_DEACTIVATIONS_PER_DAY=%s', async (perDay, status, message) => {
    const t = await createTestApp({ SELF_DEACTIVATIONS_PER_DAY: perDay });
    try {
      const { key } = await makeAccount(t.app);
      const project = await makeProject(t, key, { has_paid: true, default_redirect_url: REDIRECT });
      const a = (await makeDomain(t, key, project.id, { has_paid: true })).domain;
      const b = (await makeDomain(t, key, project.id, { has_paid: true })).domain;
      const license = await makeLicense(t, key, project.id);
      const run = (path: string, domain: string) =>
        t.http().post(`/api/v1${path}`).set('X-LICENSE-KEY', license.uuid).set('X-Service-Domain', domain);
      for (const d of [a, b]) expectSuccess(await run('/project/has-paid', d));
      if (perDay === '1')
        expect(expectSuccess(await run('/license/deactivate', a))).toEqual({ deactivated: 1 });
      const refused = expectError(await run('/license/deactivate', b), status);
      expect(refused.message).toBe(message);
      if (status === 403) expect(refused.data).toEqual({ redirect_url: REDIRECT });
      // Nothing to free is still answered while self-service is on; off, every call is refused alike.
      if (perDay === '1')
        expect(expectSuccess(await run('/license/deactivate', `never.${a}`))).toEqual({ deactivated: 0 });
      else expect(expectError(await run('/license/deactivate', `never.${a}`), 403).message).toBe(message);
    } finally {
      await t.close();
    }
  });
});

describe('upgrading to activations', () => {
  it('keeps existing activations (first_seen_at from created_at, last_seen_at the same) and announces no expiry that had already passed', async () => {
    const db = await databaseBefore(Activations1732000000006, async (before, { user, project }) => {
      const license = (title: string, expires: string | null) =>
        before.query(
          'INSERT INTO licenses (project_id, user_id, uuid, uuid_hash, title, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
          [project.id, user.id, `uuid-${title}`, `hash-${title}`, title, expires],
        );
      await license('expired', '2020-01-01 00:00:00');
      await license('future', '2999-01-01 00:00:00');
      await license('never', null);
      const [expired] = await before.query("SELECT id FROM licenses WHERE title = 'expired'");
      await before.query(
        "INSERT INTO license_activations (license_id, domain, host, created_at) VALUES (?, 'old.example', '', '2024-05-06 07:08:09')",
        [expired.id],
      );
    });
    let t: TestApp | undefined;
    try {
      t = await createTestApp({}, { databaseUrl: db.url });
      // SQLite answers 'YYYY-MM-DD HH:MM:SS' (UTC), MySQL/MariaDB a Date.
      const iso = (v: unknown) =>
        (v instanceof Date ? v : new Date(`${String(v).replace(' ', 'T')}Z`)).toISOString();
      const rows = await t.dataSource.query(
        'SELECT domain, host, first_seen_at, last_seen_at FROM license_activations',
      );
      expect(
        rows.map((r: Record<string, unknown>) => [
          r.domain,
          r.host,
          iso(r.first_seen_at),
          iso(r.last_seen_at),
        ]),
      ).toEqual([['old.example', '', '2024-05-06T07:08:09.000Z', '2024-05-06T07:08:09.000Z']]);
      const notices = await t.dataSource.query('SELECT title, expiry_notice FROM licenses ORDER BY title');
      expect(notices).toEqual([
        { title: 'expired', expiry_notice: 'expired' },
        { title: 'future', expiry_notice: null },
        { title: 'never', expiry_notice: null },
      ]);
    } finally {
      await t?.close();
      await db.drop();
    }
  });
});
