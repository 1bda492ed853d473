/**
 * The customer portal (docs/portal.md) in a real headless Chromium against the real app: the link's
 * Continue page, the buyer's page, freeing a site and downloading an offline token that the JS SDK
 * verifies. Every page is checked with axe-core (no serious or critical violation) and every request
 * must stay on the service's origin. `npm run test:console`.
 *
 * CONSOLE_SCREENSHOTS=1 also writes docs/portal/*.png (the screenshots docs/portal.md shows).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { importPublicKey } from '../../sdk/src/crypto.js';
import { openOfflineToken } from '../../sdk/src/index.js';
import { CustomerEntity } from '../../src/customers/customer.entity.js';
import { LicenseActivationEntity } from '../../src/licenses/license-usage.entity.js';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { makeAccount, makeLicense, makeProject } from '../../test/factories/index.js';
import { createTestApp, TestApp } from '../../test/utils/test-app.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE = readFileSync(join('node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS ? join('docs', 'portal') : null;
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

if (!existsSync(CHROMIUM))
  throw new Error(`npm run test:console needs Chromium at ${CHROMIUM} (Debian: apt-get install -y chromium)`);

describe('the customer portal in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let origin: string;
  let key: string;
  const opened: BrowserContext[] = [];
  let requests: string[] = [];
  let pageErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync('dist/console/portal.html'))
      execFileSync(process.execPath, ['console/build.mjs'], { stdio: 'inherit' });
    t = await createTestApp({ THROTTLE_API_LIMIT: '100000', WEBHOOK_DISPATCHER: 'false' });
    origin = new URL(t.url).origin;
    ({ key } = await makeAccount(t.app));
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      chromiumSandbox: false,
      args: [
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 120_000);

  afterEach(async () => {
    for (const context of opened.splice(0)) await context.close();
    // The downloaded token is a blob of the page's own origin.
    const elsewhere = requests.filter(
      (url) => !url.startsWith(`${origin}/`) && !url.startsWith(`blob:${origin}/`),
    );
    requests = [];
    const errors = pageErrors;
    pageErrors = [];
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      acceptDownloads: true,
    });
    opened.push(context);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    page.on('request', (request) => requests.push(request.url()));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/Failed to load resource: the server responded/.test(message.text()))
        pageErrors.push(message.text());
    });
    return page;
  }

  async function axe(page: Page, where: string): Promise<void> {
    await page.evaluate(`${AXE};0`);
    const violations = await page.evaluate(async () => {
      type Violation = { id: string; impact: string; nodes: { target: string[] }[] };
      const { axe } = window as unknown as {
        axe: { run: (c: Document) => Promise<{ violations: Violation[] }> };
      };
      const result = await axe.run(document);
      return result.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 3),
      }));
    });
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect({ where, bad }).toEqual({ where, bad: [] });
  }

  async function shot(page: Page, name: string): Promise<void> {
    if (!SCREENSHOTS) return;
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  async function tabTo(page: Page, target: ReturnType<Page['locator']>): Promise<void> {
    await target.waitFor();
    for (let i = 0; i < 300; i++) {
      if (await target.evaluate((el) => el === document.activeElement)) return;
      await page.keyboard.press('Tab');
    }
    throw new Error(`could not reach ${target.toString()} with the keyboard`);
  }

  it('opens from a link, frees a site, downloads a token the SDK verifies; a used link is refused', async () => {
    const project = await makeProject(t, key, {
      name: 'Acme Forms Pro',
      has_paid: true,
      offline_grace_hours: 72,
    });
    const customer = await t.dataSource
      .getRepository(CustomerEntity)
      .save({ project_id: project.id, email: 'ada@example.com', name: 'Ada' });
    const licenses = t.dataSource.getRepository(LicenseEntity);
    const old = await makeLicense(t, key, project.id, { title: 'Acme Forms Pro, 2025' });
    await licenses.update({ id: old.id }, { customer_id: customer.id });
    const revoked = await t
      .http()
      .post(`/api/v1/project/${project.id}/licenses/${old.id}/revoke`)
      .set('X-API-KEY', key);
    expect(revoked.status).toBe(200);
    const license = await makeLicense(t, key, project.id, {
      title: 'Acme Forms Pro, 3 sites',
      max_domains: 3,
    });
    await licenses.update({ id: license.id }, { customer_id: customer.id });
    const sites = t.dataSource.getRepository(LicenseActivationEntity);
    await sites.save({ license_id: license.id, domain: 'old-shop.example', host: '' });
    await sites.save({ license_id: license.id, domain: 'ada.example', host: 'shop.ada.example' });
    // Another customer's license of the same project: never shown.
    const stranger = await makeLicense(t, key, project.id, { title: 'Someone else' });

    const link = await t
      .http()
      .post(`/api/v1/project/${project.id}/portal-sessions`)
      .set('X-API-KEY', key)
      .send({ customer_id: customer.id, return_url: 'https://app.acme.example/account' });
    expect(link.status).toBe(201);
    const path = new URL(link.body.data.url as string).pathname;

    const page = await newPage();
    const gate = await page.goto(`${origin}${path}`);
    expect(gate?.status()).toBe(200);
    expect(gate?.headers()['content-security-policy']).toBe(CSP);
    await page.getByRole('heading', { level: 1, name: 'Your licenses for Acme Forms Pro' }).waitFor();
    await axe(page, 'continue page');
    await shot(page, 'continue');

    // Keyboard only: Continue is a plain form's button.
    await tabTo(page, page.getByRole('button', { name: 'Continue' }));
    await Promise.all([page.waitForURL(`${origin}/portal/`), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { level: 1, name: 'Your licenses for ada@example.com' }).waitFor();
    const card = page.getByRole('region', { name: 'Acme Forms Pro, 3 sites' });
    await card.getByRole('row', { name: /shop\.ada\.example/ }).waitFor();
    expect(await page.getByRole('link', { name: 'Back to app.acme.example' }).getAttribute('href')).toBe(
      'https://app.acme.example/account',
    );
    expect(await page.getByText('Someone else').count()).toBe(0);
    expect(await page.content()).not.toContain(stranger.uuid);
    const past = page.getByRole('region', { name: 'Acme Forms Pro, 2025' });
    await past.getByText(/^Revoked on /).waitFor();
    await past
      .getByText(
        'This license has been revoked: an offline token is issued only for an active, paid license.',
      )
      .waitFor();
    await card.getByText('Paid', { exact: true }).waitFor();
    await card.getByText('3 of 3 frees left today', { exact: false }).waitFor();
    await axe(page, 'portal');
    await shot(page, 'portal');

    // The key: masked until revealed, copied either way.
    const shownKey = card.locator('.key code');
    expect(await shownKey.textContent()).not.toBe(license.uuid);
    expect((await shownKey.textContent())?.endsWith(String(license.uuid).slice(-4))).toBe(true);
    await card.getByRole('button', { name: /^Reveal key/ }).click();
    expect(await shownKey.textContent()).toBe(license.uuid);
    expect(await card.getByRole('button', { name: /^Reveal key/ }).getAttribute('aria-pressed')).toBe('true');
    await card.getByRole('button', { name: /^Copy key/ }).click();
    await card.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(license.uuid);

    // Free a site, with the keyboard.
    await tabTo(page, card.getByRole('button', { name: 'Free this site old-shop.example' }));
    await page.keyboard.press('Enter');
    await card.getByText('old-shop.example is free. 2 more can be freed today.').waitFor();
    await card.getByText('2 of 3 frees left today', { exact: false }).waitFor();
    expect(await card.getByRole('row', { name: /old-shop\.example/ }).count()).toBe(0);
    expect(await sites.countBy({ license_id: license.id })).toBe(1);
    await axe(page, 'portal after freeing a site');

    // The offline token, as a file, verified by the SDK with the project's public key.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      card.getByRole('button', { name: /^Download offline token/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`license-${license.id}.lg1`);
    const token = readFileSync(await download.path(), 'utf8').trim();
    const signingKey = await t.http().get(`/api/v1/project/${project.id}/signing-key`).set('X-API-KEY', key);
    const payload = await openOfflineToken(token, await importPublicKey(signingKey.body.data.public_key_pem));
    expect(payload).toMatchObject({
      project_id: project.id,
      license_id: license.id,
      key_sha256: createHash('sha256').update(String(license.uuid)).digest('hex'),
      has_paid: true,
    });

    // The link was used: opened again, it says so (and opens nothing).
    const again = await newPage();
    const used = await again.goto(`${origin}${path}`);
    expect(used?.status()).toBe(410);
    await again.getByRole('heading', { level: 1, name: 'This link cannot be used' }).waitFor();
    await again.getByText(/has already been used/).waitFor();
    await axe(again, 'used link');
    // Without the portal's cookie the page says the session is not there.
    await again.goto(`${origin}/portal/`);
    await again.getByRole('alert').filter({ hasText: 'Not in a customer portal session' }).waitFor();
    await axe(again, 'portal without a session');
  }, 120_000);
});
