import { afterEach, describe, expect, it, jest } from '@jest/globals';
import {
  createClient,
  FetchInit,
  FetchLike,
  normalizeBaseUrl,
  parseRetryAfter,
  verify,
} from '../src/index.js';
import { caught, paidItem, projectKeys, record, streamItem } from './helpers.js';

interface Call {
  url: string;
  init: FetchInit;
}

/** A fetch that records calls and answers from `reply`. */
function fakeFetch(
  reply: (
    call: Call,
    n: number,
  ) => { status?: number; body?: unknown; text?: string; headers?: Record<string, string> } | Error,
) {
  const calls: Call[] = [];
  const fetch: FetchLike = async (url, init) => {
    const call = { url, init };
    calls.push(call);
    const r = reply(call, calls.length - 1);
    if (r instanceof Error) throw r;
    const headers = new Map(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    return {
      status: r.status ?? 200,
      headers: { get: (name: string) => headers.get(name.toLowerCase()) ?? null },
      text: async () => (r.text !== undefined ? r.text : JSON.stringify(r.body)),
    };
  };
  return { fetch, calls };
}

const ok = (data: unknown) => ({ body: { status: 'success', message: 'Success', data, errors: null } });
const fail = (
  status: number,
  message: string,
  data: unknown = null,
  errors: unknown = null,
  headers?: Record<string, string>,
) => ({
  status,
  body: { status: 'error', message, data, errors },
  headers,
});

const BASE = 'https://lg.example.com/api/v1';
const LICENSE = '0b5f7c1e-1111-4222-8333-444455556666';

describe('createClient', () => {
  it('normalises the base address', () => {
    expect(normalizeBaseUrl('http://host:3000/api/v1')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl('http://host:3000/api/v1/')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl('http://host:3000/api/v1//')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl('http://host:3000')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl('http://host:3000/')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl('http://host:3000/api')).toBe('http://host:3000/api/v1');
    expect(normalizeBaseUrl(' https://lg.example.com/licensing/api/v1/ ')).toBe(
      'https://lg.example.com/licensing/api/v1',
    );
    expect(() => normalizeBaseUrl('')).toThrow(TypeError);
    expect(() => normalizeBaseUrl('not a url')).toThrow(/not a valid URL/);
    expect(() => normalizeBaseUrl('ftp://host/api/v1')).toThrow(/http or https/);
    expect(
      createClient({ baseUrl: 'http://h:1', licenseKey: 'k', fetch: fakeFetch(() => ok(null)).fetch })
        .baseUrl,
    ).toBe('http://h:1/api/v1');
  });

  it('requires a license key', () => {
    expect(() => createClient({ baseUrl: BASE, licenseKey: '' })).toThrow(/licenseKey/);
    expect(() => createClient({ baseUrl: BASE } as never)).toThrow(/licenseKey/);
  });
});

describe('hasPaid (docs/api.md#runtime-checks)', () => {
  it('POSTs {base}/project/has-paid with the license and domain headers and no body; maps data', async () => {
    const { fetch, calls } = fakeFetch(() => ok({ has_paid: true, is_test_license: false }));
    const client = createClient({
      baseUrl: `${BASE}/`,
      licenseKey: LICENSE,
      domain: 'shop.example.com',
      fetch,
    });
    expect(await client.hasPaid()).toEqual({
      hasPaid: true,
      isTestLicense: false,
      redirectUrl: null,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe(`${BASE}/project/has-paid`);
    expect(calls[0].init).toEqual({
      method: 'POST',
      headers: {
        Accept: 'application/json',
        'X-LICENSE-KEY': LICENSE,
        'X-Service-Domain': 'shop.example.com',
      },
      // the timeout's (timeoutMs, 10 s by default)
      signal: expect.any(AbortSignal),
    });
  });

  it('sends action=check_project and include=injectables; no domain header without a domain; per-call domain', async () => {
    const keys = projectKeys();
    const r = record(keys, 5, { slug: 's', type: 'snippet', mode: 'inject', target_path: null }, 'x', 'k');
    const { fetch, calls } = fakeFetch(() =>
      ok({ has_paid: true, is_test_license: true, injectables: [paidItem(r)] }),
    );
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch });
    const res = await client.hasPaid({ checkProject: true, includeInjectables: true });
    expect(res).toEqual({
      hasPaid: true,
      isTestLicense: true,
      redirectUrl: null,
      injectables: [paidItem(r)],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
    expect(calls[0].url).toBe(`${BASE}/project/has-paid?action=check_project&include=injectables`);
    expect(calls[0].init.headers).not.toHaveProperty('X-Service-Domain');
    await client.hasPaid({ includeInjectables: true, domain: 'a.example.com' });
    expect(calls[1].url).toBe(`${BASE}/project/has-paid?include=injectables`);
    expect(calls[1].init.headers['X-Service-Domain']).toBe('a.example.com');
    await client.hasPaid({ checkProject: false, includeInjectables: false });
    expect(calls[2].url).toBe(`${BASE}/project/has-paid`);
  });

  it('check() answers as hasPaid(), with graceUntil while a payment grace runs (docs/payments.md)', async () => {
    const { fetch } = fakeFetch(() =>
      ok({ has_paid: true, is_test_license: false, grace_until: '2026-12-01T10:12:00Z' }),
    );
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch });
    expect(await client.check()).toEqual({
      hasPaid: true,
      isTestLicense: false,
      redirectUrl: null,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: new Date('2026-12-01T10:12:00Z'),
    });
    expect((await client.hasPaid()).graceUntil).toEqual(new Date('2026-12-01T10:12:00Z'));
  });

  it('unpaid: redirectUrl from data.redirect_url', async () => {
    const { fetch } = fakeFetch(() =>
      ok({ has_paid: false, is_test_license: false, redirect_url: 'https://pay.example.com' }),
    );
    const res = await createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch }).hasPaid({
      includeInjectables: true,
    });
    expect(res).toEqual({
      hasPaid: false,
      isTestLicense: false,
      redirectUrl: 'https://pay.example.com',
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
    });
  });
});

describe('errors', () => {
  const client = (reply: Parameters<typeof fakeFetch>[0]) =>
    createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch: fakeFetch(reply).fetch });

  it('403 → status, the service message, redirectUrl, request id', async () => {
    const err = await caught(
      client(() =>
        fail(403, 'This license has been revoked.', { redirect_url: 'https://pay.example.com/renew' }, null, {
          'X-Request-Id': 'req-1',
        }),
      ).hasPaid(),
    );
    expect(err).toMatchObject({
      name: 'LicenseGateError',
      status: 403,
      message: 'This license has been revoked.',
      redirectUrl: 'https://pay.example.com/renew',
      retryAfter: null,
      errors: null,
      requestId: 'req-1',
    });
    expect(err.isRefusal).toBe(true);
    expect(err.isRetryable).toBe(false);
  });

  it('403 without data → redirectUrl null; 401 and 400', async () => {
    expect(await caught(client(() => fail(403, 'Invalid license key.')).hasPaid())).toMatchObject({
      status: 403,
      redirectUrl: null,
    });
    expect(
      await caught(
        client(() => fail(401, 'License key missing: send it in the X-LICENSE-KEY header.')).hasPaid(),
      ),
    ).toMatchObject({ status: 401, isRefusal: true });
    expect(
      await caught(client(() => fail(400, 'The calling domain could not be determined.')).hasPaid()),
    ).toMatchObject({ status: 400, isRefusal: false });
  });

  it('429 → retryAfter from Retry-After (seconds or HTTP date)', async () => {
    const err = await caught(
      client(() =>
        fail(
          429,
          'This license has reached its daily limit of 3 checks; it resets at midnight UTC.',
          null,
          null,
          { 'Retry-After': '3600' },
        ),
      ).hasPaid(),
    );
    expect(err).toMatchObject({ status: 429, retryAfter: 3600, isRetryable: true });
    const at = new Date(Date.now() + 90_000).toUTCString();
    const dated = await caught(
      client(() => fail(429, 'Too many requests', null, null, { 'Retry-After': at })).hasPaid(),
    );
    expect(dated.retryAfter).toBeGreaterThanOrEqual(88);
    expect(dated.retryAfter).toBeLessThanOrEqual(90);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(' 7 ')).toBe(7);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:00 GMT')).toBe(0);
  });

  it('422 → field errors', async () => {
    const errors = { per_page: ['The per page may not be greater than 50.'] };
    const err = await caught(
      client(() => fail(422, 'The given data was invalid.', null, errors))
        .streamInjectables({ perPage: 51 })
        [Symbol.asyncIterator]()
        .next(),
    );
    expect(err).toMatchObject({ status: 422, errors });
  });

  it('5xx with a non-JSON body, and a 2xx that is not the envelope', async () => {
    const html = await caught(client(() => ({ status: 502, text: '<html>Bad gateway</html>' })).hasPaid());
    expect(html).toMatchObject({ status: 502, redirectUrl: null, errors: null, isRetryable: true });
    expect(html.message).toMatch(/HTTP 502/);
    const odd = await caught(client(() => ({ status: 200, text: 'hello' })).hasPaid());
    expect(odd.status).toBe(200);
    expect(await caught(client(() => ({ status: 204, text: '' })).hasPaid())).toMatchObject({ status: 204 });
  });

  it('network failure → status 0 with the cause', async () => {
    const cause = new TypeError('fetch failed');
    const err = await caught(client(() => cause).hasPaid());
    expect(err).toMatchObject({
      status: 0,
      redirectUrl: null,
      retryAfter: null,
      errors: null,
      isRetryable: true,
    });
    expect(err.message).toContain('fetch failed');
    expect(err.message).toContain(BASE);
    expect(err.cause).toBe(cause);
  });

  it('a real unreachable address → status 0', async () => {
    const err = await caught(createClient({ baseUrl: 'http://127.0.0.1:9', licenseKey: LICENSE }).hasPaid());
    expect(err.status).toBe(0);
  });
});

describe('streamInjectables (docs/decisions.md#runtime-checks)', () => {
  it('follows next_cursor until has_more is false, with per_page and the license', async () => {
    const pages = [
      { injectables: [{ slug: 'a' }, { slug: 'b' }], next_cursor: 'c1', has_more: true },
      { injectables: [{ slug: 'c' }, { slug: 'd' }], next_cursor: 'c2+/=', has_more: true },
      { injectables: [{ slug: 'e' }], next_cursor: null, has_more: false },
    ];
    const { fetch, calls } = fakeFetch((_c, n) => ok(pages[n]));
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, domain: 'x.example.com', fetch });
    const slugs: string[] = [];
    for await (const item of client.streamInjectables({ perPage: 2 })) slugs.push(item.slug);
    expect(slugs).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(calls.map((c) => c.url)).toEqual([
      `${BASE}/injectable/stream?per_page=2`,
      `${BASE}/injectable/stream?per_page=2&cursor=c1`,
      `${BASE}/injectable/stream?per_page=2&cursor=c2%2B%2F%3D`,
    ]);
    for (const c of calls) {
      expect(c.init.method).toBe('GET');
      expect(c.init.body).toBeUndefined();
      expect(c.init.headers).toMatchObject({ Accept: 'application/json', 'X-LICENSE-KEY': LICENSE });
    }
  });

  it('no per_page by default; stops on has_more false even with a cursor, and on a repeated cursor', async () => {
    const a = fakeFetch(() => ok({ injectables: [{ slug: 'a' }], next_cursor: 'zz', has_more: false }));
    const got: string[] = [];
    for await (const i of createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      fetch: a.fetch,
    }).streamInjectables())
      got.push(i.slug);
    expect(got).toEqual(['a']);
    expect(a.calls.map((c) => c.url)).toEqual([`${BASE}/injectable/stream`]);
    const b = fakeFetch(() => ok({ injectables: [{ slug: 'b' }], next_cursor: 'same', has_more: true }));
    let n = 0;
    for await (const _ of createClient({
      baseUrl: BASE,
      licenseKey: LICENSE,
      fetch: b.fetch,
    }).streamInjectables())
      n++;
    expect(n).toBe(2);
  });

  it('an error mid-stream rejects the iteration with LicenseGateError', async () => {
    const { fetch } = fakeFetch((_c, n) =>
      n === 0
        ? ok({ injectables: [{ slug: 'a' }], next_cursor: 'c', has_more: true })
        : fail(403, 'Project is locked.', { redirect_url: 'https://r' }),
    );
    const seen: string[] = [];
    const err = await caught(
      (async () => {
        for await (const i of createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch }).streamInjectables())
          seen.push(i.slug);
      })(),
    );
    expect(seen).toEqual(['a']);
    expect(err).toMatchObject({ status: 403, message: 'Project is locked.', redirectUrl: 'https://r' });
  });
});

describe('withSignatures', () => {
  it('pairs has-paid items with stream signatures by slug and blob; verify then passes', async () => {
    const keys = projectKeys();
    const f = (slug: string) => ({ slug, type: 'snippet', mode: 'inject', target_path: null });
    const r1 = record(keys, 9, f('one'), 'first', 'k');
    const r2 = record(keys, 9, f('two'), 'second', 'k');
    const r3 = record(keys, 9, f('three'), 'third', 'k');
    const stale = {
      ...streamItem(r3),
      encrypted_content: record(keys, 9, f('three'), 'old', 'k').encrypted_content,
    };
    const pages = [
      { injectables: [streamItem(r1), stale], next_cursor: 'p2', has_more: true },
      { injectables: [streamItem(r2)], next_cursor: 'p3', has_more: true },
      { injectables: [], next_cursor: null, has_more: false },
    ];
    const { fetch, calls } = fakeFetch((_c, n) => ok(pages[n]));
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch });
    const paired = await client.withSignatures([paidItem(r1), paidItem(r2), paidItem(r3)]);
    expect(paired.map((p) => p.signature)).toEqual([r1.signature, r2.signature, null]);
    expect(await Promise.all(paired.map((p) => verify(p, keys.raw, 9)))).toEqual([true, true, false]);
    expect(calls).toHaveLength(3);

    // stops streaming once every slug is found; no call at all for no items
    const again = fakeFetch((_c, n) => ok(pages[n]));
    await createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch: again.fetch }).withSignatures([
      paidItem(r1),
    ]);
    expect(again.calls).toHaveLength(1);
    const none = fakeFetch(() => ok(pages[0]));
    expect(
      await createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch: none.fetch }).withSignatures([]),
    ).toEqual([]);
    expect(none.calls).toHaveLength(0);
  });
});

describe('default fetch', () => {
  const original = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = original;
  });

  it('uses globalThis.fetch, called on globalThis (browsers throw "Illegal invocation" otherwise)', async () => {
    const spy = jest.fn(async function (this: unknown) {
      expect(this).toBe(globalThis);
      return new Response(
        JSON.stringify({
          status: 'success',
          message: 'Success',
          data: { has_paid: true, is_test_license: false },
          errors: null,
        }),
        { status: 200 },
      );
    });
    globalThis.fetch = spy;
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE });
    expect((await client.hasPaid()).hasPaid).toBe(true);
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

describe('plans, entitlements and metered usage', () => {
  const ENTITLED = {
    sso: true,
    seats: 5,
    support: 'email',
    beta: false,
    none: 0,
    blank: '',
    'meter.ai_credits': 1000,
  };

  it('check() returns plan and entitlements when the answer carries them, and nothing more otherwise', async () => {
    let data: Record<string, unknown> = {
      has_paid: true,
      is_test_license: false,
      plan: 'pro',
      entitlements: ENTITLED,
    };
    const { fetch } = fakeFetch(() => ok(data));
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch });
    expect(await client.check()).toEqual({
      hasPaid: true,
      isTestLicense: false,
      redirectUrl: null,
      injectables: [],
      offline: false,
      expiresAt: null,
      graceUntil: null,
      plan: 'pro',
      entitlements: ENTITLED,
    });
    data = { has_paid: true, is_test_license: false };
    const plain = await client.check();
    expect('plan' in plain || 'entitlements' in plain).toBe(false);
  });

  it('can() and limit() read the last answer, checking once first', async () => {
    let paid = true;
    const { fetch, calls } = fakeFetch(() =>
      ok(
        paid
          ? { has_paid: true, is_test_license: false, plan: 'pro', entitlements: ENTITLED }
          : { has_paid: false, is_test_license: false, redirect_url: null, plan: 'pro', entitlements: {} },
      ),
    );
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, domain: 'shop.example.com', fetch });
    expect(await client.can('sso')).toBe(true);
    expect(calls).toHaveLength(1);
    expect(await client.can('seats')).toBe(true);
    expect(await client.can('support')).toBe(true);
    expect(await client.can('beta')).toBe(false);
    expect(await client.can('none')).toBe(false);
    expect(await client.can('blank')).toBe(false);
    expect(await client.can('missing')).toBe(false);
    expect(await client.limit('seats')).toBe(5);
    expect(await client.limit('meter.ai_credits')).toBe(1000);
    expect(await client.limit('sso')).toBeNull();
    expect(await client.limit('support')).toBeNull();
    expect(calls).toHaveLength(1);
    paid = false;
    await client.check();
    expect(await client.can('sso')).toBe(false);
    expect(await client.limit('seats')).toBeNull();
  });

  it('can() answers false when the check fails or is refused', async () => {
    const { fetch } = fakeFetch(() => fail(403, 'This license has been revoked.', { redirect_url: null }));
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch });
    expect(await client.can('sso')).toBe(false);
    expect(await client.limit('seats')).toBeNull();
  });

  it('record() posts the meter, amount and idempotency key and answers the counts', async () => {
    const { fetch, calls } = fakeFetch(() =>
      ok({ meter: 'meter.ai_credits', used: 7, limit: 10, remaining: 3, resets_at: '2026-12-01T00:00:00Z' }),
    );
    const client = createClient({ baseUrl: BASE, licenseKey: LICENSE, domain: 'shop.example.com', fetch });
    expect(await client.record('meter.ai_credits', 2, 'job-1')).toEqual({
      meter: 'meter.ai_credits',
      used: 7,
      limit: 10,
      remaining: 3,
      resetsAt: new Date('2026-12-01T00:00:00Z'),
    });
    expect(calls[0].url).toBe(`${BASE}/license/usage`);
    expect(calls[0].init.method).toBe('POST');
    expect(calls[0].init.headers['Content-Type']).toBe('application/json');
    expect(calls[0].init.headers['X-Service-Domain']).toBe('shop.example.com');
    expect(JSON.parse(calls[0].init.body as string)).toEqual({
      meter: 'meter.ai_credits',
      amount: 2,
      idempotency_key: 'job-1',
    });
    await client.record('meter.ai_credits');
    const sent = JSON.parse(calls[1].init.body as string);
    expect(sent.amount).toBe(1);
    expect(sent.idempotency_key).toMatch(/^[A-Za-z0-9_-]{16,}$/);
  });

  it('record() past the quota throws 429 with the counts in data and retryAfter', async () => {
    const counts = {
      meter: 'meter.ai_credits',
      used: 9,
      limit: 10,
      remaining: 1,
      resets_at: '2026-12-01T00:00:00Z',
    };
    const { fetch } = fakeFetch(() =>
      fail(429, 'This license has used its quota of 10 for meter.ai_credits this month.', counts, null, {
        'Retry-After': '3600',
      }),
    );
    const error = await caught(
      createClient({ baseUrl: BASE, licenseKey: LICENSE, fetch }).record('meter.ai_credits', 2),
    );
    expect([error.status, error.retryAfter, error.data]).toEqual([429, 3600, counts]);
  });
});
