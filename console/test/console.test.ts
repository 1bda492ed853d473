/**
 * The console (docs/console.md) in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against the real app on a fresh SQLite database: `npm run test:console`.
 *
 * Every page is checked with axe-core (no serious or critical violation); every request the browser
 * makes is recorded and must stay on the service's origin; the walkthrough is done with the keyboard
 * only (Tab, Shift+Tab, Enter, Space and typing).
 *
 * CONSOLE_SCREENSHOTS=1 also writes docs/console/*.png (the screenshots the README shows).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { makeAccount, makeApiKey, makeDomain, makeLicense, makeProject } from '../../test/factories/index.js';
import { createTestApp, TestApp } from '../../test/utils/test-app.js';
import { CountersService } from '../../src/payments/counters.service.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE = readFileSync(join('node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS ? join('docs', 'console') : null;
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/** Buttons that change something: none may be present for a read-only key. */
const WRITE_CONTROL =
  /^(create|add|save|delete|revoke|reactivate|lock|unlock|roll|retry|free|mark|edit|activate|deactivate|make|yes)\b/i;

if (!existsSync(CHROMIUM))
  throw new Error(`npm run test:console needs Chromium at ${CHROMIUM} (Debian: apt-get install -y chromium)`);

interface Opened {
  page: Page;
  context: BrowserContext;
}

describe('the console in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let origin: string;
  let key: string;
  let user: Awaited<ReturnType<typeof makeAccount>>['user'];
  const opened: BrowserContext[] = [];
  /** Every request of every page, and every script error: checked after each test. */
  let requests: string[] = [];
  let pageErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync('dist/console/index.html'))
      execFileSync(process.execPath, ['console/build.mjs'], { stdio: 'inherit' });
    t = await createTestApp({
      THROTTLE_API_LIMIT: '100000',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    origin = new URL(t.url).origin;
    ({ user, key } = await makeAccount(t.app));
    const { chromium } = await import('playwright-core');
    // playwright gives every launch a fresh, temporary user-data-dir.
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
    const elsewhere = requests.filter((url) => !url.startsWith(`${origin}/`));
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

  async function open(): Promise<Opened> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    opened.push(context);
    const page = await context.newPage();
    page.on('request', (request) => requests.push(request.url()));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      // The browser logs each 4xx answer; the console shows those itself. Anything else is a fault.
      if (message.type() === 'error' && !/Failed to load resource: the server responded/.test(message.text()))
        pageErrors.push(message.text());
    });
    const answer = await page.goto(`${origin}/console/`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toBe(CSP);
    return { page, context };
  }

  async function signIn(page: Page, apiKey: string): Promise<void> {
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  /** axe-core on the page as it is: no serious or critical violation. */
  async function axe(page: Page, where: string): Promise<void> {
    // page.evaluate runs through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(`${AXE};0`);
    const violations = await page.evaluate(async () => {
      const run = (window as unknown as { axe: { run: (c: Document) => Promise<any> } }).axe.run;
      const result = await run(document);
      return (result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[]).map(
        (v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) }),
      );
    });
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect({ where, bad }).toEqual({ where, bad: [] });
  }

  async function shot(page: Page, name: string): Promise<void> {
    if (!SCREENSHOTS) return;
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  /** Keyboard only: Tab (or Shift+Tab) until `target` has the focus; fails when it is never reached. */
  async function tabTo(page: Page, target: Locator, backwards = false): Promise<void> {
    await target.waitFor();
    for (let i = 0; i < 120; i++) {
      if (await target.evaluate((el) => el === document.activeElement)) return;
      await page.keyboard.press(backwards ? 'Shift+Tab' : 'Tab');
    }
    throw new Error(`could not reach ${target.toString()} with the keyboard`);
  }

  /** Waits until `locator` reads `text` (what the page shows after an answer arrives). */
  async function waitText(locator: Locator, text: string): Promise<void> {
    let seen: string | null = null;
    for (let i = 0; i < 100; i++) {
      seen = await locator.textContent({ timeout: 5000 }).catch(() => null);
      if (seen === text) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect({ locator: locator.toString(), text: seen }).toEqual({ locator: locator.toString(), text });
  }

  async function heading(page: Page, name: string | RegExp): Promise<void> {
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }

  it('walkthrough, keyboard only: sign in, project, domain, license, a runtime check, its usage, free a slot', async () => {
    const { page } = await open();
    await heading(page, 'Sign in to LicenseGate');
    await axe(page, 'sign-in');
    await shot(page, 'sign-in');

    await tabTo(page, page.getByLabel('API key'));
    await page.keyboard.type(key);
    await page.keyboard.press('Enter');
    await heading(page, 'Projects');
    await axe(page, 'projects (empty)');

    await tabTo(page, page.getByLabel('Name'));
    await page.keyboard.type('Acme Shop');
    await tabTo(page, page.getByLabel('Paid'));
    await page.keyboard.press('Space');
    await tabTo(page, page.getByRole('button', { name: 'Create project' }));
    await page.keyboard.press('Enter');
    await heading(page, /Acme Shop/);
    await waitText(page.locator('dt:text-is("Paid") + dd'), 'yes');
    await axe(page, 'project settings');
    await shot(page, 'project');

    await tabTo(page, page.getByRole('link', { name: 'Domains' }));
    await page.keyboard.press('Enter');
    await heading(page, /Domains/);
    await tabTo(page, page.getByLabel('Domain', { exact: true }));
    await page.keyboard.type('shop.example.com');
    await tabTo(page, page.getByLabel('Paid'));
    await page.keyboard.press('Space');
    await tabTo(page, page.getByRole('button', { name: 'Add domain' }));
    await page.keyboard.press('Enter');
    await page.getByRole('rowheader', { name: 'shop.example.com' }).waitFor();
    await axe(page, 'domains');
    await shot(page, 'domains');

    await tabTo(page, page.getByRole('link', { name: 'Licenses' }));
    await page.keyboard.press('Enter');
    await heading(page, /Licenses/);
    await tabTo(page, page.getByLabel('Title'));
    await page.keyboard.type('Walkthrough license');
    await tabTo(page, page.getByLabel('Max domains'));
    await page.keyboard.type('1');
    await tabTo(page, page.getByRole('button', { name: 'Create license' }));
    await page.keyboard.press('Enter');
    await heading(page, 'License Walkthrough license');
    await axe(page, 'license');
    const uuid = (await page.locator('dd code').first().textContent()) ?? '';
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);

    // The runtime check is made by a customer's site, not by the console.
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': uuid, 'X-Service-Domain': 'shop.example.com', Accept: 'application/json' },
    });
    expect(check.status).toBe(200);
    expect(((await check.json()) as { data: { has_paid: boolean } }).data.has_paid).toBe(true);
    // Counts are kept in memory and written every second: written now, instead of waiting.
    await t.app.get(CountersService).flush();

    await tabTo(page, page.getByRole('button', { name: 'Refresh usage' }));
    await page.keyboard.press('Enter');
    await waitText(page.getByTestId('usage-today'), '1');
    await page.getByRole('img', { name: /Checks per day, last 30 days/ }).waitFor();
    await page.getByRole('rowheader', { name: 'shop.example.com (the domain itself)' }).waitFor();
    await axe(page, 'license with usage and activations');
    await shot(page, 'license');

    await tabTo(page, page.getByRole('button', { name: 'Free the slot of shop.example.com' }));
    await page.keyboard.press('Enter');
    // The question takes the button's place, focus on Cancel; the answer that acts is before it.
    await tabTo(page, page.getByRole('button', { name: 'Yes, free it' }), true);
    await page.keyboard.press('Enter');
    await page.getByText('No activation yet.').waitFor();

    await tabTo(page, page.getByRole('button', { name: 'Sign out' }));
    await page.keyboard.press('Enter');
    await heading(page, 'Sign in to LicenseGate');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  }, 120_000);
});
