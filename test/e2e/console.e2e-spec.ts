import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeAccount, makeApiKey, makeProject } from '../factories/index.js';
import { expectError, expectSuccess } from '../utils/envelope.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

/**
 * The console's files (docs/console.md): served at /console/ with a strict Content-Security-Policy,
 * hashed assets cached for a year and index.html revalidated, not throttled; CONSOLE_ENABLED=false
 * leaves /console to the 404 of any unknown path. The console itself is tested in a browser
 * (npm run test:console).
 */

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

describe('the console at /console/', () => {
  let t: TestApp;
  let off: TestApp;

  beforeAll(async () => {
    if (!existsSync('dist/console/index.html'))
      execFileSync(process.execPath, ['console/build.mjs'], { stdio: 'inherit' });
    t = await createTestApp({ THROTTLE_ROOT_LIMIT: '2', THROTTLE_API_LIMIT: '2' });
    off = await createTestApp({ CONSOLE_ENABLED: 'false' });
  });
  afterAll(async () => {
    await t.close();
    await off.close();
  });

  it('redirects /console to /console/, keeping the query', async () => {
    const res = await t.http().get('/console?x=1');
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('/console/?x=1');
    expect(res.headers['content-security-policy']).toBe(CSP);
  });

  it('serves index.html with no-cache, the CSP and a request id, and no inline script or style', async () => {
    const res = await t.http().get('/console/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toMatch(/.+/);
    expect(res.text).toMatch(/<script type="module" src="\.\/assets\/app-\w+\.js"><\/script>/);
    expect(res.text).toMatch(/<link rel="stylesheet" href="\.\/assets\/app-\w+\.css">/);
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=|\son\w+=/i);
    expect(res.text).not.toMatch(/https?:\/\//);
  });

  it('names a favicon of its own, served like the other assets (no request for /favicon.ico)', async () => {
    const html = (await t.http().get('/console/')).text;
    const icon = /<link rel="icon" type="image\/svg\+xml" href="\.\/(assets\/favicon-\w+\.svg)">/.exec(html);
    expect(icon).not.toBeNull();
    const res = await t.http().get(`/console/${icon?.[1]}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/svg+xml');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(String(res.body)).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  });

  it('serves the hashed assets for a year, HEAD without a body', async () => {
    const html = (await t.http().get('/console/')).text;
    for (const asset of [/assets\/app-\w+\.js/, /assets\/app-\w+\.css/]) {
      const path = `/console/${asset.exec(html)?.[0]}`;
      const res = await t.http().get(path);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-type']).toMatch(/^text\/(javascript|css); charset=utf-8$/);
      expect(res.headers['content-security-policy']).toBe(CSP);
      const head = await t.http().head(path);
      expect(head.status).toBe(200);
      expect(head.headers['content-length']).toBe(res.headers['content-length']);
    }
  });

  it('answers an unknown file 404 and another method 405, in the envelope', async () => {
    const missing = expectError(await t.http().get('/console/assets/app-NOPE.js'), 404);
    expect(missing.message).toBe('The route GET /console/assets/app-NOPE.js could not be found.');
    const post = await t.http().post('/console/').send({});
    expect(expectError(post, 405).message).toBe(
      'The POST method is not supported for this route. Supported methods: GET, HEAD.',
    );
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(post.headers['content-security-policy']).toBe(CSP);
  });

  it('is not throttled: a page load does not spend the root allowance, which still counts', async () => {
    for (let i = 0; i < 10; i++) expect((await t.http().get('/console/')).status).toBe(200);
    expect((await t.http().get('/api/v1/')).status).toBe(200);
    expect((await t.http().get('/api/v1/')).status).toBe(200);
    expectError(await t.http().get('/api/v1/'), 429);
  });

  it('CONSOLE_ENABLED=false: /console and its files are unknown paths', async () => {
    for (const path of ['/console', '/console/', '/console/index.html']) {
      const res = await off.http().get(path);
      expect(expectError(res, 404).message).toBe(`The route GET ${path} could not be found.`);
      expect(res.headers['content-security-policy']).toBeUndefined();
    }
  });
});

describe('console/src', () => {
  it('reaches the API only through the client generated from openapi.json (console/src/api.ts)', () => {
    const files = readdirSync('console/src', { recursive: true, encoding: 'utf8' }).filter((f) =>
      /\.tsx?$/.test(f),
    );
    expect(files.length).toBeGreaterThan(5);
    const elsewhere = files.filter((file) =>
      /\bfetch\(|XMLHttpRequest|EventSource|WebSocket|sendBeacon|https?:\/\//.test(
        readFileSync(join('console/src', file), 'utf8'),
      ),
    );
    expect(elsewhere).toEqual([]);
    expect(readFileSync('console/src/api.ts', 'utf8')).toContain("from '../../generated/openapi'");
  });
});

describe('GET /api-keys/current', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000' });
  });
  afterAll(async () => t.close());

  it('tells any key its own id, name, prefix, scope, read_only and expiry, never the key', async () => {
    const { user, key } = await makeAccount(t.app);
    const project = await makeProject(t, key);
    const scoped = await makeApiKey(t.app, user, { project_id: project.id, read_only: true, name: 'ci' });
    const global = expectSuccess(await t.http().get('/api/v1/api-keys/current').set('X-API-KEY', key));
    expect(global).toMatchObject({
      project_id: null,
      read_only: false,
      prefix: key.slice(0, global.prefix.length),
    });
    expect(global).not.toHaveProperty('key');
    const me = expectSuccess(await t.http().get('/api/v1/api-keys/current').set('X-API-KEY', scoped));
    expect(me).toMatchObject({ name: 'ci', project_id: project.id, read_only: true, expires_at: null });
    expect(scoped.startsWith(me.prefix)).toBe(true);
    expect(me.id).not.toBe(global.id);
  });

  it('answers 401 without a key and 403 with an unknown one', async () => {
    expectError(await t.http().get('/api/v1/api-keys/current'), 401);
    expect(
      expectError(await t.http().get('/api/v1/api-keys/current').set('X-API-KEY', 'lg_unknown'), 403).message,
    ).toBe('Invalid API key.');
  });
});
