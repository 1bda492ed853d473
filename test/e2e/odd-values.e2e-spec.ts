import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { makeAccount, makeDomain, makeLicense, makeProject } from '../factories/index.js';
import { expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';
import { apiAs } from '../utils/api.js';

/** A success, or a 4xx in the error envelope with a message. */
const answered = (res: Response) =>
  res.status < 300 ||
  (res.status >= 400 &&
    res.status < 500 &&
    res.body?.status === 'error' &&
    typeof res.body.message === 'string' &&
    res.body.message !== '');

/** Values a client may send by mistake, for every field of every write. */
const ODD = [null, '', [], {}, 0, -1, 'x'.repeat(300), true, 1e20];

describe('odd field values on every write (every bad input is a 4xx, never a 500)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  it('no create, update or replace answers 5xx to null, empty, wrongly typed or oversized values', async () => {
    const { key } = await makeAccount(t.app);
    const api = apiAs(t, key);
    const p = await makeProject(t, key);
    const d = await makeDomain(t, key, p.id);
    const l = await makeLicense(t, key, p.id);
    const inj = expectSuccess(
      await api.post(`/project/${p.id}/injectables`, {
        slug: 'a1',
        content: 'x',
        secret: 's3cret-s3cret',
        type: 'snippet',
      }),
      201,
    );
    const targets: Array<[string, string[]]> = [
      [
        `/project/${p.id}`,
        [
          'name',
          'slug',
          'description',
          'default_redirect_url',
          'webhook_url',
          'webhook_secret',
          'logo_url',
          'meta',
          'is_active',
          'has_paid',
        ],
      ],
      [`/project/${p.id}/domains/${d.id}`, ['domain', 'has_paid', 'is_active', 'is_primary']],
      [
        `/project/${p.id}/licenses/${l.id}`,
        [
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
        ],
      ],
      [
        `/project/${p.id}/injectables/${inj.id}`,
        [
          'slug',
          'title',
          'type',
          'mode',
          'target_path',
          'validate_endpoint',
          'secret',
          'content',
          'is_active',
          'only_if_paid',
          'meta',
        ],
      ],
    ];
    // Every answer is collected first, so one run names every endpoint and field that fails.
    const bad: string[] = [];
    for (const [path, fields] of targets) {
      for (const f of fields) {
        for (const method of ['patch', 'put'] as const) {
          if (method === 'patch' && path.includes('injectables')) continue; // injectables take PUT only
          for (const v of ODD) {
            const res = await api[method](path, { [f]: v });
            if (!answered(res))
              bad.push(`${method} ${path} ${f}=${JSON.stringify(v).slice(0, 20)} -> ${res.status}`);
          }
        }
      }
    }
    const creates: Array<[string, Record<string, unknown>, string[]]> = [
      [
        '/project',
        { name: 'N' },
        [
          'name',
          'slug',
          'description',
          'default_redirect_url',
          'webhook_url',
          'webhook_secret',
          'logo_url',
          'meta',
          'is_active',
          'has_paid',
        ],
      ],
      [
        `/project/${p.id}/domains`,
        { domain: 'new.example.com' },
        ['domain', 'has_paid', 'is_active', 'is_primary'],
      ],
      [
        `/project/${p.id}/licenses`,
        { title: 'T' },
        [
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
        ],
      ],
      [
        `/project/${p.id}/injectables`,
        { slug: 'zz', content: 'x', secret: 's3cret-s3cret' },
        [
          'slug',
          'title',
          'type',
          'mode',
          'target_path',
          'validate_endpoint',
          'secret',
          'content',
          'is_active',
          'only_if_paid',
          'meta',
        ],
      ],
      ['/api-keys', { name: 'k' }, ['name', 'project_id', 'expires_at']],
      [`/project/${p.id}/lock`, {}, ['reason']],
    ];
    let n = 0;
    for (const [path, base, fields] of creates) {
      for (const f of fields) {
        for (const v of ODD) {
          const body = { ...base, [f]: v } as Record<string, unknown>;
          if (typeof body.name === 'string' && path === '/project') body.name = `N${n++}`;
          if (path.endsWith('/domains') && f !== 'domain') body.domain = `d${n++}.example.com`;
          if (path.endsWith('/licenses') && f !== 'title') body.title = `T${n++}`;
          if (path.endsWith('/injectables') && f !== 'slug') body.slug = `s${n++}`;
          const res = await api.post(path, body);
          if (!answered(res))
            bad.push(`post ${path} ${f}=${JSON.stringify(v).slice(0, 20)} -> ${res.status}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });

  it('no list, stream or runtime check answers 5xx to odd query or header values', async () => {
    const { key } = await makeAccount(t.app);
    const api = apiAs(t, key);
    const p = await makeProject(t, key, { has_paid: true });
    const d = await makeDomain(t, key, p.id);
    const l = await makeLicense(t, key, p.id);
    const queryOdd = [
      '',
      '0',
      '-1',
      '1e3',
      '999999999999999999999',
      'abc',
      '%00',
      '[]',
      'null',
      'x'.repeat(2000),
    ];
    const lists = [
      '/project',
      `/project/${p.id}/domains`,
      `/project/${p.id}/licenses`,
      `/project/${p.id}/injectables`,
      `/project/${p.id}/webhook-deliveries`,
      '/api-keys',
    ];
    const bad: string[] = [];
    for (const path of lists) {
      for (const param of ['per_page', 'cursor']) {
        for (const v of queryOdd) {
          const res = await api.get(`${path}?${param}=${encodeURIComponent(v)}`);
          if (!answered(res)) bad.push(`GET ${path} ${param}=${v.slice(0, 20)} -> ${res.status}`);
        }
      }
    }
    const runtime = (query: string) =>
      t
        .http()
        .post(`/api/v1/project/has-paid?${query}`)
        .set('Accept', 'application/json')
        .set('X-LICENSE-KEY', l.uuid)
        .set('X-Service-Domain', d.domain);
    const stream = (query: string) =>
      t
        .http()
        .get(`/api/v1/injectable/stream?${query}`)
        .set('Accept', 'application/json')
        .set('X-LICENSE-KEY', l.uuid);
    for (const param of ['action', 'include', 'license', 'per_page', 'cursor']) {
      for (const v of queryOdd) {
        const query = `${param}=${encodeURIComponent(v)}`;
        for (const [name, call] of [
          ['has-paid', runtime],
          ['stream', stream],
        ] as const) {
          const res = await call(query);
          if (!answered(res)) bad.push(`${name} ${param}=${v.slice(0, 20)} -> ${res.status}`);
        }
      }
    }
    const headerOdd = [
      '',
      ' ',
      '.',
      '..',
      '-',
      'x'.repeat(300),
      'http://shop.example.com/path',
      '[::1]',
      '127.0.0.1:8080',
      'a..b',
      '*.example.com',
      '%41',
      'xn--',
      'xn--zz.com',
    ];
    for (const header of [
      'X-Service-Domain',
      'X-LICENSE-KEY',
      'Origin',
      'Referer',
      'CF-IPCountry',
      'X-Forwarded-For',
    ]) {
      for (const v of headerOdd) {
        const req = t.http().post('/api/v1/project/has-paid').set('Accept', 'application/json');
        if (header !== 'X-LICENSE-KEY') req.set('X-LICENSE-KEY', l.uuid);
        const res = await req.set(header, v);
        if (!answered(res)) bad.push(`has-paid ${header}: ${v.slice(0, 20)} -> ${res.status}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
