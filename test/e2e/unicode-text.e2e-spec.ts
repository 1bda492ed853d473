import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeAccount, makeDomain, makeLicense, makeProject } from '../factories/index.js';
import { apiAs } from '../utils/api.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';
const unpaired = (field: string) =>
  `The ${field} field must be valid Unicode text (it contains an unpaired surrogate).`;

describe('text that is not valid Unicode is refused, never stored as U+FFFD', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  it('an unpaired surrogate in a JSON string → 422 naming the field, on every kind of write; nothing stored', async () => {
    const { key } = await makeAccount(t.app);
    const api = apiAs(t, key);
    const p = await makeProject(t, key, { name: 'Before' });
    const d = await makeDomain(t, key, p.id);
    const l = await makeLicense(t, key, p.id, { title: 'Before' });
    const inj = expectSuccess(
      await api.post(`/project/${p.id}/injectables`, {
        slug: 'before',
        content: 'x',
        secret: 's3cret-s3cret',
      }),
      201,
    );
    const projectBefore = expectSuccess(await api.get(`/project/${p.id}`));
    const licenseBefore = expectSuccess(await api.get(`/project/${p.id}/licenses/${l.id}`));

    const cases: Array<
      [string, () => ReturnType<ReturnType<typeof apiAs>['post']>, Record<string, string[]>]
    > = [
      [
        'create project',
        () => api.post('/project', { name: `Shop ${LONE_HIGH}` }),
        { name: [unpaired('name')] },
      ],
      [
        'patch project',
        () => api.patch(`/project/${p.id}`, { name: `a${LONE_LOW}b` }),
        { name: [unpaired('name')] },
      ],
      [
        'put project, two fields',
        () =>
          api.put(`/project/${p.id}`, {
            name: 'ok',
            description: LONE_HIGH,
            default_redirect_url: `https://x.example/${LONE_LOW}`,
          }),
        {
          description: [unpaired('description')],
          default_redirect_url: [unpaired('default redirect url')],
        },
      ],
      [
        'create domain',
        () => api.post(`/project/${p.id}/domains`, { domain: `${LONE_HIGH}.example.com` }),
        { domain: [unpaired('domain')] },
      ],
      [
        'create license',
        () => api.post(`/project/${p.id}/licenses`, { title: `T${LONE_HIGH}` }),
        { title: [unpaired('title')] },
      ],
      [
        'patch license meta, nested',
        () =>
          api.patch(`/project/${p.id}/licenses/${l.id}`, {
            title: 'ok',
            meta: { tags: ['fine', `bad${LONE_HIGH}`] },
          }),
        { 'meta.tags.1': [unpaired('meta.tags.1')] },
      ],
      [
        'create injectable content',
        () =>
          api.post(`/project/${p.id}/injectables`, {
            slug: 'new',
            secret: 's3cret-s3cret',
            content: `<b>${LONE_LOW}</b>`,
          }),
        { content: [unpaired('content')] },
      ],
      [
        'update injectable secret',
        () => api.put(`/project/${p.id}/injectables/${inj.id}`, { content: 'y', secret: LONE_HIGH }),
        { secret: [unpaired('secret')] },
      ],
      [
        'a field the route ignores',
        () => api.patch(`/project/${p.id}`, { name: 'ok', nonsense: LONE_HIGH }),
        { nonsense: [unpaired('nonsense')] },
      ],
      [
        'an object key',
        () => api.patch(`/project/${p.id}`, { meta: { [`k${LONE_HIGH}`]: 1 } }),
        {
          'meta.k\\ud800': [
            'The meta.k\\ud800 field name must be valid Unicode text (it contains an unpaired surrogate).',
          ],
        },
      ],
      [
        'meta sent as a JSON string',
        () => api.patch(`/project/${p.id}`, { meta: JSON.stringify({ a: LONE_HIGH }) }),
        { 'meta.a': [unpaired('meta.a')] },
      ],
      ['create API key', () => api.post('/api-keys', { name: LONE_HIGH }), { name: [unpaired('name')] }],
    ];
    for (const [what, send, errors] of cases) {
      const res = await send();
      expect({ what, status: res.status, errors: res.body.errors }).toEqual({ what, status: 422, errors });
      expectError(res, 422);
      expect(res.body.message).toBe(
        Object.values(errors)[0][0] + (Object.keys(errors).length > 1 ? ' (and 1 more error)' : ''),
      );
    }

    // Nothing of it was stored.
    expect(expectSuccess(await api.get(`/project/${p.id}`))).toEqual(projectBefore);
    expect(expectSuccess(await api.get(`/project/${p.id}/licenses/${l.id}`))).toEqual(licenseBefore);
    expect(expectSuccess(await api.get(`/project/${p.id}/domains`)).data.map((x: any) => x.id)).toEqual([
      d.id,
    ]);
    expect(expectSuccess(await api.get(`/project/${p.id}/injectables`)).data.map((x: any) => x.slug)).toEqual(
      ['before'],
    );
    const injectable = expectSuccess(await api.get(`/project/${p.id}/injectables/${inj.id}`));
    expect(injectable.content).toBe(inj.content);
    const names = expectSuccess(await api.get('/project?per_page=50')).data.map((x: any) => x.name);
    expect(names.some((n: string) => n.includes('\ufffd'))).toBe(false);
  });

  it('multipart: meta as a JSON string with an unpaired surrogate → 422 on meta.a', async () => {
    const { key } = await makeAccount(t.app);
    const p = await makeProject(t, key);
    const res = await t
      .http()
      .post(`/api/v1/project/${p.id}/injectables`)
      .set('X-API-KEY', key)
      .field('slug', 'multi')
      .field('type', 'file')
      .field('secret', 's3cret-s3cret')
      .field('meta', JSON.stringify({ a: LONE_LOW }))
      .attach('file', Buffer.from('payload'), 'p.bin');
    expect({ status: res.status, errors: res.body.errors }).toEqual({
      status: 422,
      errors: { 'meta.a': [unpaired('meta.a')] },
    });
    expect(expectSuccess(await apiAs(t, key).get(`/project/${p.id}/injectables`)).data).toEqual([]);
  });

  it('multipart: a text field or a file name whose bytes are not UTF-8 → 422 naming it; nothing stored or changed', async () => {
    const { key } = await makeAccount(t.app);
    const api = apiAs(t, key);
    const p = await makeProject(t, key);
    const inj = expectSuccess(
      await api.post(`/project/${p.id}/injectables`, {
        slug: 'kept',
        title: 'Kept',
        content: 'x',
        secret: 's3cret-s3cret',
      }),
      201,
    );
    const boundary = 'lgBoundary';
    /** A multipart body built from raw bytes (supertest would re-encode them). */
    const multipart = (parts: Array<{ name: string; value: Buffer; filename?: Buffer }>) =>
      Buffer.concat([
        ...parts.flatMap(({ name, value, filename }) => [
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"`),
          ...(filename
            ? [
                Buffer.from('; filename="'),
                filename,
                Buffer.from('"\r\nContent-Type: application/octet-stream'),
              ]
            : []),
          Buffer.from('\r\n\r\n'),
          value,
          Buffer.from('\r\n'),
        ]),
        Buffer.from(`--${boundary}--\r\n`),
      ]);
    const send = async (method: 'POST' | 'PUT', path: string, body: Buffer) => {
      const res = await fetch(`${t.url}/api/v1${path}`, {
        method,
        headers: { 'X-API-KEY': key, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
        body,
      });
      return { status: res.status, body: (await res.json()) as { message: string; errors: unknown } };
    };
    const text = (s: string) => Buffer.from(s, 'utf8');
    const latin1 = Buffer.from('Caf\xe9', 'latin1'); // "Café" as Latin-1: 0xe9 alone is not UTF-8
    const notUtf8 = (field: string) =>
      `The ${field} must be valid UTF-8 text (it contains bytes that are not UTF-8, or the replacement character U+FFFD).`;

    const created = await send(
      'POST',
      `/project/${p.id}/injectables`,
      multipart([
        { name: 'slug', value: text('fresh') },
        { name: 'secret', value: text('s') },
        { name: 'title', value: latin1 },
        { name: 'content', value: Buffer.concat([text('<b>'), latin1, text('</b>')]) },
      ]),
    );
    expect(created).toEqual({
      status: 422,
      body: expect.objectContaining({
        message: `${notUtf8('title field')} (and 1 more error)`,
        errors: { title: [notUtf8('title field')], content: [notUtf8('content field')] },
      }),
    });
    const file = await send(
      'POST',
      `/project/${p.id}/injectables`,
      multipart([
        { name: 'slug', value: text('file') },
        { name: 'secret', value: text('s') },
        { name: 'file', value: text('payload'), filename: Buffer.from('r\xe9sum\xe9.txt', 'latin1') },
      ]),
    );
    expect(file).toEqual({
      status: 422,
      body: expect.objectContaining({ errors: { file: [notUtf8('file name')] } }),
    });
    const updated = await send(
      'PUT',
      `/project/${p.id}/injectables/${inj.id}`,
      multipart([{ name: 'title', value: latin1 }]),
    );
    expect(updated).toEqual({
      status: 422,
      body: expect.objectContaining({ errors: { title: [notUtf8('title field')] } }),
    });

    expect(expectSuccess(await api.get(`/project/${p.id}/injectables`)).data.map((x: any) => x.slug)).toEqual(
      ['kept'],
    );
    expect(expectSuccess(await api.get(`/project/${p.id}/injectables/${inj.id}`)).title).toBe('Kept');
    // Valid UTF-8, non-ASCII included, is taken as sent.
    const fine = await send(
      'PUT',
      `/project/${p.id}/injectables/${inj.id}`,
      multipart([{ name: 'title', value: text('Café ☕ 😀') }]),
    );
    expect({ status: fine.status, title: (fine.body as any).data?.title }).toEqual({
      status: 200,
      title: 'Café ☕ 😀',
    });
  });

  it('the runtime check refuses one in its body too', async () => {
    const res = await t
      .http()
      .post('/api/v1/project/has-paid')
      .send({ license: `lic${LONE_HIGH}` });
    expect({ status: res.status, errors: res.body.errors }).toEqual({
      status: 422,
      errors: { license: [unpaired('license')] },
    });
  });

  it('paired surrogates (emoji, astral characters) are stored exactly', async () => {
    const { key } = await makeAccount(t.app);
    const api = apiAs(t, key);
    const name = 'Shop 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢';
    const p = expectSuccess(await api.post('/project', { name, meta: { '🔑': ['🚀'] } }), 201);
    expect(p.name).toBe(name);
    const read = expectSuccess(await api.get(`/project/${p.id}`));
    expect({ name: read.name, meta: read.meta }).toEqual({ name, meta: { '🔑': ['🚀'] } });
  });

  it('a JSON body that is not valid UTF-8 → 400, nothing stored', async () => {
    const { key } = await makeAccount(t.app);
    for (const bytes of [
      Buffer.from([0xff]),
      Buffer.from([0xed, 0xa0, 0x80]) /* a surrogate encoded as if it were a character */,
      Buffer.from([0xc3]),
    ]) {
      const body = Buffer.concat([Buffer.from('{"name":"Bad '), bytes, Buffer.from('"}')]);
      // (fetch sends the bytes as they are; supertest would re-encode them)
      const res = await fetch(`${t.url}/api/v1/project`, {
        method: 'POST',
        headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
        body,
      });
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 400,
        body: { status: 'error', message: 'The request body is not valid UTF-8.', data: null, errors: null },
      });
    }
    expect(expectSuccess(await apiAs(t, key).get('/project')).data).toEqual([]);
  });
});
