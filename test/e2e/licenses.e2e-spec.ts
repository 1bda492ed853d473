import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { UserEntity } from '../../src/auth/user.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
  uniqueToken,
} from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { sleep } from '../utils/wait.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { apiAs, expectClientError } from '../utils/api.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const DAY = /^\d{4}-\d\d-\d\d$/;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The license fields of docs/decisions.md#licenses: the table plus project_id, revoked_at, created_at, updated_at — exactly these. */
const LICENSE_KEYS = [
  'id',
  'project_id',
  'uuid',
  'title',
  'domain_id',
  'expires_at',
  'max_domains',
  'max_subdomains_per_domain',
  'max_usage_per_day',
  'allowed_ips',
  'allowed_countries',
  'is_test_license',
  'allow_configs',
  'revoked_at',
  'payment_reference',
  'grace_until',
  // License billing (docs/api.md#licenses-that-carry-their-own-payment).
  'billing',
  'has_paid',
  'customer_id',
  'revoked_by',
  'plan_id',
  'plan',
  'entitlements',
  'effective_entitlements',
  'created_at',
  'updated_at',
].sort();
const HIDDEN = ['validate_against', 'uuid_hash', 'user_id'];
/** What a license looks like when nothing optional was sent and the owner has no license_defaults. */
const BARE = {
  domain_id: null,
  expires_at: null,
  max_domains: null,
  max_subdomains_per_domain: null,
  max_usage_per_day: null,
  allowed_ips: null,
  allowed_countries: null,
  is_test_license: false,
  allow_configs: false,
  revoked_at: null,
  payment_reference: null,
  grace_until: null,
  plan_id: null,
  plan: null,
  entitlements: null,
  effective_entitlements: {},
};
const LIMITS = ['max_domains', 'max_subdomains_per_domain', 'max_usage_per_day'] as const;

function expectLicenseShape(l: Record<string, unknown>) {
  expect(Object.keys(l).sort()).toEqual(LICENSE_KEYS);
  for (const hidden of HIDDEN) expect(l).not.toHaveProperty(hidden);
  expect(typeof l.id).toBe('number');
  expect(typeof l.project_id).toBe('number');
  expect(l.uuid).toMatch(UUID_V4);
  expect(typeof l.title).toBe('string');
  expect(typeof l.is_test_license).toBe('boolean');
  expect(typeof l.allow_configs).toBe('boolean');
  expect(l.created_at).toMatch(TIMESTAMP);
  expect(l.updated_at).toMatch(TIMESTAMP);
  for (const ts of ['expires_at', 'revoked_at']) if (l[ts] !== null) expect(l[ts]).toMatch(TIMESTAMP);
}

/** Every bad input is a 4xx in the envelope, never a 500. */
const ids = (page: { data: Array<{ id: number }> }) => page.data.map((d) => d.id);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const inDays = (days: number) =>
  new Date(Date.now() + days * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('licenses', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  const api = (key?: string) => apiAs(t, key);

  /** A fresh owner with a global key and one project. */
  async function setup(overrides: Parameters<typeof makeUser>[1] = {}) {
    const user = await makeUser(t.app, overrides);
    const key = await makeApiKey(t.app, user);
    const project = await makeProject(t, key);
    return { user, key, project, base: `/project/${project.id}/licenses` };
  }

  /** The list as a key that never read it before sees it (no cache involved). */
  async function freshList(user: UserEntity, base: string, query = '') {
    return expectSuccess(await api(await makeApiKey(t.app, user)).get(`${base}${query}`));
  }

  describe('POST /project/{id}/licenses', () => {
    it('creates a license with a v4 uuid, exactly the returned fields and null/false defaults', async () => {
      const { key, project, base } = await setup();
      const res = await api(key).post(base, { title: 'First license' });
      const data = expectSuccess(res, 201);
      expectLicenseShape(data);
      expect(data).toMatchObject({ ...BARE, project_id: project.id, title: 'First license' });
      // The hash of the key is never returned either, under any name.
      expect(JSON.stringify(res.body)).not.toContain(sha256(data.uuid));
      expect(JSON.stringify(res.body)).not.toContain('project_domains');

      const second = expectSuccess(await api(key).post(base, { title: 'Second license' }), 201);
      expect(second.uuid).toMatch(UUID_V4);
      expect(second.uuid).not.toBe(data.uuid);
      expect(second.id).toBeGreaterThan(data.id);

      const read = expectSuccess(await api(key).get(`${base}/${data.id}`));
      expectLicenseShape(read);
      expect(read).toEqual(data);
    });

    it('stores every field sent, normalising the IP and country lists', async () => {
      const { key, project, base } = await setup();
      const domain = await makeDomain(t, key, project.id);
      const data = expectSuccess(
        await api(key).post(base, {
          title: '  Full license  ',
          domain_id: domain.id,
          expires_at: '2099-06-15T12:30:00Z',
          max_domains: 3,
          max_subdomains_per_domain: 0,
          max_usage_per_day: 1000,
          allowed_ips: '203.0.113.7, 10.0.0.0/8, 2001:db8::/32',
          allowed_countries: 'de, fr',
          is_test_license: true,
          allow_configs: true,
        }),
        201,
      );
      expectLicenseShape(data);
      expect(data).toMatchObject({
        project_id: project.id,
        title: 'Full license',
        domain_id: domain.id,
        expires_at: '2099-06-15T12:30:00Z',
        max_domains: 3,
        max_subdomains_per_domain: 0,
        max_usage_per_day: 1000,
        allowed_ips: '203.0.113.7,10.0.0.0/8,2001:db8::/32',
        allowed_countries: 'DE,FR',
        is_test_license: true,
        allow_configs: true,
        revoked_at: null,
      });
      expect(expectSuccess(await api(key).get(`${base}/${data.id}`))).toEqual(data);
    });

    it('accepts explicit nulls for the nullable fields', async () => {
      const { key, base } = await setup();
      const data = expectSuccess(
        await api(key).post(base, {
          title: 'Nulls',
          domain_id: null,
          expires_at: null,
          max_domains: null,
          max_subdomains_per_domain: null,
          max_usage_per_day: null,
          allowed_ips: null,
          allowed_countries: null,
        }),
        201,
      );
      expect(data).toMatchObject({ ...BARE, title: 'Nulls' });
    });

    it('applies the owner’s license_defaults to omitted fields only', async () => {
      const { user, key, base } = await setup();
      await t.dataSource
        .getRepository(UserEntity)
        .update({ id: user.id }, { license_defaults: { max_usage_per_day: 7, is_test_license: true } });
      const defaulted = expectSuccess(await api(key).post(base, { title: 'Defaulted' }), 201);
      expect(defaulted).toMatchObject({
        ...BARE,
        title: 'Defaulted',
        max_usage_per_day: 7,
        is_test_license: true,
      });

      const explicit = expectSuccess(
        await api(key).post(base, {
          title: 'Explicit',
          max_usage_per_day: 3,
          is_test_license: false,
          max_domains: 2,
        }),
        201,
      );
      expect(explicit).toMatchObject({
        ...BARE,
        title: 'Explicit',
        max_usage_per_day: 3,
        is_test_license: false,
        max_domains: 2,
      });

      // An explicit null is not "omitted".
      const nulled = expectSuccess(
        await api(key).post(base, { title: 'Nulled', max_usage_per_day: null }),
        201,
      );
      expect(nulled).toMatchObject({ max_usage_per_day: null, is_test_license: true });

      // Another owner is not affected.
      const other = await setup();
      expect(expectSuccess(await api(other.key).post(other.base, { title: 'Defaulted' }), 201)).toMatchObject(
        { ...BARE, title: 'Defaulted' },
      );
    });

    it('ignores unknown and service-owned fields', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const sent = {
        title: 'Unknown fields',
        id: 424242,
        uuid: '00000000-0000-4000-8000-000000000000',
        uuid_hash: 'x'.repeat(64),
        user_id: 999999,
        project_id: other.id,
        validate_against: 'nothing',
        revoked_at: '2020-01-01T00:00:00Z',
        created_at: '2020-01-01T00:00:00Z',
        bogus: 'x',
      };
      const data = expectSuccess(await api(key).post(base, sent), 201);
      expectLicenseShape(data);
      expect(data.id).not.toBe(424242);
      expect(data.uuid).not.toBe(sent.uuid);
      expect(data.project_id).toBe(project.id);
      expect(data.revoked_at).toBeNull();
      expect(data.created_at).not.toBe(sent.created_at);
      expect(data).not.toHaveProperty('bogus');
      expect(expectSuccess(await api(key).get(`/project/${other.id}/licenses`)).data).toEqual([]);
    });

    it('validates the title: required, a string, at most 255 characters', async () => {
      const { user, key, base } = await setup();
      const bad: unknown[] = [
        {},
        { title: '' },
        { title: '   ' },
        { title: null },
        { title: 'x'.repeat(256) },
        { title: 123 },
        { title: ['a'] },
        { title: { a: 1 } },
        { title: true },
      ];
      for (const body of bad) {
        const res = await api(key).post(base, body);
        expect({ body, status: res.status }).toEqual({ body, status: 422 });
        expectError(res, 422, ['title']);
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const max = expectSuccess(await api(key).post(base, { title: 't'.repeat(255) }), 201);
      expect(max.title).toHaveLength(255);
    });

    it('title is unique within the project, not across projects', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const stranger = await setup();
      await makeLicense(t, key, project.id, { title: 'Taken' });
      const body = expectError(await api(key).post(base, { title: 'Taken' }), 422, ['title']);
      expect(body.errors.title[0]).toBe('The title has already been taken.');
      expectError(await api(key).post(base, { title: '  Taken ' }), 422, ['title']);
      expect(
        expectSuccess(await api(key).post(`/project/${other.id}/licenses`, { title: 'Taken' }), 201).title,
      ).toBe('Taken');
      expect(expectSuccess(await api(stranger.key).post(stranger.base, { title: 'Taken' }), 201).title).toBe(
        'Taken',
      );
    });

    it('domain_id must name a domain of this project', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const foreign = await makeDomain(t, key, other.id);
      const stranger = await setup();
      const strangers = await makeDomain(t, stranger.key, stranger.project.id);
      for (const domain_id of [foreign.id, strangers.id, 999999, 0, -1, 'abc', '1', 1.5, true, {}]) {
        const res = await api(key).post(base, { title: `pin-${uniqueToken()}`, domain_id });
        expect({ domain_id, status: res.status }).toEqual({ domain_id, status: 422 });
        expectError(res, 422, ['domain_id']);
      }
      const own = await makeDomain(t, key, project.id);
      expect(
        expectSuccess(await api(key).post(base, { title: 'Pinned', domain_id: own.id }), 201).domain_id,
      ).toBe(own.id);
    });

    it('expires_at must be a valid date in the future', async () => {
      const { user, key, base } = await setup();
      const past = new Date(Date.now() - 60_000).toISOString();
      for (const expires_at of [
        '2000-01-01T00:00:00Z',
        past,
        'not a date',
        '',
        '2099-13-45T00:00:00Z',
        12345,
        true,
        { at: 'x' },
      ]) {
        const res = await api(key).post(base, { title: `exp-${uniqueToken()}`, expires_at });
        expect({ expires_at, status: res.status }).toEqual({ expires_at, status: 422 });
        expectError(res, 422, ['expires_at']);
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const soon = inDays(1);
      expect(
        expectSuccess(await api(key).post(base, { title: 'Tomorrow', expires_at: soon }), 201).expires_at,
      ).toBe(soon);
      const dateOnly = expectSuccess(
        await api(key).post(base, { title: 'Date only', expires_at: '2099-01-02' }),
        201,
      );
      expect(dateOnly.expires_at).toMatch(/^2099-01-0[12]T/);
    });

    it('expires_at naming a day the month does not have, or not ISO-8601, is refused, never moved to another day', async () => {
      const { user, key, project, base } = await setup();
      // JavaScript's Date reads 2099-02-30 as 2099-03-02, and "Feb 30 2099" in the server's time zone.
      const cases = [
        '2099-02-30',
        '2099-02-29T12:00:00Z',
        '2099-04-31T00:00:00+02:00',
        '2099-06-31 10:00',
        'Feb 30 2099',
        '2099/03/01',
        '12/01/2099',
      ];
      for (const expires_at of cases) {
        const res = await api(key).post(base, { title: `odd-${uniqueToken()}`, expires_at });
        expect({ expires_at, status: res.status, errors: res.body.errors }).toEqual({
          expires_at,
          status: 422,
          errors: { expires_at: ['The expires at field must be a valid date.'] },
        });
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const license = await makeLicense(t, key, project.id, {
        title: 'Kept',
        expires_at: '2099-01-01T00:00:00Z',
      });
      const patch = await api(key).patch(`${base}/${license.id}`, { expires_at: '2099-02-30T00:00:00Z' });
      expect({ status: patch.status, errors: patch.body.errors }).toEqual({
        status: 422,
        errors: { expires_at: ['The expires at field must be a valid date.'] },
      });
      expect(expectSuccess(await api(key).get(`${base}/${license.id}`)).expires_at).toBe(
        '2099-01-01T00:00:00Z',
      );
      // Real days, leap days and ISO forms with offsets are taken as before.
      for (const [sent, stored] of [
        ['2096-02-29', '2096-02-29T00:00:00Z'],
        ['2099-12-31T23:59:59+01:00', '2099-12-31T22:59:59Z'],
        ['2099-04-30T10:00:00.250Z', '2099-04-30T10:00:00Z'],
        ['2099', '2099-01-01T00:00:00Z'],
        ['2099-06', '2099-06-01T00:00:00Z'],
      ]) {
        expect(
          expectSuccess(await api(key).post(base, { title: `ok-${uniqueToken()}`, expires_at: sent }), 201)
            .expires_at,
        ).toBe(stored);
      }
    });

    it('expires_at past year 9999 is refused, never stored truncated nor a 500', async () => {
      const { user, key, base } = await setup();
      for (const expires_at of ['+275760-09-13T00:00:00Z', '+010000-01-01T00:00:00Z']) {
        const res = await api(key).post(base, { title: `far-${uniqueToken()}`, expires_at });
        expect({ expires_at, status: res.status }).toEqual({ expires_at, status: 422 });
        expectError(res, 422, ['expires_at']);
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const last = expectSuccess(
        await api(key).post(base, { title: 'Last second', expires_at: '9999-12-31T23:59:59Z' }),
        201,
      );
      expect(last.expires_at).toBe('9999-12-31T23:59:59Z');
    });

    it('the three limits are integers >= 0', async () => {
      const { user, key, base } = await setup();
      for (const field of LIMITS) {
        for (const value of [-1, -100, 1.5, '5', 'abc', true, [1], { n: 1 }, 2_147_483_648]) {
          const res = await api(key).post(base, { title: `lim-${uniqueToken()}`, [field]: value });
          expect({ field, value, status: res.status }).toEqual({ field, value, status: 422 });
          expectError(res, 422, [field]);
        }
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const zero = expectSuccess(
        await api(key).post(base, {
          title: 'Zeros',
          max_domains: 0,
          max_subdomains_per_domain: 0,
          max_usage_per_day: 0,
        }),
        201,
      );
      expect(zero).toMatchObject({ max_domains: 0, max_subdomains_per_domain: 0, max_usage_per_day: 0 });
    });

    it('allowed_ips: comma-separated addresses or CIDR ranges, IPv4 or IPv6', async () => {
      const { user, key, base } = await setup();
      const bad: unknown[] = [
        '203.0.113.7, not-an-ip',
        'localhost',
        '300.1.1.1',
        '10.0.0.0/33',
        '2001:db8::/129',
        '10.0.0.0/8/8',
        '10.0.0.0/x',
        '1.2.3',
        123,
        [1, 2],
        ['10.0.0.1', 5],
        ['10.0.0.1', 'not-an-ip'],
        true,
      ];
      for (const allowed_ips of bad) {
        const res = await api(key).post(base, { title: `ips-${uniqueToken()}`, allowed_ips });
        expect({ allowed_ips, status: res.status }).toEqual({ allowed_ips, status: 422 });
        expectError(res, 422, ['allowed_ips']);
      }
      expect((await freshList(user, base)).data).toEqual([]);
      const wrongKind = expectError(
        await api(key).post(base, { title: `ips-${uniqueToken()}`, allowed_ips: [1, 2] }),
        422,
        ['allowed_ips'],
      );
      expect(wrongKind.errors.allowed_ips).toEqual([
        'The allowed ips field must be a string of comma-separated values (or an array of strings).',
      ]);
      const good: Array<[string | string[], string | null]> = [
        ['203.0.113.7, 10.0.0.0/8, 2001:db8::/32', '203.0.113.7,10.0.0.0/8,2001:db8::/32'],
        ['127.0.0.1', '127.0.0.1'],
        ['::1 ,  192.168.0.0/16', '::1,192.168.0.0/16'],
        // An array of strings is the same list, joined.
        [['203.0.113.7', ' 10.0.0.0/8'], '203.0.113.7,10.0.0.0/8'],
        [[], null],
      ];
      for (const [input, stored] of good) {
        expect(
          expectSuccess(await api(key).post(base, { title: `ips-${uniqueToken()}`, allowed_ips: input }), 201)
            .allowed_ips,
        ).toBe(stored);
      }
    });

    it('allowed_countries: comma-separated ISO 3166-1 alpha-2 codes, upper-cased', async () => {
      const { user, key, base } = await setup();
      for (const allowed_countries of ['XX', 'DEU', 'de, xx', 'D', 'de;fr', '12', 42, [42], ['DE', 'XX']]) {
        const res = await api(key).post(base, { title: `cc-${uniqueToken()}`, allowed_countries });
        expect({ allowed_countries, status: res.status }).toEqual({ allowed_countries, status: 422 });
        expectError(res, 422, ['allowed_countries']);
      }
      expect((await freshList(user, base)).data).toEqual([]);
      for (const [input, stored] of [
        ['de, fr', 'DE,FR'],
        ['US', 'US'],
        [' gb ,Ie', 'GB,IE'],
        [['de', 'FR'], 'DE,FR'],
      ] as Array<[string | string[], string]>) {
        expect(
          expectSuccess(
            await api(key).post(base, { title: `cc-${uniqueToken()}`, allowed_countries: input }),
            201,
          ).allowed_countries,
        ).toBe(stored);
      }
    });

    it('the two flags must be real booleans', async () => {
      const { user, key, base } = await setup();
      for (const field of ['is_test_license', 'allow_configs']) {
        for (const value of ['true', 'false', '1', 1, 0, 'yes', null, {}]) {
          const res = await api(key).post(base, { title: `flag-${uniqueToken()}`, [field]: value });
          expect({ field, value, status: res.status }).toEqual({ field, value, status: 422 });
          expectError(res, 422, [field]);
        }
      }
      expect((await freshList(user, base)).data).toEqual([]);
    });

    it('reports every bad field at once (request-shape errors)', async () => {
      const { key, base } = await setup();
      const body = expectError(
        await api(key).post(base, {
          title: '',
          expires_at: 'not a date',
          max_domains: -1,
          max_subdomains_per_domain: 1.5,
          max_usage_per_day: 'x',
          is_test_license: 'true',
          allow_configs: 1,
        }),
        422,
        [
          'title',
          'expires_at',
          'max_domains',
          'max_subdomains_per_domain',
          'max_usage_per_day',
          'is_test_license',
          'allow_configs',
        ],
      );
      expect(body.message).toMatch(/more error/);
    });

    it('reports every bad field at once (date and lists)', async () => {
      const { key, base } = await setup();
      expectError(
        await api(key).post(base, {
          title: 'Fine',
          expires_at: '2000-01-01T00:00:00Z',
          allowed_ips: 'nope',
          allowed_countries: 'XX',
        }),
        422,
        ['expires_at', 'allowed_ips', 'allowed_countries'],
      );
    });

    it('reports the checks that need the database together, once the request is well formed', async () => {
      const { key, project, base } = await setup();
      await makeLicense(t, key, project.id, { title: 'Taken' });
      expectError(await api(key).post(base, { title: 'Taken', domain_id: 999999 }), 422, [
        'title',
        'domain_id',
      ]);
    });

    it('request-shape errors come first: the database checks wait until the request is well formed', async () => {
      const { key, project, base } = await setup();
      await makeLicense(t, key, project.id, { title: 'Taken' });
      const body = expectError(
        await api(key).post(base, {
          title: 'Taken',
          max_domains: -1,
          domain_id: 999999,
          allowed_ips: 'nope',
          is_test_license: 'yes',
        }),
        422,
        ['max_domains', 'allowed_ips', 'is_test_license'],
      );
      expect(body.errors.title).toBeUndefined();
    });

    it('never answers 500 for odd bodies', async () => {
      const { key, base } = await setup();
      const bodies: unknown[] = [
        { title: 'ok', allowed_ips: '' },
        { title: 'ok2', allowed_ips: ' , ,' },
        { title: 'ok3', allowed_countries: '' },
        { title: 'ok4', allowed_ips: 'x'.repeat(5000) },
        { title: 'ok5', allowed_countries: 'DE,'.repeat(1000) },
        { title: 'ok6', expires_at: '9999-12-31T23:59:59Z' },
        { title: 'ok8', domain_id: 2_147_483_648 },
        { title: 'ok9', max_domains: 2_147_483_647 },
        [],
        'just a string',
      ];
      for (const body of bodies) {
        const res = await api(key).post(base, body);
        expect({ body, status: res.status < 500 ? 'below 500' : res.status }).toEqual({
          body,
          status: 'below 500',
        });
        if (res.status >= 400) expectClientError(res);
        else expectLicenseShape(expectSuccess(res, 201));
      }
    });

    it('403 when the owner may not create licenses (can_create_licenses false)', async () => {
      const { user, key, base } = await setup({ can_create_licenses: false });
      const body = expectError(await api(key).post(base, { title: 'Not allowed' }), 403);
      expect(body.errors).toBeNull();
      expectError(await api(key).post(base, { title: 'Not allowed', max_domains: 1 }), 403);
      expect((await freshList(user, base)).data).toEqual([]);
      // Reads still work.
      expectSuccess(await api(key).get(base));
    });
  });

  describe('access', () => {
    /** Every license route of `base` for license `id`, called with `who`. */
    function everyRoute(who: string | undefined, base: string, id: number) {
      const a = api(who);
      return [
        ['list', () => a.get(base)],
        ['create', () => a.post(base, { title: `x-${uniqueToken()}` })],
        ['get', () => a.get(`${base}/${id}`)],
        ['patch', () => a.patch(`${base}/${id}`, { max_domains: 9 })],
        ['put', () => a.put(`${base}/${id}`, { title: `x-${uniqueToken()}` })],
        ['revoke', () => a.post(`${base}/${id}/revoke`)],
        ['reactivate', () => a.post(`${base}/${id}/reactivate`)],
        ['usage', () => a.get(`${base}/${id}/usage`)],
        ['delete', () => a.delete(`${base}/${id}`)],
      ] as const;
    }

    it('401 without a key and 403 with an unknown key on every license route', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id);
      for (const who of [undefined, 'lg_not-a-real-key', 'garbage']) {
        const status = who === undefined ? 401 : 403;
        for (const [name, call] of everyRoute(who, base, l.id)) {
          const res = await call();
          expect({ who, name, status: res.status }).toEqual({ who, name, status });
          expectError(res, status);
        }
      }
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toEqual(l);
    });

    it('license authentication is not accepted', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id);
      expectError(
        await t.http().get(`/api/v1${base}`).set('Accept', 'application/json').set('X-LICENSE-KEY', l.uuid),
        401,
      );
      expectError(
        await t
          .http()
          .get(`/api/v1${base}/${l.id}`)
          .set('Accept', 'application/json')
          .set('X-LICENSE-KEY', l.uuid),
        401,
      );
      expectError(
        await t.http().get(`/api/v1${base}?license=${l.uuid}`).set('Accept', 'application/json'),
        401,
      );
    });

    it('403 for another owner’s global key on every license route', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id);
      const stranger = await makeAccount(t.app);
      await makeProject(t, stranger.key);
      for (const [name, call] of everyRoute(stranger.key, base, l.id)) {
        const res = await call();
        expect({ name, status: res.status }).toEqual({ name, status: 403 });
        expectError(res, 403);
      }
      const read = expectSuccess(await api(key).get(`${base}/${l.id}`));
      expect(read).toEqual(l);
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([l.id]);
    });

    it('403 for a scoped key of another project on every license route', async () => {
      const { user, key, project, base } = await setup();
      const other = await makeProject(t, key);
      const l = await makeLicense(t, key, project.id);
      const scopedOther = await makeApiKey(t.app, user, { project_id: other.id });
      for (const [name, call] of everyRoute(scopedOther, base, l.id)) {
        const res = await call();
        expect({ name, status: res.status }).toEqual({ name, status: 403 });
        expectError(res, 403);
      }
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toEqual(l);
    });

    it('a scoped key of the same project works on every license route', async () => {
      const { user, key, project, base } = await setup();
      const scoped = await makeApiKey(t.app, user, { project_id: project.id });
      const s = api(scoped);
      const created = expectSuccess(await s.post(base, { title: 'Scoped' }), 201);
      expect(created.project_id).toBe(project.id);
      expect(ids(expectSuccess(await s.get(base)))).toEqual([created.id]);
      expect(expectSuccess(await s.get(`${base}/${created.id}`))).toEqual(created);
      expect(expectSuccess(await s.patch(`${base}/${created.id}`, { max_domains: 4 })).max_domains).toBe(4);
      expect(
        expectSuccess(await s.put(`${base}/${created.id}`, { title: 'Scoped put' })).max_domains,
      ).toBeNull();
      expect(expectSuccess(await s.post(`${base}/${created.id}/revoke`)).revoked_at).toMatch(TIMESTAMP);
      expect(expectSuccess(await s.post(`${base}/${created.id}/reactivate`)).revoked_at).toBeNull();
      expect(expectSuccess(await s.get(`${base}/${created.id}/usage`)).today.count).toBe(0);
      expect(expectSuccess(await s.delete(`${base}/${created.id}`))).toBeNull();
      expect(expectSuccess(await api(key).get(base)).data).toEqual([]);
    });

    it('404 for an unknown, deleted or malformed project id', async () => {
      const { key, project } = await setup();
      const l = await makeLicense(t, key, project.id);
      for (const pid of ['999999', 'abc', '0', '-1', '1.5']) {
        const base = `/project/${pid}/licenses`;
        for (const [name, call] of everyRoute(key, base, l.id)) {
          const res = await call();
          expect({ pid, name, status: res.status }).toEqual({ pid, name, status: 404 });
          expectError(res, 404);
        }
      }
      expect(expectSuccess(await api(key).delete(`/project/${project.id}`))).toBeNull();
      for (const [name, call] of everyRoute(key, `/project/${project.id}/licenses`, l.id)) {
        const res = await call();
        expect({ name, status: res.status }).toEqual({ name, status: 404 });
        expectError(res, 404);
      }
    });

    it('404 for an unknown or malformed license id', async () => {
      const { key, project, base } = await setup();
      await makeLicense(t, key, project.id);
      for (const lid of ['999999', 'abc', '0', '-1', '1.5', '99999999999']) {
        for (const [name, call] of everyRoute(key, base, lid as unknown as number)) {
          if (name === 'list' || name === 'create') continue;
          const res = await call();
          expect({ lid, name, status: res.status }).toEqual({ lid, name, status: 404 });
          expectError(res, 404);
        }
      }
    });

    it('404 before 403: a license outside the project is 404 before any scope or ownership check', async () => {
      const { user, key, project, base } = await setup();
      const sibling = await makeProject(t, key);
      const siblingLicense = await makeLicense(t, key, sibling.id);
      const own = await makeLicense(t, key, project.id);
      const stranger = await setup();
      const strangerLicense = await makeLicense(t, stranger.key, stranger.project.id);
      const scopedSibling = await makeApiKey(t.app, user, { project_id: sibling.id });

      // The owner: a license of another project (own or not) is simply not found here.
      for (const lid of [siblingLicense.id, strangerLicense.id]) {
        for (const [name, call] of everyRoute(key, base, lid)) {
          if (name === 'list' || name === 'create') continue;
          const res = await call();
          expect({ lid, name, status: res.status }).toEqual({ lid, name, status: 404 });
          expectError(res, 404);
        }
      }
      // Keys that would get 403 on this project still get 404 first.
      for (const who of [stranger.key, scopedSibling]) {
        for (const [name, call] of everyRoute(who, base, siblingLicense.id)) {
          if (name === 'list' || name === 'create') continue;
          const res = await call();
          expect({ name, status: res.status }).toEqual({ name, status: 404 });
          expectError(res, 404);
        }
        // …and 403 for a license that is in the project.
        expectError(await api(who).get(`${base}/${own.id}`), 403);
      }
      // Nothing changed.
      expect(
        expectSuccess(await api(key).get(`/project/${sibling.id}/licenses/${siblingLicense.id}`)),
      ).toEqual(siblingLicense);
      expect(expectSuccess(await api(stranger.key).get(`${stranger.base}/${strangerLicense.id}`))).toEqual(
        strangerLicense,
      );
    });
  });

  describe('GET /project/{id}/licenses', () => {
    it('lists latest first (descending id), only this project’s licenses', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      const a = await makeLicense(t, key, project.id);
      await makeLicense(t, key, other.id);
      const b = await makeLicense(t, key, project.id);
      const c = await makeLicense(t, key, project.id);
      const page = expectSuccess(await api(key).get(base));
      expect(Object.keys(page).sort()).toEqual(['data', 'next_cursor']);
      expect(ids(page)).toEqual([c.id, b.id, a.id]);
      expect(page.next_cursor).toBeNull();
      for (const l of page.data) expectLicenseShape(l);
      expect(page.data[0]).toEqual(c);
    });

    it('an empty project lists nothing', async () => {
      const { key, base } = await setup();
      expect(expectSuccess(await api(key).get(base))).toEqual({ data: [], next_cursor: null });
    });

    it('refuses per_page outside 1..50 or not an integer', async () => {
      const { key, base } = await setup();
      for (const per_page of ['0', '51', 'x', '-1', '1.5', '', '100', 'abc1']) {
        const res = await api(key).get(`${base}?per_page=${per_page}`);
        expect({ per_page, status: res.status }).toEqual({ per_page, status: 422 });
        expectError(res, 422, ['per_page']);
      }
      expectSuccess(await api(key).get(`${base}?per_page=1`));
      expectSuccess(await api(key).get(`${base}?per_page=50`));
    });

    it('walks 45 licenses with per_page 20: pages of 20, 20, 5; defaults and maximum', async () => {
      const { key, project, base } = await setup();
      const created: number[] = [];
      for (let i = 0; i < 45; i++)
        created.push((await makeLicense(t, key, project.id, { title: `walk-${i}` })).id);
      const expected = [...created].sort((x, y) => y - x);

      const seen: number[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `?per_page=20&cursor=${encodeURIComponent(cursor)}` : '?per_page=20';
        const page = expectSuccess(await api(key).get(`${base}${query}`));
        sizes.push(page.data.length);
        seen.push(...ids(page));
        cursor = page.next_cursor;
        if (cursor !== null) expect(typeof cursor).toBe('string');
        pages++;
      } while (cursor !== null && pages < 10);
      expect(sizes).toEqual([20, 20, 5]);
      expect(cursor).toBeNull();
      expect(seen).toEqual(expected);
      expect(new Set(seen).size).toBe(45);

      // Default per_page is 20.
      const first = expectSuccess(await api(key).get(base));
      expect(ids(first)).toEqual(expected.slice(0, 20));
      expect(first.next_cursor).toEqual(expect.any(String));
      // Max 50: everything fits.
      const all = expectSuccess(await api(key).get(`${base}?per_page=50`));
      expect(ids(all)).toEqual(expected);
      expect(all.next_cursor).toBeNull();
      // The default page size also applies when walking with the cursor alone.
      const second = expectSuccess(
        await api(key).get(`${base}?cursor=${encodeURIComponent(first.next_cursor)}`),
      );
      expect(ids(second)).toEqual(expected.slice(20, 40));
    });

    it('licenses created while walking cause no duplicates and no gaps', async () => {
      const { key, project, base } = await setup();
      const original: number[] = [];
      for (let i = 0; i < 45; i++)
        original.push((await makeLicense(t, key, project.id, { title: `orig-${i}` })).id);

      const page1 = expectSuccess(await api(key).get(`${base}?per_page=20`));
      const added: number[] = [];
      for (let i = 0; i < 5; i++)
        added.push((await makeLicense(t, key, project.id, { title: `added-${i}` })).id);
      const page2 = expectSuccess(
        await api(key).get(`${base}?per_page=20&cursor=${encodeURIComponent(page1.next_cursor)}`),
      );
      added.push((await makeLicense(t, key, project.id, { title: 'added-late' })).id);
      const page3 = expectSuccess(
        await api(key).get(`${base}?per_page=20&cursor=${encodeURIComponent(page2.next_cursor)}`),
      );
      expect(page3.next_cursor).toBeNull();

      const seen = [...ids(page1), ...ids(page2), ...ids(page3)];
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual([...original].sort((x, y) => y - x));
      for (const id of added) expect(seen).not.toContain(id);
      // The new ones lead a fresh walk.
      expect(ids(expectSuccess(await api(key).get(`${base}?per_page=6`)))).toEqual(
        [...added].sort((x, y) => y - x),
      );
    });

    it('refuses a tampered cursor and a cursor of another list', async () => {
      const { key, project, base } = await setup();
      const other = await makeProject(t, key);
      for (let i = 0; i < 3; i++) {
        await makeLicense(t, key, project.id);
        await makeLicense(t, key, other.id);
        await makeDomain(t, key, project.id);
      }
      const cursor: string = expectSuccess(await api(key).get(`${base}?per_page=1`)).next_cursor;
      const otherCursor: string = expectSuccess(
        await api(key).get(`/project/${other.id}/licenses?per_page=1`),
      ).next_cursor;
      const domainCursor: string = expectSuccess(
        await api(key).get(`/project/${project.id}/domains?per_page=1`),
      ).next_cursor;
      expect(typeof cursor).toBe('string');
      expect(typeof otherCursor).toBe('string');
      expect(typeof domainCursor).toBe('string');

      const [payload, signature] = cursor.split('.');
      const flipped = signature
        ? `${payload}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`
        : `${cursor}x`;
      const forged = Buffer.from(JSON.stringify({ s: `licenses:${project.id}`, id: 999999 })).toString(
        'base64url',
      );
      const tampered = [
        `${cursor}x`,
        `x${cursor}`,
        flipped,
        'garbage',
        '.',
        `${forged}.${signature ?? ''}`,
        'eyJpZCI6MX0',
        'a'.repeat(600),
      ];
      for (const bad of [...tampered, otherCursor, domainCursor]) {
        const res = await api(key).get(`${base}?cursor=${encodeURIComponent(bad)}`);
        expect({ bad, status: res.status }).toEqual({ bad, status: 422 });
        expectError(res, 422, ['cursor']);
      }
      // The genuine cursor still works.
      expect(
        expectSuccess(await api(key).get(`${base}?per_page=1&cursor=${encodeURIComponent(cursor)}`)).data,
      ).toHaveLength(1);
    });
  });

  describe('GET /project/{id}/licenses?q=&status=', () => {
    /** Three licenses: one active, one revoked, one whose expires_at has passed. */
    async function three() {
      const s = await setup();
      const active = await makeLicense(t, s.key, s.project.id, { title: 'Acme Pro 50%_off' });
      const revoked = await makeLicense(t, s.key, s.project.id, { title: 'Globex basic' });
      const expired = await makeLicense(t, s.key, s.project.id, {
        title: 'Initech pro',
        expires_at: inDays(10),
      });
      expectSuccess(await api(s.key).post(`${s.base}/${revoked.id}/revoke`));
      await t.app
        .get(DataSource)
        .getRepository(LicenseEntity)
        .update(expired.id, { expires_at: new Date(Date.now() - 60_000) });
      return { ...s, active, revoked, expired };
    }

    it('q finds licenses by the start of their key, in any case', async () => {
      const { user, base, active, revoked } = await three();
      expect(ids(await freshList(user, base, `?q=${active.uuid.slice(0, 8)}`))).toEqual([active.id]);
      expect(ids(await freshList(user, base, `?q=${revoked.uuid.slice(0, 13).toUpperCase()}`))).toEqual([
        revoked.id,
      ]);
      // The middle of a key is no prefix.
      expect(ids(await freshList(user, base, `?q=${active.uuid.slice(9, 23)}`))).toEqual([]);
    });

    it('q finds licenses by any part of their title, in any case; blank is no search', async () => {
      const { user, base, active, revoked, expired } = await three();
      expect(ids(await freshList(user, base, '?q=PRO'))).toEqual([expired.id, active.id]);
      expect(ids(await freshList(user, base, '?q=%20globex%20'))).toEqual([revoked.id]);
      expect(ids(await freshList(user, base, '?q=nothing-like-it'))).toEqual([]);
      expect(ids(await freshList(user, base, '?q=%20%20'))).toEqual([expired.id, revoked.id, active.id]);
      expect(ids(await freshList(user, base, '?q='))).toEqual([expired.id, revoked.id, active.id]);
    });

    it("q's % and _ are the characters themselves, not LIKE's wildcards", async () => {
      const { user, base, active } = await three();
      expect(ids(await freshList(user, base, '?q=%25'))).toEqual([active.id]);
      expect(ids(await freshList(user, base, '?q=_'))).toEqual([active.id]);
      expect(ids(await freshList(user, base, '?q=50%25_'))).toEqual([active.id]);
      expect(ids(await freshList(user, base, '?q=!'))).toEqual([]);
    });

    it('status: active, revoked or expired, each license in exactly one', async () => {
      const { user, base, active, revoked, expired } = await three();
      expect(ids(await freshList(user, base, '?status=active'))).toEqual([active.id]);
      expect(ids(await freshList(user, base, '?status=revoked'))).toEqual([revoked.id]);
      expect(ids(await freshList(user, base, '?status=expired'))).toEqual([expired.id]);
      // A revoked license whose expires_at has passed too is revoked, not expired.
      await t.app
        .get(DataSource)
        .getRepository(LicenseEntity)
        .update(revoked.id, { expires_at: new Date(Date.now() - 60_000) });
      expect(ids(await freshList(user, base, '?status=expired'))).toEqual([expired.id]);
      expect(ids(await freshList(user, base, '?status=revoked'))).toEqual([revoked.id]);
    });

    it('q and status together; the filtered list pages with its cursor', async () => {
      const { user, key, project, base, active } = await three();
      const more: number[] = [];
      for (let i = 0; i < 3; i++)
        more.push((await makeLicense(t, key, project.id, { title: `pro ${i}` })).id);
      expect(ids(await freshList(user, base, '?q=pro&status=active'))).toEqual(
        [...more].reverse().concat(active.id),
      );
      expect(ids(await freshList(user, base, '?q=pro&status=revoked'))).toEqual([]);
      const first = await freshList(user, base, '?q=pro&status=active&per_page=3');
      expect(ids(first)).toEqual([...more].reverse());
      const rest = await freshList(
        user,
        base,
        `?q=pro&status=active&per_page=3&cursor=${encodeURIComponent(first.next_cursor)}`,
      );
      expect(ids(rest)).toEqual([active.id]);
      expect(rest.next_cursor).toBeNull();
    });

    it('refuses an unknown status, a q longer than 255 characters or a repeated q, with 422', async () => {
      const { key, base } = await setup();
      for (const status of ['paid', 'ACTIVE', '']) {
        const body = expectError(await api(key).get(`${base}?status=${status}`), 422, ['status']);
        expect(body.errors.status).toEqual([
          'The selected status is invalid: use active, revoked or expired.',
        ]);
      }
      expect(expectError(await api(key).get(`${base}?q=${'a'.repeat(256)}`), 422, ['q']).errors.q).toEqual([
        'The q field must not be greater than 255 characters.',
      ]);
      expectSuccess(await api(key).get(`${base}?q=${'a'.repeat(255)}`));
      expect(expectError(await api(key).get(`${base}?q=a&q=b`), 422, ['q']).errors.q).toEqual([
        'The q field must be a string.',
      ]);
    });
  });

  describe('GET /project/{id}/licenses/{license}', () => {
    it('retrieves one license with exactly the returned fields', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id, { max_domains: 2, allowed_countries: 'us' });
      const res = await api(key).get(`${base}/${l.id}`);
      const data = expectSuccess(res);
      expectLicenseShape(data);
      expect(data).toEqual(l);
      expect(data.allowed_countries).toBe('US');
      expect(JSON.stringify(res.body)).not.toContain(sha256(l.uuid));
    });
  });

  describe('PATCH and PUT /project/{id}/licenses/{license}', () => {
    it('racing PATCHes of different fields all land: each writes only what it sent', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id, { title: 'Racing' });
      const changes = [
        { title: `Renamed ${uniqueToken()}` },
        { max_domains: 4 },
        { max_usage_per_day: 9 },
        { allowed_countries: 'nl' },
        { is_test_license: true },
        { allowed_ips: '10.1.0.0/16' },
      ];
      for (const res of await Promise.all(changes.map((body) => api(key).patch(`${base}/${l.id}`, body))))
        expectSuccess(res);
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toMatchObject({
        ...Object.assign({}, ...changes),
        allowed_countries: 'NL',
      });
    });

    it('PATCH changes only the fields sent', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      const l = await makeLicense(t, key, project.id, {
        title: 'Patch me',
        domain_id: d.id,
        expires_at: '2099-01-01T00:00:00Z',
        max_domains: 1,
        max_subdomains_per_domain: 2,
        max_usage_per_day: 3,
        allowed_ips: '10.0.0.1',
        allowed_countries: 'DE',
        is_test_license: true,
        allow_configs: false,
      });
      const patched = expectSuccess(
        await api(key).patch(`${base}/${l.id}`, {
          max_domains: 5,
          allow_configs: true,
          allowed_countries: 'fr, it',
        }),
      );
      expectLicenseShape(patched);
      expect(patched).toEqual({
        ...l,
        max_domains: 5,
        allow_configs: true,
        allowed_countries: 'FR,IT',
        updated_at: patched.updated_at,
      });
      expect(patched.updated_at >= l.updated_at).toBe(true);
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toEqual(patched);

      const renamed = expectSuccess(await api(key).patch(`${base}/${l.id}`, { title: 'Renamed' }));
      expect(renamed).toEqual({ ...patched, title: 'Renamed', updated_at: renamed.updated_at });

      // An empty PATCH changes nothing.
      const same = expectSuccess(await api(key).patch(`${base}/${l.id}`, {}));
      expect({ ...same, updated_at: null }).toEqual({ ...renamed, updated_at: null });
    });

    it('PATCH can clear nullable fields and does not apply license_defaults', async () => {
      const { user, key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      const l = await makeLicense(t, key, project.id, {
        domain_id: d.id,
        expires_at: inDays(30),
        max_usage_per_day: 9,
        allowed_ips: '10.0.0.1',
      });
      await t.dataSource
        .getRepository(UserEntity)
        .update({ id: user.id }, { license_defaults: { max_domains: 42, is_test_license: true } });
      const cleared = expectSuccess(
        await api(key).patch(`${base}/${l.id}`, {
          domain_id: null,
          expires_at: null,
          max_usage_per_day: null,
          allowed_ips: null,
        }),
      );
      expect(cleared).toMatchObject({ ...BARE, title: l.title, uuid: l.uuid });
    });

    it('PATCH validates like create; a 422 changes nothing', async () => {
      const { user, key, project, base } = await setup();
      const foreign = await makeDomain(t, key, (await makeProject(t, key)).id);
      const taken = await makeLicense(t, key, project.id, { title: 'Taken' });
      const l = await makeLicense(t, key, project.id, { title: 'Mine', max_domains: 1 });
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ title: 'Taken' }, 'title'],
        [{ title: '' }, 'title'],
        [{ title: null }, 'title'],
        [{ title: 'x'.repeat(256) }, 'title'],
        [{ title: 5 }, 'title'],
        [{ domain_id: foreign.id }, 'domain_id'],
        [{ domain_id: 999999 }, 'domain_id'],
        [{ expires_at: '2000-01-01T00:00:00Z' }, 'expires_at'],
        [{ expires_at: 'nope' }, 'expires_at'],
        [{ max_domains: -1 }, 'max_domains'],
        [{ max_subdomains_per_domain: 0.5 }, 'max_subdomains_per_domain'],
        [{ max_usage_per_day: '3' }, 'max_usage_per_day'],
        [{ allowed_ips: '1.2.3.4, bad' }, 'allowed_ips'],
        [{ allowed_countries: 'XX' }, 'allowed_countries'],
        [{ allowed_countries: 'DEU' }, 'allowed_countries'],
        [{ is_test_license: 'true' }, 'is_test_license'],
        [{ allow_configs: 1 }, 'allow_configs'],
      ];
      for (const [body, field] of cases) {
        const res = await api(key).patch(`${base}/${l.id}`, { max_domains: 7, ...body });
        expect({ body, status: res.status }).toEqual({ body, status: 422 });
        expectError(res, 422, [field]);
      }
      // Keeping its own title is fine.
      expect(expectSuccess(await api(key).patch(`${base}/${l.id}`, { title: 'Mine' })).title).toBe('Mine');
      const read = expectSuccess(await api(await makeApiKey(t.app, user)).get(`${base}/${l.id}`));
      expect(read).toMatchObject({ title: 'Mine', max_domains: 1 });
      expect(expectSuccess(await api(key).get(`${base}/${taken.id}`)).title).toBe('Taken');
    });

    it('PUT replaces: title required, omitted optional fields return to the defaults', async () => {
      const { user, key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      const l = await makeLicense(t, key, project.id, {
        title: 'Before',
        domain_id: d.id,
        expires_at: '2099-01-01T00:00:00Z',
        max_domains: 1,
        max_subdomains_per_domain: 2,
        max_usage_per_day: 3,
        allowed_ips: '10.0.0.1',
        allowed_countries: 'DE',
        is_test_license: true,
        allow_configs: true,
      });
      expectError(await api(key).put(`${base}/${l.id}`, {}), 422, ['title']);
      expectError(await api(key).put(`${base}/${l.id}`, { max_domains: 3 }), 422, ['title']);
      expectError(await api(key).put(`${base}/${l.id}`, { title: '' }), 422, ['title']);
      expect(expectSuccess(await api(await makeApiKey(t.app, user)).get(`${base}/${l.id}`))).toEqual(l);

      const replaced = expectSuccess(
        await api(key).put(`${base}/${l.id}`, { title: 'After', max_domains: 4 }),
      );
      expectLicenseShape(replaced);
      expect(replaced).toEqual({
        ...l,
        ...BARE,
        title: 'After',
        max_domains: 4,
        updated_at: replaced.updated_at,
      });
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toEqual(replaced);

      // With license_defaults, "defaults" are the owner's.
      await t.dataSource
        .getRepository(UserEntity)
        .update({ id: user.id }, { license_defaults: { max_usage_per_day: 7, is_test_license: true } });
      const again = expectSuccess(await api(key).put(`${base}/${l.id}`, { title: 'Again' }));
      expect(again).toMatchObject({
        ...BARE,
        title: 'Again',
        max_usage_per_day: 7,
        is_test_license: true,
        uuid: l.uuid,
        id: l.id,
      });
    });

    it('PUT validates like create and keeps its own title; a revoked license stays revoked', async () => {
      const { key, project, base } = await setup();
      await makeLicense(t, key, project.id, { title: 'Other' });
      const l = await makeLicense(t, key, project.id, { title: 'Self' });
      expectError(await api(key).put(`${base}/${l.id}`, { title: 'Other' }), 422, ['title']);
      expectError(
        await api(key).put(`${base}/${l.id}`, { title: 'Self', max_domains: -1, allowed_countries: 'XX' }),
        422,
        ['max_domains'],
      );
      const revoked = expectSuccess(await api(key).post(`${base}/${l.id}/revoke`));
      const replaced = expectSuccess(await api(key).put(`${base}/${l.id}`, { title: 'Self' }));
      expect(replaced.revoked_at).toBe(revoked.revoked_at);
      expect(replaced.uuid).toBe(l.uuid);
    });
  });

  describe('DELETE, revoke, reactivate, usage', () => {
    it('DELETE removes the license for good: 200 with data null, then 404', async () => {
      const { key, project, base } = await setup();
      const keep = await makeLicense(t, key, project.id);
      const l = await makeLicense(t, key, project.id, { title: 'Gone' });
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([l.id, keep.id]); // warm any cache
      expectSuccess(await api(key).get(`${base}/${l.id}`));
      const res = await api(key).delete(`${base}/${l.id}`);
      expect(expectSuccess(res)).toBeNull();
      expectError(await api(key).get(`${base}/${l.id}`), 404);
      expectError(await api(key).patch(`${base}/${l.id}`, { max_domains: 1 }), 404);
      expectError(await api(key).post(`${base}/${l.id}/revoke`), 404);
      expectError(await api(key).get(`${base}/${l.id}/usage`), 404);
      expectError(await api(key).delete(`${base}/${l.id}`), 404);
      expect(ids(expectSuccess(await api(key).get(base)))).toEqual([keep.id]);
      // The title is free again, and the new license has a new key.
      const again = await makeLicense(t, key, project.id, { title: 'Gone' });
      expect(again.id).not.toBe(l.id);
      expect(again.uuid).not.toBe(l.uuid);
    });

    it('POST …/revoke sets revoked_at, POST …/reactivate clears it', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id);
      const before = Date.now() - 2000;
      const revoked = expectSuccess(await api(key).post(`${base}/${l.id}/revoke`));
      expectLicenseShape(revoked);
      expect(revoked.revoked_at).toMatch(TIMESTAMP);
      expect(Date.parse(revoked.revoked_at)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(revoked.revoked_at)).toBeLessThanOrEqual(Date.now() + 2000);
      // Besides revoked_at, only who revoked it: the vendor (docs/api.md#licenses-that-carry-their-own-payment).
      expect(revoked.revoked_by).toBe('vendor');
      expect({ ...revoked, revoked_at: null, revoked_by: null, updated_at: null }).toEqual({
        ...l,
        updated_at: null,
      });
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`)).revoked_at).toBe(revoked.revoked_at);

      // Revoking again keeps the first time.
      expect(expectSuccess(await api(key).post(`${base}/${l.id}/revoke`)).revoked_at).toBe(
        revoked.revoked_at,
      );

      const reactivated = expectSuccess(await api(key).post(`${base}/${l.id}/reactivate`));
      expectLicenseShape(reactivated);
      expect(reactivated.revoked_at).toBeNull();
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`)).revoked_at).toBeNull();
      expect(expectSuccess(await api(key).post(`${base}/${l.id}/reactivate`)).revoked_at).toBeNull();
    });

    it('GET …/usage reports today, the last 30 days and no domains for a new license', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id, { max_usage_per_day: 10 });
      const usage = expectSuccess(await api(key).get(`${base}/${l.id}/usage`));
      const today = new Date().toISOString().slice(0, 10);
      expect(usage.today).toEqual({ date: today, count: 0 });
      expect(usage.last_30_days).toHaveLength(30);
      expect(usage.last_30_days[29]).toEqual({ date: today, count: 0 });
      for (let i = 0; i < 30; i++) {
        const day = usage.last_30_days[i];
        expect(day.date).toMatch(DAY);
        expect(day.count).toBe(0);
        if (i > 0) expect(Date.parse(day.date) - Date.parse(usage.last_30_days[i - 1].date)).toBe(86_400_000);
      }
      expect(usage.domains).toEqual([]);
    });
  });

  describe('locked project', () => {
    it('license writes are 403 while locked, reads still work; unlock restores writes', async () => {
      const { key, project, base } = await setup();
      const l = await makeLicense(t, key, project.id);
      expectSuccess(await api(key).get(base)); // warm any cache
      expectSuccess(await api(key).post(`/project/${project.id}/lock`, { reason: 'chargeback' }));

      const writes = [
        ['create', () => api(key).post(base, { title: 'While locked' })],
        ['patch', () => api(key).patch(`${base}/${l.id}`, { max_domains: 1 })],
        ['put', () => api(key).put(`${base}/${l.id}`, { title: 'While locked' })],
        ['revoke', () => api(key).post(`${base}/${l.id}/revoke`)],
        ['reactivate', () => api(key).post(`${base}/${l.id}/reactivate`)],
        ['delete', () => api(key).delete(`${base}/${l.id}`)],
      ] as const;
      for (const [name, call] of writes) {
        const res = await call();
        expect({ name, status: res.status }).toEqual({ name, status: 403 });
        expect(expectError(res, 403).message).toBe('Project is locked.');
      }
      expect(expectSuccess(await api(key).get(base)).data).toEqual([l]);
      expect(expectSuccess(await api(key).get(`${base}/${l.id}`))).toEqual(l);
      expectSuccess(await api(key).get(`${base}/${l.id}/usage`));

      expectSuccess(await api(key).post(`/project/${project.id}/unlock`));
      expect(expectSuccess(await api(key).post(`${base}/${l.id}/revoke`)).revoked_at).toMatch(TIMESTAMP);
      expectSuccess(await api(key).post(base, { title: 'After unlock' }), 201);
      expect(expectSuccess(await api(key).delete(`${base}/${l.id}`))).toBeNull();
    });
  });

  describe('domains with pinned licenses', () => {
    it('deleting a domain that licenses are pinned to is 422 naming the count', async () => {
      const { key, project, base } = await setup();
      const d = await makeDomain(t, key, project.id);
      const free = await makeDomain(t, key, project.id);
      const one = await makeLicense(t, key, project.id, { domain_id: d.id });
      await makeLicense(t, key, project.id); // not pinned: not counted

      let body = expectError(await api(key).delete(`/project/${project.id}/domains/${d.id}`), 422, [
        'domain',
      ]);
      expect(body.errors.domain.join(' ')).toMatch(/\b1\b/);
      const two = await makeLicense(t, key, project.id, { domain_id: d.id });
      body = expectError(await api(key).delete(`/project/${project.id}/domains/${d.id}`), 422, ['domain']);
      expect(body.errors.domain.join(' ')).toMatch(/\b2\b/);
      expect(expectSuccess(await api(key).get(`/project/${project.id}/domains/${d.id}`))).toEqual(d);

      // Unpinning one and deleting the other frees the domain.
      expect(
        expectSuccess(await api(key).patch(`${base}/${one.id}`, { domain_id: null })).domain_id,
      ).toBeNull();
      body = expectError(await api(key).delete(`/project/${project.id}/domains/${d.id}`), 422, ['domain']);
      expect(body.errors.domain.join(' ')).toMatch(/\b1\b/);
      expect(expectSuccess(await api(key).delete(`${base}/${two.id}`))).toBeNull();
      expect(expectSuccess(await api(key).delete(`/project/${project.id}/domains/${d.id}`))).toBeNull();
      // A domain nobody is pinned to deletes straight away.
      expect(expectSuccess(await api(key).delete(`/project/${project.id}/domains/${free.id}`))).toBeNull();
    });

    it('pins racing a delete of their domain: either the delete is refused or the pin is, never a pin to nothing', async () => {
      const { key, project, base } = await setup();
      // The delete is sent a little before or after the pins, by a different step each round, so
      // that it lands at every point of their way through the service.
      for (let round = 0; round < 12; round++) {
        const d = await makeDomain(t, key, project.id);
        const existing = await makeLicense(t, key, project.id);
        const sendPins = () =>
          [
            api(key).patch(`${base}/${existing.id}`, { domain_id: d.id }),
            ...Array.from({ length: 3 }, () =>
              api(key).post(base, { title: `Pinned ${uniqueToken()}`, domain_id: d.id }),
            ),
          ].map((req) => req.then((res) => res));
        const sendDelete = () =>
          api(key)
            .delete(`/project/${project.id}/domains/${d.id}`)
            .then((res) => res);
        const offset = round - 4;
        let removal: Promise<Response>;
        let pins: Array<Promise<Response>>;
        if (offset < 0) {
          removal = sendDelete();
          await sleep(-offset);
          pins = sendPins();
        } else {
          pins = sendPins();
          await sleep(offset);
          removal = sendDelete();
        }
        const [removed, answers] = [await removal, await Promise.all(pins)];
        for (const res of [...answers, removed]) expect([200, 201, 422]).toContain(res.status);
        const pinned = answers.filter((res) => res.status < 300).length;
        if (removed.status === 200) {
          // Deleted: every pin was refused, naming domain_id.
          expect(pinned).toBe(0);
          for (const res of answers) expectError(res, 422, ['domain_id']);
          expect(expectSuccess(await api(key).get(`${base}/${existing.id}`)).domain_id).toBeNull();
        } else {
          // Refused: the delete saw a pin that committed, and the domain stays.
          expectError(removed, 422, ['domain']);
          expect(pinned).toBeGreaterThan(0);
          expectSuccess(await api(key).get(`/project/${project.id}/domains/${d.id}`));
        }
      }
    });
  });
});
