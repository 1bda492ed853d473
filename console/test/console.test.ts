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
import { isDeepStrictEqual } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { LicenseEntity } from '../../src/licenses/license.entity.js';
import { PaymentEventEntity } from '../../src/payments/payment-event.entity.js';
import { SubscriptionEntity } from '../../src/payments/subscription.entity.js';
import {
  makeAccount,
  makeApiKey,
  makeDomain,
  makeLicense,
  makeProject,
  makeUser,
  uniqueToken,
} from '../../test/factories/index.js';
import { createTestApp, TestApp } from '../../test/utils/test-app.js';
import { SetupService, WRONG_SETUP_CODE } from '../../src/auth/setup.service.js';
import { Activations } from '../../src/licenses/activations.js';
import { UsageFlush } from '../../src/gate/usage-flush.js';
import { AnalyticsCounts } from '../../src/analytics/analytics-counts.service.js';
import { fixture, makeConnector, signatureHeaders } from '../../test/utils/payments.js';
import { startOidcProvider, TestProvider } from '../../test/utils/oidc.js';
import { freePort } from '../../test/utils/processes.js';

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
  /** Origins besides the service's the browser may go to (the SSO tests' service and identity provider). */
  const otherOrigins: string[] = [];

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
    const elsewhere = requests.filter(
      (url) => ![origin, ...otherOrigins].some((allowed) => url.startsWith(`${allowed}/`)),
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

  /** A new browser context on the console's sign-in page, at `base` (the service's origin by default). */
  async function open(clipboard = false, base = origin): Promise<Opened> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    opened.push(context);
    if (clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    page.on('request', (request) => requests.push(request.url()));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      // The browser logs each 4xx answer; the console shows those itself. Anything else is a fault.
      if (message.type() === 'error' && !/Failed to load resource: the server responded/.test(message.text()))
        pageErrors.push(message.text());
    });
    const answer = await page.goto(`${base}/console/`);
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

  /** Keyboard only: Tab (or Shift+Tab) until `target` has the focus; fails when it is never reached. */
  async function tabTo(page: Page, target: Locator, backwards = false): Promise<void> {
    await target.waitFor();
    for (let i = 0; i < 500; i++) {
      if (await target.evaluate((el) => el === document.activeElement)) return;
      await page.keyboard.press(backwards ? 'Shift+Tab' : 'Tab');
    }
    throw new Error(`could not reach ${target.toString()} with the keyboard`);
  }

  /** Waits until `locator` reads `text` (what the page shows after an answer arrives). */
  /**
   * Reads until what is shown equals `expected` (a list re-renders after its request answers, and a
   * read right after the table appears may still see the rows before), then asserts it: at most 10 s.
   */
  async function settles<T>(read: () => Promise<T>, expected: T): Promise<void> {
    let seen = await read();
    for (let i = 0; i < 100 && !isDeepStrictEqual(seen, expected); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await read();
    }
    expect(seen).toEqual(expected);
  }

  async function waitText(locator: Locator, text: string): Promise<void> {
    let seen: string | null = null;
    for (let i = 0; i < 100; i++) {
      seen = await locator.textContent({ timeout: 5000 }).catch(() => null);
      if (seen === text) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect({ locator: locator.toString(), text: seen }).toEqual({ locator: locator.toString(), text });
  }

  /** The `data` of a 201 answer. */
  function expectCreated(res: { status: number; body: { data: Record<string, unknown> } }) {
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function heading(page: Page, name: string | RegExp): Promise<void> {
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }

  it('walkthrough, keyboard only: sign in, project, domain, license, a runtime check, its usage, free a slot, its analytics', async () => {
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
    await tabTo(page, page.getByRole('button', { name: 'Create project', exact: true }));
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
    const uuid = await page.getByLabel('License key').inputValue();
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);

    // The runtime check is made by a customer's site, not by the console.
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': uuid, 'X-Service-Domain': 'shop.example.com', Accept: 'application/json' },
    });
    expect(check.status).toBe(200);
    expect(((await check.json()) as { data: { has_paid: boolean } }).data.has_paid).toBe(true);
    // Counts are kept in memory and written every second: written now, instead of waiting.
    await Promise.all([t.app.get(UsageFlush).flush(), t.app.get(Activations).flush()]);
    // So are the analytics' (every ANALYTICS_FLUSH_MS).
    await t.app.get(AnalyticsCounts).flush();

    await tabTo(page, page.getByRole('button', { name: 'Refresh usage' }));
    await page.keyboard.press('Enter');
    await waitText(page.getByTestId('usage-today'), '1');
    await page.getByRole('img', { name: /Checks per day, last 30 days/ }).waitFor();
    await page.getByRole('rowheader', { name: 'shop.example.com (the domain itself)' }).waitFor();
    await axe(page, 'license with usage and activations');
    await shot(page, 'license');

    await tabTo(page, page.getByRole('button', { name: 'Free the slot of shop.example.com' }));
    await page.keyboard.press('Enter');
    // The question takes the focus to Cancel, which gives it back to the button.
    await waitText(page.locator(':focus'), 'Cancel');
    await page.keyboard.press('Enter');
    await waitText(page.locator(':focus'), 'Free the slot of shop.example.com');
    await page.keyboard.press('Enter');
    // The question takes the button's place, focus on Cancel; the answer that acts is before it.
    await tabTo(page, page.getByRole('button', { name: 'Yes, free it' }), true);
    await page.keyboard.press('Enter');
    await page.getByText('No activation yet.').waitFor();

    // The runtime check, in the analytics: the account's, then the project's.
    await tabTo(
      page,
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Analytics' }),
    );
    await page.keyboard.press('Enter');
    await heading(page, 'Analytics');
    await waitText(page.getByTestId('total-paid'), '1');
    await waitText(page.getByTestId('total-refused'), '0');
    await page.getByRole('img', { name: /^Answers per day by outcome, last 7 days, by day/ }).waitFor();
    await waitText(page.getByRole('table', { name: 'Top projects' }).getByRole('row').nth(1), 'Acme Shop1');
    await axe(page, 'analytics, every project');
    await tabTo(page, page.getByRole('link', { name: 'Projects', exact: true }), true);
    await page.keyboard.press('Enter');
    await tabTo(page, page.getByRole('link', { name: 'Acme Shop' }));
    await page.keyboard.press('Enter');
    await heading(page, /Acme Shop/);
    await tabTo(
      page,
      page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Analytics' }),
    );
    await page.keyboard.press('Enter');
    await heading(page, /Acme Shop · Analytics/);
    await waitText(page.getByTestId('total-paid'), '1');
    await waitText(
      page.getByRole('table', { name: 'Top domains' }).getByRole('row').nth(1),
      'shop.example.com1',
    );

    await tabTo(page, page.getByRole('button', { name: 'Sign out' }));
    await page.keyboard.press('Enter');
    await heading(page, 'Sign in to LicenseGate');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  }, 120_000);

  /** A project with something on every page: a domain, a license used once from it, an injectable, a delivery. */
  async function seed(name: string) {
    const project = await makeProject(t, key, { name, webhook_url: 'http://127.0.0.1:9/hook' });
    const domain = await makeDomain(t, key, project.id, {
      domain: `${project.slug}.example.com`,
      has_paid: true,
    });
    const license = await makeLicense(t, key, project.id, { title: `${name} license` });
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': license.uuid as string, 'X-Service-Domain': domain.domain as string },
    });
    expect(check.status).toBe(200);
    const injectable = await t
      .http()
      .post(`/api/v1/project/${project.id}/injectables`)
      .set('X-API-KEY', key)
      .send({ slug: 'banner', title: 'Banner', content: '<p>hi</p>', secret: 'a-secret-of-12+' });
    expect(injectable.status).toBe(201);
    const connector = await makeConnector(t, key, project.id as number, 'standard', {
      name: `${name} payments`,
    });
    await Promise.all([t.app.get(UsageFlush).flush(), t.app.get(Activations).flush()]);
    await t.app.get(AnalyticsCounts).flush();
    return { project, domain, license, connector };
  }

  /**
   * A Standard Webhooks event (test/fixtures/payments/standard/<type>.json) signed by the test and sent
   * to the connector's endpoint, as the provider would; `metadata` replaces the fixture's (null: none,
   * the project's own payment); `timestamp` replaces the event's own time. The answer's data:
   * `{outcome, event_id}`.
   */
  async function sendPayment(
    connector: { endpoint_url: string; secret: string },
    type: string,
    id: string,
    metadata?: Record<string, string> | null,
    timestamp?: string,
  ): Promise<{ outcome: string }> {
    const payload = fixture('standard', type);
    if (metadata === null) delete payload.data.metadata;
    else if (metadata) payload.data.metadata = metadata;
    if (timestamp) payload.timestamp = timestamp;
    const body = JSON.stringify(payload);
    const answer = await fetch(`${origin}${new URL(connector.endpoint_url).pathname}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...signatureHeaders('standard', connector.secret, body, Math.floor(Date.now() / 1000), id),
      },
      body,
    });
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { data: { outcome: string } }).data;
  }

  /** The write controls a page shows: buttons that change something, and forms but the audit filter. */
  async function writeControls(page: Page): Promise<string[]> {
    const buttons = await page.locator('main button').allTextContents();
    // The audit log's filters and the licenses' search read; they change nothing.
    const forms = await page
      .locator('main form:not([aria-label="Filter the audit log"]):not([role="search"])')
      .count();
    return [
      ...buttons.filter((text) => WRITE_CONTROL.test(text.trim())),
      ...(forms ? [`${forms} form(s)`] : []),
    ];
  }

  /**
   * Keyboard: every control of the page is in the tab order (native links, buttons and fields with no
   * negative tabindex), and nothing but those is made clickable (no role=button on a div or span).
   */
  async function keyboardReachable(page: Page, where: string): Promise<void> {
    const out = await page.evaluate(() => {
      const controls = [...document.querySelectorAll('a[href], button, input, select, textarea, summary')];
      return [
        ...controls.filter((el) => (el as HTMLElement).tabIndex < 0).map((el) => el.outerHTML.slice(0, 80)),
        ...[...document.querySelectorAll('[role=button], [onclick]')].map((el) => el.outerHTML.slice(0, 80)),
      ];
    });
    expect({ where, out }).toEqual({ where, out: [] });
  }

  /** Every page of one project, and the license's; `check` runs on each once it has loaded. */
  async function everyProjectPage(
    page: Page,
    project: number,
    license: number,
    check: (where: string) => Promise<void>,
  ): Promise<void> {
    const tabs: [string, string][] = [
      ['settings', 'dl.facts'],
      ['domains', 'table'],
      ['licenses', 'table'],
      ['injectables', 'table'],
      ['connectors', 'table'],
      ['webhooks', 'table'],
      ['analytics', '[data-testid="total-paid"]'],
      ['audit', 'table'],
    ];
    for (const [tab, ready] of tabs) {
      await page.goto(`${origin}/console/#/projects/${project}/${tab}`);
      await page.locator(`main ${ready}`).first().waitFor();
      await check(`project ${tab}`);
    }
    await page.goto(`${origin}/console/#/projects/${project}/licenses/${license}`);
    await page.getByRole('table', { name: 'Hosts that activated this license' }).waitFor();
    await check('license');
  }

  it('a read-only key sees every page and no write control', async () => {
    const { project, license } = await seed('Read only');
    const readOnly = await makeApiKey(t.app, user, { read_only: true, name: 'viewer' });
    const { page } = await open();
    await signIn(page, readOnly);
    await heading(page, 'Projects');
    await page.getByRole('link', { name: 'Read only' }).waitFor();
    const seen: Record<string, string[]> = { projects: await writeControls(page) };
    await axe(page, 'projects, read-only');
    await everyProjectPage(page, project.id, license.id as number, async (where) => {
      seen[where] = await writeControls(page);
      await axe(page, `${where}, read-only`);
    });
    for (const [hash, where, ready] of [
      ['#/analytics', 'analytics', '[data-testid="total-paid"]'],
      ['#/audit-log', 'audit log', 'table'],
      ['#/api-keys', 'API keys', 'table'],
    ]) {
      await page.goto(`${origin}/console/${hash}`);
      await page.locator(`main ${ready}`).first().waitFor();
      seen[where] = await writeControls(page);
      await axe(page, `${where}, read-only`);
    }
    // The event log of a connector, open: nothing to write there either.
    await page.goto(`${origin}/console/#/projects/${project.id}/connectors`);
    await page.getByRole('button', { name: 'Events of Read only payments' }).click();
    await page.getByText('No event received yet.').waitFor();
    seen['connector events'] = await writeControls(page);
    expect(Object.keys(seen)).toHaveLength(14);
    for (const where of Object.keys(seen))
      expect({ where, controls: seen[where] }).toEqual({ where, controls: [] });
    await expect(page.locator('header').textContent()).resolves.toContain('read-only');
  }, 120_000);

  it('a scoped key sees its project only, without the global pages and actions', async () => {
    const mine = await seed('Scoped mine');
    const other = await makeProject(t, key, { name: 'Not mine' });
    const scoped = await makeApiKey(t.app, user, { project_id: mine.project.id as number, name: 'deploy' });
    const { page } = await open();
    await signIn(page, scoped);
    await heading(page, /Scoped mine/);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await settles(() => nav.getByRole('link').allTextContents(), ['My project', 'Analytics', 'Audit log']);
    // Lock, unlock, delete and new projects need a global key: not offered.
    for (const name of ['Lock project', 'Delete project', 'Create project'])
      expect(await page.getByRole('button', { name }).count()).toBe(0);
    await axe(page, 'project, scoped');
    let writable = 0;
    await everyProjectPage(page, mine.project.id as number, mine.license.id as number, async (where) => {
      writable += (await writeControls(page)).length;
      await axe(page, `${where}, scoped`);
      await keyboardReachable(page, `${where}, scoped`);
    });
    expect(writable).toBeGreaterThan(0);

    // Another project, by its address: the API's answer is shown.
    await page.goto(`${origin}/console/#/projects/${other.id}`);
    await waitText(page.getByRole('alert'), 'This API key is scoped to another project.');
    // A reload keeps the session (sessionStorage).
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // The list of projects and the API keys are not a scoped key's pages.
    await page.goto(`${origin}/console/#/projects`);
    await heading(page, /Scoped mine/);
    await page.goto(`${origin}/console/#/api-keys`);
    await heading(page, 'Page not found');
    // The analytics page is its project's (GET /analytics is a global key's).
    await page.goto(`${origin}/console/#/analytics`);
    await heading(page, 'Analytics');
    await page.getByRole('link', { name: 'Scoped mine', exact: true }).waitFor();
    await waitText(page.getByTestId('total-paid'), '1');
    await waitText(
      page.getByRole('table', { name: 'Top licenses' }).getByRole('row').nth(1),
      'Scoped mine license1 paid + 0 unpaid = 1 answered',
    );
    expect(requests.filter((url) => url.includes('/api/v1/analytics'))).toEqual([]);
    await axe(page, 'analytics, scoped');
    await keyboardReachable(page, 'analytics, scoped');
    // Another project's connectors, by their address: refused, nothing shown.
    await page.goto(`${origin}/console/#/projects/${other.id}/connectors`);
    await waitText(page.getByRole('alert'), 'This API key is scoped to another project.');
    expect(await page.getByRole('button', { name: 'Create connector' }).count()).toBe(0);
    await page.goto(`${origin}/console/#/audit-log`);
    await heading(page, 'Audit log');
    await page.locator('main table').waitFor();
    const projects = await page.locator('main tbody td:nth-child(4)').allTextContents();
    expect(projects.length).toBeGreaterThan(0);
    // By name, linked to the project (docs/console.md): never another project's.
    expect(new Set(projects)).toEqual(new Set([mine.project.name]));
    await axe(page, 'audit log, scoped');

    // A scoped read-only key: its project, and nothing to write.
    const both = await makeApiKey(t.app, user, { project_id: mine.project.id as number, read_only: true });
    const second = await open();
    await signIn(second.page, both);
    await heading(second.page, /Scoped mine/);
    const controls: string[] = [];
    await everyProjectPage(second.page, mine.project.id as number, mine.license.id as number, async () => {
      controls.push(...(await writeControls(second.page)));
    });
    expect(controls).toEqual([]);
  }, 120_000);

  it("shows an API error's message, and 422 field errors beside their fields", async () => {
    const { page } = await open();
    await page.getByLabel('API key').fill('lg_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await waitText(page.getByRole('alert'), 'Invalid API key.');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await signIn(page, key);
    await page.getByLabel('Slug').fill('not a slug!');
    await page.getByLabel('Webhook URL').fill('not a url');
    await page.getByRole('button', { name: 'Create project', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const message = (await alert.textContent()) ?? '';
    expect(message).toMatch(/\(and \d+ more errors?\)$/);
    for (const label of ['Name', 'Slug', 'Webhook URL']) {
      const input = page.getByLabel(label, { exact: true });
      expect(await input.getAttribute('aria-invalid')).toBe('true');
      const described = (await input.getAttribute('aria-describedby')) ?? '';
      const error = await page.locator(`[id="${described.split(' ').pop()}"]`).textContent();
      expect({ label, error }).toEqual({ label, error: expect.stringMatching(/\S/) });
    }
    // The first field error is the message's first sentence.
    const nameError = await page.locator('.field-error').first().textContent();
    expect(message.startsWith(nameError ?? '-')).toBe(true);
    await axe(page, 'projects, with field errors');
    await shot(page, 'errors');
    // Fixed, the same form goes through and the errors go.
    await page.getByLabel('Name', { exact: true }).fill('Fixed');
    await page.getByLabel('Slug').fill('fixed');
    await page.getByLabel('Webhook URL').fill('');
    await page.getByRole('button', { name: 'Create project', exact: true }).click();
    await heading(page, /Fixed/);
    expect(await page.locator('[aria-invalid="true"]').count()).toBe(0);
  }, 60_000);

  it('the other actions: edit, lock and unlock a project, injectables, revoke and reactivate, retry, audit filters, API keys, delete', async () => {
    const { project, domain, license } = await seed('Actions');
    const { page } = await open();
    await signIn(page, key);
    const base = `${origin}/console/#/projects/${project.id}`;

    // Lock with a reason, then unlock.
    await page.goto(base);
    await heading(page, /Actions/);
    // Edit the project.
    await page.getByLabel('Default redirect URL').fill('https://acme.example/pay');
    await page.getByLabel('Active').uncheck();
    await page.getByRole('button', { name: 'Save project' }).click();
    await page.getByText('Saved.').waitFor();
    await waitText(page.locator('dt:text-is("Default redirect URL") + dd'), 'https://acme.example/pay');
    await waitText(page.locator('dt:text-is("Active") + dd'), 'no');

    await page.getByLabel('Reason for locking').fill('chargeback');
    await page.getByRole('button', { name: 'Lock project', exact: true }).click();
    await page.getByText(/This project is locked since/).waitFor();
    await page.getByRole('button', { name: 'Unlock project', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, unlock project' }).click();
    await page.getByRole('button', { name: 'Lock project', exact: true }).waitFor();
    expect(await page.getByText(/This project is locked since/).count()).toBe(0);

    // Injectables: create from text, replace the payload with a file (and its secret), delete.
    await page.goto(`${base}/injectables`);
    await page.getByRole('rowheader', { name: 'banner' }).waitFor();
    await page.getByLabel('Slug').fill('footer');
    await page.getByLabel('Content').fill('<footer>x</footer>');
    await page.getByLabel('Secret').fill('twelve-chars-or-more');
    await page.getByRole('button', { name: 'Create injectable' }).click();
    await page.getByText('Injectable footer created.').waitFor();
    expect(await page.getByLabel('Secret').inputValue()).toBe('');
    const size = page
      .getByRole('row', { name: /^footer/ })
      .getByRole('cell')
      .nth(3);
    await waitText(size, '18 bytes');
    await axe(page, 'injectables');
    await keyboardReachable(page, 'injectables');
    await shot(page, 'injectables');
    await page.getByRole('button', { name: 'Edit footer' }).click();
    await page.getByRole('heading', { name: 'Edit injectable footer' }).waitFor();
    await page.getByLabel('New file').setInputFiles({
      name: 'footer.html',
      mimeType: 'text/html',
      buffer: Buffer.from('<footer>from a file</footer>'),
    });
    await page.getByLabel('Secret').fill('twelve-chars-or-more');
    await page.getByRole('button', { name: 'Save injectable' }).click();
    await page.getByText('Injectable footer saved.').waitFor();
    await waitText(size, '28 bytes');
    await page.getByRole('button', { name: 'Delete footer' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('row', { name: /^footer/ }).waitFor({ state: 'detached' });

    // Every field of a license, edited; the page shows what the API stored.
    await page.goto(`${base}/licenses/${license.id}`);
    await heading(page, `License ${license.title as string}`);
    await page.getByLabel('Pinned to domain').selectOption({ label: domain.domain as string });
    await page.getByLabel('Expires at (UTC)').fill('2031-01-02T03:04');
    await page.getByLabel('Max domains').fill('3');
    await page.getByLabel('Max subdomains per domain').fill('2');
    await page.getByLabel('Max checks per day').fill('1000');
    await page.getByLabel('Allowed IP addresses').fill('203.0.113.7, 198.51.100.1');
    await page.getByLabel('Allowed countries').fill('DE,FR');
    await page.getByLabel('Test license').check();
    await page.getByLabel('Allow runtime configuration').check();
    await page.getByRole('button', { name: 'Save license' }).click();
    await page.getByText('Saved.').waitFor();
    const fact = (name: string) => page.locator(`dt:text-is("${name}") + dd`);
    await waitText(fact('Expires'), '2031-01-02 03:04:00 UTC');
    expect({
      domain: await fact('Pinned to domain').textContent(),
      maxDomains: await fact('Max domains').textContent(),
      subdomains: await fact('Max subdomains per domain').textContent(),
      perDay: await fact('Max checks per day').textContent(),
      countries: await fact('Allowed countries').textContent(),
      test: await fact('Test license').textContent(),
      configs: await fact('Allow runtime configuration').textContent(),
    }).toEqual({
      domain: domain.domain,
      maxDomains: '3',
      subdomains: '2',
      perDay: '1000',
      countries: 'DE,FR',
      test: 'yes',
      configs: 'yes',
    });
    expect(await fact('Allowed IP addresses').textContent()).toMatch(/203\.0\.113\.7/);

    // Revoke the license, then reactivate it.
    await page.getByRole('button', { name: 'Revoke license', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, revoke license' }).click();
    await page.getByText(/This license is revoked since/).waitFor();
    await waitText(fact('Revoked by'), 'the vendor (no payment reactivates it)');
    await page.getByRole('button', { name: 'Reactivate license', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, reactivate license' }).click();
    await page.getByRole('button', { name: 'Revoke license', exact: true }).waitFor();

    // A license that carries its own payment: billing, then its own flag marked paid.
    await page.getByLabel('Billing').selectOption('license');
    await page.getByRole('button', { name: 'Save license' }).click();
    await waitText(fact('Billing'), 'license: it carries its own payment, used from any site');
    await page.getByRole('button', { name: 'Mark paid', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, mark paid' }).click();
    await waitText(fact('Paid (its own flag)'), 'yes');
    await page.getByRole('button', { name: 'Mark unpaid', exact: true }).waitFor();

    // Retry a webhook delivery (the receiver is down: the dispatcher is off in this app).
    await page.goto(`${base}/webhooks`);
    const retry = page.getByRole('button', { name: /^Retry delivery \d+$/ }).first();
    const delivery = ((await retry.textContent()) ?? '').replace(/\D+/, '');
    await retry.click();
    await page.getByText(`Delivery ${delivery} is being retried.`).waitFor();
    await axe(page, 'webhook deliveries');
    await shot(page, 'webhooks');

    // The audit log, narrowed to one action.
    await page.goto(`${origin}/console/#/audit-log`);
    await page.getByRole('table', { name: 'Changes, latest first' }).waitFor();
    await page.getByLabel('Action').selectOption('license.revoked');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const actions = page.locator('main tbody th');
    await waitText(actions.first(), 'license.revoked');
    expect(new Set(await actions.allTextContents())).toEqual(new Set(['license.revoked']));
    await axe(page, 'audit log');
    // Payment connectors are a resource type of the log (the seed made one).
    await page.getByLabel('Action').selectOption('');
    await page.getByLabel('Resource type').selectOption('payment_connector');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitText(actions.first(), 'payment_connector.created');
    for (const action of await actions.allTextContents()) expect(action).toMatch(/^payment_connector\./);
    await page.getByLabel('Resource type').selectOption('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('main tbody th', { hasText: 'project.locked' }).first().waitFor();
    await shot(page, 'audit-log');

    // API keys: a new key is shown once and works; rolled, the new one is shown; revoked.
    await page.goto(`${origin}/console/#/api-keys`);
    await heading(page, 'API keys');
    await page.getByLabel('Name').fill('ci deploy');
    await page.getByLabel('Project').selectOption(String(project.id));
    await page.getByLabel('Read-only').check();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const fresh = (await page.getByTestId('new-key').textContent()) ?? '';
    expect(fresh).toMatch(/^lg_/);
    const me = await fetch(`${origin}/api/v1/api-keys/current`, { headers: { 'X-API-KEY': fresh } });
    expect(((await me.json()) as { data: unknown }).data).toMatchObject({
      name: 'ci deploy',
      project_id: project.id,
      read_only: true,
    });
    await axe(page, 'API keys, new key shown');
    await keyboardReachable(page, 'API keys');
    await shot(page, 'api-keys');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(fresh);
    const prefix = fresh.slice(0, 8);
    await page.getByRole('button', { name: new RegExp(`^Roll ${prefix}`) }).click();
    // How long the old key keeps working is asked with the question: a day unless chosen.
    expect(await page.getByLabel('The old key').inputValue()).toBe('86400');
    await page.getByLabel('The old key').selectOption({ label: 'stops at once' });
    await axe(page, 'API keys, rolling a key');
    await keyboardReachable(page, 'API keys, rolling a key');
    await page.getByRole('button', { name: 'Yes, roll' }).click();
    const rolled = (await page.getByTestId('new-key').textContent()) ?? '';
    expect(rolled).toMatch(/^lg_/);
    // The new key's box has the keyboard: the Roll button the answer came from does not take it back.
    await settles(
      () => page.evaluate(() => document.activeElement?.getAttribute('aria-labelledby') ?? null),
      'fresh-h',
    );
    expect(rolled).not.toBe(fresh);
    const old = await fetch(`${origin}/api/v1/api-keys/current`, { headers: { 'X-API-KEY': fresh } });
    expect(old.status).toBe(403);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: new RegExp(`^Revoke ${rolled.slice(0, 8)}`) }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await page
      .getByRole('row', { name: /ci deploy.*revoked/ })
      .first()
      .waitFor();
    const after = await fetch(`${origin}/api/v1/api-keys/current`, { headers: { 'X-API-KEY': rolled } });
    expect(after.status).toBe(403);

    // Revoking the key of this session signs out.
    const own = await makeApiKey(t.app, user, { name: 'short-lived' });
    const second = await open();
    await signIn(second.page, own);
    await second.page.goto(`${origin}/console/#/api-keys`);
    await second.page.getByRole('button', { name: `Revoke ${own.slice(0, 8)}` }).click();
    await second.page.getByRole('button', { name: 'Yes, revoke' }).click();
    await heading(second.page, 'Sign in to LicenseGate');
    expect(await second.page.evaluate(() => sessionStorage.length)).toBe(0);

    // Delete the project: back to the list, without it.
    await page.goto(base);
    await page.getByRole('button', { name: 'Delete project', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, delete project' }).click();
    await heading(page, 'Projects');
    await page
      .getByRole('table', { name: 'Your projects' })
      .or(page.getByText('No project yet: create one with New project below.'))
      .waitFor();
    expect(await page.getByRole('link', { name: 'Actions', exact: true }).count()).toBe(0);
  }, 120_000);

  it('payment connectors, keyboard only: create, copy the endpoint URL, a signed event in the log', async () => {
    const project = await makeProject(t, key, { name: 'Payments', has_paid: false });
    await makeDomain(t, key, project.id as number, { domain: 'shop.example.com', has_paid: false });
    const { page } = await open(true);
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/connectors`);
    await heading(page, /Payments · Payment connectors/);
    await page.getByText('No connector yet.').waitFor();
    // The test app has no PUBLIC_URL: no provider could reach the endpoint URLs, and the tab says so.
    await page
      .getByRole('heading', { name: 'No payment provider can reach these endpoint URLs yet' })
      .waitFor();
    expect(await page.locator('.warning').textContent()).toMatch(
      /They start with http:\/\/localhost:\d+, this server’s own address: PUBLIC_URL is not set\./,
    );
    // The license template shows only for a connector that issues licenses, and without a pinned domain.
    const template = page.getByRole('group', { name: /License template/ });
    expect(await template.count()).toBe(0);
    await page.getByLabel('Issue licenses').check();
    await template.waitFor();
    expect(await template.getByLabel('Max domains').count()).toBe(1);
    expect(await template.getByLabel('Pinned to domain').count()).toBe(0);
    await page.getByLabel('Issue licenses').uncheck();
    expect(await template.count()).toBe(0);

    const secret = `whsec_${Buffer.from('console-test-secret-of-32-bytes!').toString('base64')}`;
    await tabTo(page, page.getByLabel('Provider'));
    // A closed select takes typed letters: "St" picks Standard Webhooks, past Stripe.
    await page.keyboard.type('Standard');
    expect(await page.getByLabel('Provider').inputValue()).toBe('standard');
    await tabTo(page, page.getByLabel('Signing secret'));
    await page.keyboard.type(secret);
    await tabTo(page, page.getByLabel('Name', { exact: true }));
    await page.keyboard.type('Standard live');
    await tabTo(page, page.getByRole('button', { name: 'Create connector' }));
    await page.keyboard.press('Enter');
    await page.getByText(/^Connector Standard live created/).waitFor();
    // The secret does not stay on the page.
    expect(await page.getByLabel('Signing secret').inputValue()).toBe('');
    expect(await page.content()).not.toContain(secret);
    const url = page.getByRole('textbox', { name: 'Endpoint URL of Standard live' });
    const endpoint = await url.inputValue();
    expect(endpoint).toMatch(/\/api\/v1\/payments\/standard\/[\w-]+$/);

    await tabTo(page, page.getByRole('button', { name: 'Copy endpoint URL of Standard live' }));
    await page.keyboard.press('Enter');
    await waitText(
      page
        .getByRole('row', { name: /^Standard live/ })
        .locator('.copy')
        .getByRole('status'),
      'Copied',
    );
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(endpoint);
    await axe(page, 'payment connectors');
    await keyboardReachable(page, 'payment connectors');

    // The provider sends a signed event (Standard Webhooks) to the URL's path on this service.
    const made = { endpoint_url: endpoint, secret };
    expect(await sendPayment(made, 'payment.succeeded', 'msg_console_1')).toMatchObject({
      outcome: 'applied',
    });
    await tabTo(page, page.getByRole('button', { name: 'Events of Standard live' }));
    await page.keyboard.press('Enter');
    const event = page
      .getByRole('table', { name: /Events received by Standard live/ })
      .getByRole('row')
      .nth(1);
    await event.waitFor();
    const cells = await event.getByRole('cell').allTextContents();
    expect([await event.getByRole('rowheader').textContent(), ...cells.slice(0, 2)]).toEqual([
      'msg_console_1',
      'payment.succeeded',
      'applied',
    ]);
    // The target by name, linked to where it is managed.
    await waitText(event.getByRole('cell').nth(2), 'domain shop.example.com');
    expect(await event.getByRole('link', { name: 'shop.example.com' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/domains`,
    );
    // The event's payload, as stored: personal data redacted, opened from its disclosure.
    const disclosure = event.getByText('Show payload');
    await tabTo(page, event.locator('summary'));
    await page.keyboard.press('Enter');
    const payload = event.locator('details.payload pre');
    await payload.waitFor();
    expect(JSON.parse((await payload.textContent()) ?? '')).toMatchObject({
      type: 'payment.succeeded',
      data: { reference: 'ord_1001', customer_email: '[redacted]' },
    });
    expect(await disclosure.isVisible()).toBe(true);
    await axe(page, 'payment connectors, event payload');
    await event.locator('summary').click();
    // More events than a page: the log goes on with "Show more".
    for (let i = 2; i <= 51; i++) await sendPayment(made, 'invoice.created', `msg_console_${i}`);
    await page.getByRole('button', { name: 'Refresh events' }).click();
    const events = page.getByRole('table', { name: /Events received by Standard live/ }).locator('tbody tr');
    await page.getByRole('rowheader', { name: 'msg_console_51' }).waitFor();
    expect(await events.count()).toBe(50);
    await page.getByRole('button', { name: 'Show more events' }).click();
    await page.getByRole('rowheader', { name: 'msg_console_1', exact: true }).waitFor();
    expect(await events.count()).toBe(51);
    // A test event: signed with the connector's own secret, through its own endpoint; it moves nothing.
    await tabTo(page, page.getByRole('button', { name: 'Send a test event to Standard live' }));
    await page.keyboard.press('Enter');
    const said = page.locator('.test-event [role="status"]');
    await page.waitForFunction(() => !!document.querySelector('.test-event [role="status"]')?.textContent);
    expect(await said.textContent()).toMatch(
      /^Test event \S+ \(\S+\): the endpoint answered 200, ignored\. /,
    );
    const sentId = /^Test event (\S+)/.exec((await said.textContent()) ?? '')?.[1] ?? '';
    const sentRow = page.getByRole('row', {
      name: new RegExp(`^${sentId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    });
    await sentRow.waitFor();
    expect(await sentRow.getByRole('cell').nth(1).textContent()).toBe('ignored');
    await axe(page, 'payment connectors, event log');
    await shot(page, 'connectors');

    // Without the clipboard API, the URL field is the way: it selects itself on focus.
    await page.evaluate(() => Object.defineProperty(navigator, 'clipboard', { value: undefined }));
    await page.getByRole('button', { name: 'Copy endpoint URL of Standard live' }).click();
    await waitText(
      page
        .getByRole('row', { name: /^Standard live/ })
        .locator('.copy')
        .getByRole('status'),
      'Copy it from the field: select it and press Ctrl+C (Cmd+C).',
    );
    await url.focus();
    expect(
      await url.evaluate((el: HTMLInputElement) =>
        el.value.slice(el.selectionStart ?? 0, el.selectionEnd ?? 0),
      ),
    ).toBe(endpoint);

    // Edit (a 422 beside its field, then saved), then delete.
    await page.getByRole('button', { name: 'Edit Standard live' }).click();
    const edit = page.getByRole('form', { name: 'Edit connector Standard live' });
    // The keyboard is taken to the form that opened below the list.
    await edit.getByLabel('Provider').and(page.locator(':focus')).waitFor({ timeout: 5000 });
    // The provider is shown, not offered: a connector keeps its own.
    expect(
      await edit.getByLabel('Provider').evaluate((el) => [el.tagName, (el as HTMLInputElement).readOnly]),
    ).toEqual(['INPUT', true]);
    expect(await edit.getByLabel('Provider').inputValue()).toBe('Standard Webhooks');
    await edit.getByLabel('Grace days').fill('91');
    await edit.getByRole('button', { name: 'Save connector' }).click();
    await waitText(edit.locator('.field-error'), 'The grace days field must not be greater than 90.');
    await edit.getByLabel('Grace days').fill('7');
    await edit.getByLabel('Issue licenses').check();
    await edit.getByLabel('Max domains').fill('2');
    await edit.getByRole('button', { name: 'Save connector' }).click();
    await page.getByText('Connector Standard live saved.').waitFor();
    const row = page.getByRole('row', { name: /^Standard live/ });
    await waitText(row.getByRole('cell').nth(2), '7');
    const stored = await t
      .http()
      .get(`/api/v1/project/${project.id}/payment-connectors`)
      .set('X-API-KEY', key);
    expect(stored.body.data.data[0]).toMatchObject({
      grace_days: 7,
      issue_licenses: true,
      license_template: { max_domains: 2 },
    });
    await row.getByRole('button', { name: 'Delete Standard live' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('No connector yet.').waitFor();
  }, 120_000);

  it('payment connectors: products (422 beside the field, then saved), email matching, a stale event', async () => {
    const project = await makeProject(t, key, { name: 'Catalogue', has_paid: false });
    await makeDomain(t, key, project.id as number, { domain: 'catalogue.example.com', has_paid: false });
    const connector = await makeConnector(t, key, project.id as number, 'standard', {
      name: 'Catalogue live',
    });
    // A purchase, then an event older than the one applied to it: stale, it changes nothing.
    const metadata = { licensegate_domain: 'catalogue.example.com' };
    expect(await sendPayment(connector, 'payment.succeeded', 'msg_catalogue_1', metadata)).toMatchObject({
      outcome: 'applied',
    });
    expect(
      await sendPayment(connector, 'payment.failed', 'msg_catalogue_2', metadata, '2026-01-15T11:00:00Z'),
    ).toMatchObject({ outcome: 'stale' });
    const purchases = await t.http().get(`/api/v1/project/${project.id}/subscriptions`).set('X-API-KEY', key);
    const purchase = purchases.body.data.data[0].id as number;

    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/connectors`);
    await heading(page, /Catalogue · Payment connectors/);
    const every =
      'Every product of this provider account is accepted: list your products to accept only them.';
    // No product listed: the connector accepts every product, and its row says so.
    const row = page.getByRole('row', { name: /^Catalogue live/ });
    await waitText(row.getByRole('cell').nth(4), every);
    // The new connector's form says so too; for Lemon Squeezy and Paddle, that the buyer writes custom data.
    const add = page.getByRole('form', { name: 'Add a payment connector' });
    expect(await add.getByLabel('Match customers by email').isChecked()).toBe(false);
    await waitText(add.locator('p.hint'), every);
    await add.getByLabel('Provider').selectOption('lemonsqueezy');
    expect(await add.locator('p.hint').textContent()).toContain(
      'Lemon Squeezy checkout custom data is written by the buyer',
    );
    await add.getByLabel('Products').fill('variant_1');
    expect(await add.locator('p.hint').count()).toBe(0);

    // The event log: the stale event has its own label, and its purchase links to the purchase's page.
    await row.getByRole('button', { name: 'Events of Catalogue live' }).click();
    const stale = page.getByRole('row', { name: /^msg_catalogue_2/ });
    await stale.waitFor();
    expect(await stale.getByRole('cell').nth(1).textContent()).toBe(
      'stale: older than an event already applied',
    );
    const link = stale.getByRole('link', { name: `purchase #${purchase}` });
    expect(await link.getAttribute('href')).toBe(`#/projects/${project.id}/subscriptions/${purchase}`);
    const applied = page.getByRole('row', { name: /^msg_catalogue_1/ });
    expect(await applied.getByRole('cell').nth(1).textContent()).toBe('applied');
    await axe(page, 'payment connectors, a stale event');

    // Products edited: a bad entry (a plan code over 64 characters) is the API's 422 beside the field.
    await row.getByRole('button', { name: 'Edit Catalogue live' }).click();
    const edit = page.getByRole('form', { name: 'Edit connector Catalogue live' });
    await waitText(edit.locator('p.hint'), every);
    await edit.getByLabel('Products').fill(`price_1QdH6s\nprod_RkQ3x9 ${'p'.repeat(65)}`);
    await edit.getByRole('button', { name: 'Save connector' }).click();
    await waitText(
      edit.locator('.field-error'),
      'The products field must be a list of at most 200 product ids (strings of 1 to 255 characters) or {id, plan} objects.',
    );
    expect(await edit.getByLabel('Products').getAttribute('aria-invalid')).toBe('true');
    await axe(page, 'payment connectors, products refused');
    await edit.getByLabel('Products').fill('price_1QdH6s\n\n  prod_RkQ3x9  \n');
    await edit.getByLabel('Match customers by email').check();
    await edit.getByRole('button', { name: 'Save connector' }).click();
    await page.getByText('Connector Catalogue live saved.').waitFor();
    await waitText(row.getByRole('cell').nth(4), 'price_1QdH6sprod_RkQ3x9Matches customers by email.');
    const stored = await t
      .http()
      .get(`/api/v1/project/${project.id}/payment-connectors/${connector.id}`)
      .set('X-API-KEY', key);
    expect(stored.body.data).toMatchObject({
      products: ['price_1QdH6s', 'prod_RkQ3x9'],
      match_customers_by_email: true,
    });
    // Opened again, the form has the list, one a line.
    await row.getByRole('button', { name: 'Edit Catalogue live' }).click();
    expect(await edit.getByLabel('Products').inputValue()).toBe('price_1QdH6s\nprod_RkQ3x9');
    expect(await edit.getByLabel('Match customers by email').isChecked()).toBe(true);
    expect(await edit.locator('p.hint').count()).toBe(0);
    await axe(page, 'payment connectors, products');

    // The purchase link opens the purchase's page.
    await link.click();
    await heading(page, /ord_1001/);
  }, 120_000);

  it('analytics: refusals by reason, top domains and countries, the last 24 hours by hour', async () => {
    const { project, domain, license } = await seed('Storefront');
    const unpaid = await makeDomain(t, key, project.id as number, {
      domain: `unpaid.${project.slug as string}.example.com`,
      has_paid: false,
    });
    // With seed's check: 6 paid and 2 unpaid checks answered, and a refusal.
    for (const [host, country] of [
      [domain.domain as string, 'DE'],
      [domain.domain as string, 'FR'],
      [domain.domain as string, 'NL'],
      [domain.domain as string, 'NL'],
      [domain.domain as string, 'NL'],
      [unpaid.domain as string, 'NL'],
      [unpaid.domain as string, 'NL'],
      ['elsewhere.example.net', 'DE'],
    ]) {
      await fetch(`${origin}/api/v1/project/has-paid`, {
        method: 'POST',
        headers: {
          'X-LICENSE-KEY': license.uuid as string,
          'X-Service-Domain': host,
          'CF-IPCountry': country,
        },
      });
    }
    await t.app.get(AnalyticsCounts).flush();
    await Promise.all([t.app.get(UsageFlush).flush(), t.app.get(Activations).flush()]);
    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/analytics`);
    await waitText(page.getByTestId('total-paid'), '6');
    await waitText(page.getByTestId('total-unpaid'), '2');
    await waitText(page.getByTestId('total-refused'), '1');
    const rows = async (name: string) =>
      (await page.getByRole('table', { name }).getByRole('row').allTextContents()).slice(1);
    expect(await rows('Refusals by reason')).toEqual(['domain_unregistered1']);
    // The refusal names no registered domain (docs/analytics.md).
    expect(await rows('Top domains')).toEqual([
      `${domain.domain as string}6`,
      `${unpaid.domain as string}2`,
      'no registered domain1',
    ]);
    const countries = await rows('Top countries');
    expect(countries.slice(0, 2)).toEqual(['NL5', 'DE2']);
    expect(countries.slice(2).sort()).toEqual(['FR1', 'unknown country1']);
    // By license: the checks that passed (the refusal is not one), from the per-license daily counts,
    // split in words into those answered paid and unpaid.
    await page.getByRole('heading', { name: 'Top licenses: checks answered, paid and unpaid' }).waitFor();
    const licenses = page.getByRole('table', { name: 'Top licenses' });
    expect(await licenses.getByRole('columnheader').allTextContents()).toEqual([
      'License',
      'Checks answered',
    ]);
    expect(await rows('Top licenses')).toEqual([`${license.title as string}6 paid + 2 unpaid = 8 answered`]);
    expect(await licenses.getByRole('cell').allTextContents()).toEqual(['6 paid + 2 unpaid = 8 answered']);
    await page.getByRole('img', { name: /^Refusals by reason/ }).waitFor();
    await page.getByRole('img', { name: /^Top licenses/ }).waitFor();
    await axe(page, 'analytics of a project');
    await keyboardReachable(page, 'analytics of a project');
    await shot(page, 'analytics');
    // A license in the ranking is a link to its page.
    await page.getByRole('table', { name: 'Top licenses' }).getByRole('link').click();
    await heading(page, `License ${license.title as string}`);
    await page.goBack();
    await waitText(page.getByTestId('total-paid'), '6');

    await page.getByLabel('Range', { exact: true }).selectOption({ label: 'Last 24 hours, by hour' });
    const chart = page.getByRole('img', { name: /^Answers per hour by outcome, last 24 hours, by hour/ });
    await chart.waitFor();
    await page.getByText('Answers per hour by outcome, last 24 hours, by hour: the numbers').click();
    const hours = page.locator('details table tbody tr');
    expect(await hours.count()).toBe(24);
    const counts = await hours.locator('td').allTextContents();
    expect(counts.map(Number).reduce((a, b) => a + b, 0)).toBe(9);
    // Licenses are counted by day: by the hour they are not asked for (the API would answer 422).
    await page.getByText('Licenses are counted by day: choose the last 7 days to see them.').waitFor();
    expect(await page.getByRole('table', { name: 'Top licenses' }).count()).toBe(0);
    expect(requests.filter((url) => /group_by=license/.test(url) && /granularity=hour/.test(url))).toEqual(
      [],
    );
    await axe(page, 'analytics by hour');
  }, 60_000);

  /** The text of a fact of the page (`<dt>name</dt><dd>…</dd>`). */
  const fact = (page: Page, name: string) => page.locator(`dt:text-is("${name}") + dd`).textContent();
  const GRACE = /^yes, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(payment grace\)$/;

  /** The error shown beside a field: the element its aria-describedby names last. */
  async function besideField(page: Page, field: Locator): Promise<string | null> {
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    const described = (await field.getAttribute('aria-describedby')) ?? '';
    return page.locator(`[id="${described.split(' ').pop()}"]`).textContent();
  }

  it("domains, keyboard only: rename one (a taken name's 422 beside its field), its payment grace kept; a license from an order", async () => {
    const project = await makeProject(t, key, { name: 'Domains edit' });
    await makeDomain(t, key, project.id as number, { domain: 'shop.example.com', has_paid: true });
    await makeDomain(t, key, project.id as number, { domain: 'taken.example.com' });
    // A connector that moves the domain its events' metadata names; another that issues a license per
    // order (its events move that license, never a domain).
    const connector = await makeConnector(t, key, project.id as number, 'standard', {
      name: 'Domain payments',
      grace_days: 3,
    });
    const orders = await makeConnector(t, key, project.id as number, 'standard', {
      name: 'Orders',
      grace_days: 3,
      issue_licenses: true,
    });
    // Paid, then the payment failed: the domain in grace, and the order's license in grace.
    for (const c of [connector, orders]) {
      expect(await sendPayment(c, 'payment.succeeded', `msg_domains_1_${c.id}`)).toMatchObject({
        outcome: 'applied',
      });
      expect(await sendPayment(c, 'payment.failed', `msg_domains_2_${c.id}`)).toMatchObject({
        outcome: 'applied',
      });
    }
    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/domains`);
    const paidCell = (name: string) =>
      page
        .getByRole('row', { name: new RegExp(`^${name.replace(/\./g, '\\.')}`) })
        .getByRole('cell')
        .first();
    await page.getByRole('rowheader', { name: 'shop.example.com' }).waitFor();
    expect(await paidCell('shop.example.com').textContent()).toMatch(GRACE);

    // Cancel closes the form and changes nothing.
    await page.getByRole('button', { name: 'Edit taken.example.com' }).click();
    await page.getByRole('button', { name: 'Cancel editing' }).click();
    expect(await page.getByRole('form', { name: /^Edit domain/ }).count()).toBe(0);

    await tabTo(page, page.getByRole('button', { name: 'Edit shop.example.com' }));
    await page.keyboard.press('Enter');
    const edit = page.getByRole('form', { name: 'Edit domain shop.example.com' });
    const name = edit.getByLabel('Domain name');
    // The keyboard is taken to the form that opened below the list.
    await name.and(page.locator(':focus')).waitFor({ timeout: 5000 });
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('taken.example.com');
    await page.keyboard.press('Enter');
    await waitText(edit.getByRole('alert'), 'The domain has already been taken.');
    expect(await besideField(page, name)).toBe('The domain has already been taken.');
    await axe(page, 'domains, editing, with a field error');
    await keyboardReachable(page, 'domains, editing');
    await shot(page, 'domains-edit');
    await tabTo(page, name, true);
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('Store.Example.COM.');
    await page.keyboard.press('Enter');
    await page.getByText('Domain store.example.com saved.').waitFor();
    expect(await edit.count()).toBe(0);
    await page.getByRole('rowheader', { name: 'store.example.com' }).waitFor();
    // The rename sent no has_paid: the payment grace runs on.
    expect(await paidCell('store.example.com').textContent()).toMatch(GRACE);
    const domains = await t.http().get(`/api/v1/project/${project.id}/domains`).set('X-API-KEY', key);
    expect(
      (domains.body.data.data as { domain: string; has_paid: boolean; grace_until: string | null }[]).map(
        (d) => [d.domain, d.has_paid, d.grace_until !== null],
      ),
    ).toEqual(
      expect.arrayContaining([
        ['store.example.com', true, true],
        ['taken.example.com', false, false],
      ]),
    );

    // The order's license: what it was issued for, and its grace.
    const licenses = await t.http().get(`/api/v1/project/${project.id}/licenses`).set('X-API-KEY', key);
    const issued = (licenses.body.data.data as { id: number; title: string }[])[0];
    await page.goto(`${origin}/console/#/projects/${project.id}/licenses/${issued.id}`);
    await heading(page, `License ${issued.title}`);
    await page
      .getByText(
        /^The payment of this license stopped: it answers paid until .+ UTC, then unpaid unless paid again\.$/,
      )
      .waitFor();
    expect(await fact(page, 'From a payment')).toBe('standard order or subscription ord_1001');
    expect(await fact(page, 'Payment grace')).toMatch(/^paid until .+ UTC, then unpaid unless paid again$/);
    await axe(page, 'license from an order, in grace');
  }, 60_000);

  it('plans: added with entitlements checked beside the field, edited; a license put on one, its meters shown', async () => {
    const project = await makeProject(t, key, { name: 'Plans', has_paid: true });
    const domain = await makeDomain(t, key, project.id as number, {
      domain: 'plans.example.com',
      has_paid: true,
    });
    const license = await makeLicense(t, key, project.id as number, { title: 'Plans license' });
    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/plans`);
    await heading(page, /Plans/);
    await page.getByText('No plan yet.').waitFor();
    const add = page.getByRole('form', { name: 'Add a plan' });
    await add.getByLabel('Code').fill('pro');
    await add.getByLabel('Name').fill('Pro');
    const entitlements = add.getByLabel('Entitlements');
    await entitlements.fill('sso = true\nSeats = 5');
    await add.getByRole('button', { name: 'Add plan' }).click();
    const keyMessage =
      'The entitlements key "Seats" must be 1 to 64 lowercase letters, digits, "_", "." or "-", starting with a letter or digit.';
    await waitText(add.getByRole('alert'), keyMessage);
    expect(await besideField(page, entitlements)).toBe(keyMessage);
    await axe(page, 'plans, with a field error');
    await entitlements.fill('sso = true\nseats = 5\nmeter.ai_credits = 1000');
    await add.getByRole('button', { name: 'Add plan' }).click();
    await page.getByText('Plan pro added.').waitFor();
    await page.getByRole('rowheader', { name: 'pro' }).waitFor();
    await keyboardReachable(page, 'plans');
    await axe(page, 'plans');
    await shot(page, 'plans');
    // The API's 409 shows too.
    await add.getByLabel('Code').fill('pro');
    await add.getByLabel('Name').fill('Again');
    await add.getByRole('button', { name: 'Add plan' }).click();
    await waitText(
      add.getByRole('alert'),
      'The code "pro" is already taken by another plan of this project.',
    );
    // The keyboard is in the form's first field in the task that draws the form, before the browser
    // takes another key: a focus moved after paint (a frame later) used to land in the middle of the
    // typing below, "Pro+" went into the code, and the save was a 422.
    const focused = await page.getByRole('button', { name: 'Edit pro' }).evaluate(async (button) => {
      (button as HTMLButtonElement).click();
      await new Promise((resolve) => setTimeout(resolve, 0));
      const field = document.activeElement as HTMLInputElement | null;
      const form = field?.closest('form');
      return {
        form: document.getElementById(form?.getAttribute('aria-labelledby') ?? '')?.textContent,
        label: field?.labels?.[0]?.textContent,
      };
    });
    expect(focused).toEqual({ form: 'Edit plan pro', label: 'Code' });
    const edit = page.getByRole('form', { name: 'Edit plan pro' });
    expect(await edit.getByLabel('Name').inputValue()).toBe('Pro');
    await edit.getByLabel('Name').fill('Pro+');
    await edit.getByRole('button', { name: 'Save plan' }).click();
    await page.getByText('Plan pro saved.').waitFor();

    // The license: put on the plan, with an override; its effective entitlements and meters.
    await page.goto(`${origin}/console/#/projects/${project.id}/licenses/${license.id}`);
    await heading(page, 'License Plans license');
    const change = page.getByRole('form', { name: 'Change plan or entitlements' });
    await change.getByLabel('Plan', { exact: true }).selectOption({ label: 'Pro+ (pro)' });
    await change.getByLabel('Entitlement overrides').fill('seats = 9');
    await change.getByRole('button', { name: 'Save plan and entitlements' }).click();
    await page.getByText('Plan saved.').waitFor();
    await waitText(page.getByTestId('effective-entitlements'), 'sso: true, seats: 9, meter.ai_credits: 1000');
    expect(await fact(page, 'Plan')).toBe('Pro+ (pro)');
    const used = await fetch(`${origin}/api/v1/license/usage`, {
      method: 'POST',
      headers: {
        'X-LICENSE-KEY': license.uuid as string,
        'X-Service-Domain': domain.domain as string,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ meter: 'meter.ai_credits', amount: 12, idempotency_key: 'console-1' }),
    });
    expect(used.status).toBe(200);
    await page.getByRole('button', { name: 'Refresh usage' }).click();
    const meters = page.getByRole('table', { name: 'Meters this month (UTC)' });
    await meters.waitFor();
    const row = meters.getByRole('row', { name: /^meter\.ai_credits/ });
    await waitText(row.getByRole('cell').first(), '12');
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('1000');
    await axe(page, 'license on a plan, with meters');
    await keyboardReachable(page, 'license on a plan');
  }, 60_000);

  it('project settings: webhook events, metadata (a 422 beside its field), a payment grace a save keeps', async () => {
    const project = await makeProject(t, key, { name: 'Settings', has_paid: true });
    const connector = await makeConnector(t, key, project.id as number, 'standard', { grace_days: 3 });
    // No licensegate_domain: the project's own payment stopped.
    expect(await sendPayment(connector, 'payment.failed', 'msg_settings_1', null)).toMatchObject({
      outcome: 'applied',
    });
    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/settings`);
    await heading(page, /Settings/);
    await page
      .getByText(
        /^A payment of this project stopped: it stays paid until .+ UTC, then its gate closes unless it is paid again\.$/,
      )
      .waitFor();
    expect(await fact(page, 'Paid')).toMatch(GRACE);
    expect(await fact(page, 'Webhook events')).toBe('every event');

    // Keyboard only: two events instead of every one, and metadata that is not a JSON object.
    await tabTo(page, page.getByLabel('Every event'));
    await page.keyboard.press('Space');
    for (const event of ['license.created', 'license.revoked']) {
      await tabTo(page, page.getByLabel(event, { exact: true }));
      await page.keyboard.press('Space');
    }
    const meta = page.getByLabel('Metadata (JSON)');
    await tabTo(page, meta);
    await page.keyboard.type('["pro"]');
    await tabTo(page, page.getByRole('button', { name: 'Save project' }));
    await page.keyboard.press('Enter');
    await waitText(page.getByRole('alert'), 'The meta field must be a JSON object.');
    expect(await besideField(page, meta)).toBe('The meta field must be a JSON object.');
    await axe(page, 'project settings, with a field error');
    await keyboardReachable(page, 'project settings');

    await meta.fill('{"plan": "pro"}');
    await page.getByRole('button', { name: 'Save project' }).click();
    await page.getByText('Saved.').waitFor();
    await waitText(page.locator('dt:text-is("Webhook events") + dd'), 'license.created, license.revoked');
    const stored = await t.http().get(`/api/v1/project/${project.id}`).set('X-API-KEY', key);
    expect(stored.body.data).toMatchObject({
      meta: { plan: 'pro' },
      webhook_events: ['license.created', 'license.revoked'],
      webhook_enabled: true,
      // The save sent no has_paid: the payment grace runs on.
      has_paid: true,
      grace_until: expect.any(String),
    });

    // Paused, then every event again; a manual change of Paid ends the grace.
    await page.getByLabel('Send webhook events').uncheck();
    await page.getByRole('button', { name: 'Save project' }).click();
    await waitText(
      page.locator('dt:text-is("Webhook events") + dd'),
      'paused (license.created, license.revoked)',
    );
    await page.getByLabel('Send webhook events').check();
    await page.getByLabel('Every event').check();
    await page.getByLabel('Paid', { exact: true }).uncheck();
    await page.getByRole('button', { name: 'Save project' }).click();
    await waitText(page.locator('dt:text-is("Webhook events") + dd'), 'every event');
    await waitText(page.locator('dt:text-is("Paid") + dd'), 'no');
    const after = await t.http().get(`/api/v1/project/${project.id}`).set('X-API-KEY', key);
    expect(after.body.data).toMatchObject({ webhook_events: ['*'], has_paid: false, grace_until: null });
  }, 60_000);

  it('a list longer than a page goes on with "Show more"', async () => {
    const project = await makeProject(t, key, { name: 'Many domains' });
    for (let i = 0; i < 52; i++)
      await makeDomain(t, key, project.id as number, { domain: `d${i}.many.example` });
    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/domains`);
    const rows = page.locator('main tbody tr');
    await page.getByRole('rowheader', { name: 'd0.many.example' }).waitFor();
    expect(await rows.count()).toBe(50);
    await tabTo(page, page.getByRole('button', { name: 'Show more domains' }));
    await page.keyboard.press('Enter');
    await page.getByRole('rowheader', { name: 'd51.many.example' }).waitFor();
    expect(await rows.count()).toBe(52);
    expect(await page.getByRole('button', { name: 'Show more domains' }).count()).toBe(0);
    // 52 domains made one by one: more than the default 30 s on two busy cores.
  }, 60_000);

  it('getting started: how to get a key, then a checklist ticked from what exists, gone after a first check', async () => {
    const fresh = await makeAccount(t.app);
    const { page } = await open();
    await heading(page, 'Sign in to LicenseGate');
    await page.getByText('No API key yet?').click();
    await page.getByText(/keys:create --email you@example.com/).waitFor();
    await axe(page, 'sign-in, key help open');
    // The favicon is the console's own asset: no request for /favicon.ico, and it is served.
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    expect(icon).toMatch(/^\.\/assets\/favicon-\w+\.svg$/);
    expect((await fetch(`${origin}/console/${icon?.slice(2)}`)).status).toBe(200);
    expect(requests).not.toContain(`${origin}/favicon.ico`);

    await signIn(page, fresh.key);
    await heading(page, 'Projects');
    const steps = page.getByRole('region', { name: 'Getting started' });
    await waitText(
      steps.locator('p').first(),
      '1 of 5 steps done. Each is ticked from what exists, so this list goes away once a first check has been answered.',
    );
    const state = async () =>
      (await steps.locator('li').allTextContents()).map((text) => /\((done|to do)\)/.exec(text)?.[1]);
    expect(await state()).toEqual(['done', 'to do', 'to do', 'to do', 'to do']);
    await axe(page, 'projects, getting started');
    await shot(page, 'getting-started');

    // Ticked from the API's state: a project, then a license, then a connector.
    const project = await makeProject(t, fresh.key, { name: 'First product' });
    await page.reload();
    await waitText(
      steps.locator('p').first(),
      '2 of 5 steps done. Each is ticked from what exists, so this list goes away once a first check has been answered.',
    );
    expect(await steps.getByRole('link', { name: 'Licenses' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/licenses`,
    );
    const license = await makeLicense(t, fresh.key, project.id as number, { title: 'First license' });
    await makeDomain(t, fresh.key, project.id as number, { domain: 'first.example.com' });
    await makeConnector(t, fresh.key, project.id as number, 'standard');
    await page.reload();
    await steps.waitFor();
    await page.waitForFunction(() =>
      document.querySelector('.onboarding p')?.textContent?.startsWith('4 of 5'),
    );
    expect(await state()).toEqual(['done', 'done', 'done', 'done', 'to do']);
    expect(await steps.getByRole('link', { name: 'The project’s analytics' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/analytics`,
    );

    // A first check answered (unpaid: the project is not paid): the checklist has done its work.
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': license.uuid as string, 'X-Service-Domain': 'first.example.com' },
    });
    expect(check.status).toBe(200);
    await t.app.get(AnalyticsCounts).flush();
    await page.reload();
    await page.getByRole('link', { name: 'First product' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Getting started' }).count()).toBe(0);
  }, 120_000);

  it('licenses: search by key prefix or title, filter by status, export the list as CSV (formulas defused)', async () => {
    const project = await makeProject(t, key, { name: 'Searchable', has_paid: true });
    const long = await makeDomain(t, key, project.id as number, {
      domain: 'customer1-shop.example.com',
      has_paid: true,
    });
    const pro = await makeLicense(t, key, project.id as number, { title: 'Alpha pro' });
    const formula = await makeLicense(t, key, project.id as number, {
      title: '=HYPERLINK("http://x.test","pro")',
    });
    const revoked = await makeLicense(t, key, project.id as number, { title: 'Beta basic' });
    const expired = await makeLicense(t, key, project.id as number, {
      title: 'Gamma',
      expires_at: '2099-01-01T00:00:00Z',
    });
    await t.http().post(`/api/v1/project/${project.id}/licenses/${revoked.id}/revoke`).set('X-API-KEY', key);
    await t.app
      .get(DataSource)
      .getRepository(LicenseEntity)
      .update(expired.id as number, {
        expires_at: new Date(Date.now() - 60_000),
      });
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': pro.uuid as string, 'X-Service-Domain': long.domain as string },
    });
    expect(check.status).toBe(200);

    const { page } = await open(true);
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/licenses`);
    await heading(page, /Searchable · Licenses/);
    const table = page.getByRole('table', { name: /Licenses of Searchable/ });
    const titles = () => table.getByRole('rowheader').allTextContents();
    await table.waitFor();
    await settles(() => titles(), ['Gamma', 'Beta basic', formula.title, 'Alpha pro']);

    const search = page.getByRole('search', { name: 'Search the licenses' });
    await search.getByLabel('Search').fill('PRO');
    await search.getByRole('button', { name: 'Search licenses' }).click();
    await page.getByRole('table', { name: 'Licenses of Searchable matching the search' }).waitFor();
    await settles(() => titles(), [formula.title, 'Alpha pro']);
    await axe(page, 'licenses, searched');
    await shot(page, 'licenses-search');

    await search.getByLabel('Search').fill((revoked.uuid as string).slice(0, 8));
    await search.getByRole('button', { name: 'Search licenses' }).click();
    await page.waitForFunction(() => document.querySelectorAll('main tbody tr').length === 1);
    await settles(() => titles(), ['Beta basic']);
    expect(await table.getByRole('row').nth(1).getByRole('cell').nth(1).textContent()).toMatch(/^revoked \(/);

    await search.getByRole('button', { name: 'Clear search' }).click();
    await search.getByLabel('Status').selectOption('expired');
    await search.getByRole('button', { name: 'Search licenses' }).click();
    // The cleared list starts with Gamma too: wait for the filtered one, Gamma alone.
    await page.waitForFunction(() => document.querySelectorAll('main tbody tr').length === 1);
    await settles(() => titles(), ['Gamma']);
    await search.getByLabel('Status').selectOption('revoked');
    await search.getByLabel('Search').fill('nothing like it');
    await search.getByRole('button', { name: 'Search licenses' }).click();
    await page.getByText('No license matches the search.').waitFor();

    // The whole list as CSV: every license, the formula written as text.
    await search.getByRole('button', { name: 'Clear search' }).click();
    await table.waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export all licenses as CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`licenses-${project.slug}.csv`);
    const csv = readFileSync(await download.path(), 'utf8');
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe(
      'id,title,key,status,domain_id,expires_at,max_domains,max_subdomains_per_domain,max_usage_per_day,allowed_ips,allowed_countries,is_test_license,allow_configs,revoked_at,payment_provider,payment_reference,grace_until,created_at,updated_at',
    );
    expect(lines).toHaveLength(6); // the header, four licenses, the final line break
    expect(
      lines[3].startsWith(`${formula.id},"'=HYPERLINK(""http://x.test"",""pro"")",${formula.uuid},active,`),
    ).toBe(true);
    expect(lines.slice(1, 5).map((line) => line.split(',')[0])).toEqual(
      [expired.id, revoked.id, formula.id, pro.id].map(String),
    );
    expect(lines[1]).toContain(`,${expired.uuid},expired,`);
    expect(lines[2]).toContain(`,${revoked.uuid},revoked,`);
    await page.getByText('Exported 4 licenses as CSV.').waitFor();

    // A license's page keeps the project's tabs and name; its key has a copy button; no usage yet says so.
    await page.getByRole('link', { name: 'Gamma' }).click();
    await heading(page, 'License Gamma · Searchable');
    expect(
      await page
        .getByRole('navigation', { name: 'Project' })
        .getByRole('link', { name: 'Licenses' })
        .getAttribute('aria-current'),
    ).toBe('location');
    await page.getByRole('button', { name: 'Copy key' }).click();
    await waitText(page.locator('dd .copy [role="status"]'), 'Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(expired.uuid);
    await page.getByText('No check in the last 30 days.', { exact: false }).waitFor();
    await axe(page, 'license without usage');

    // The audit log names what it shows, linked; the analytics cut long names but keep them whole in a title.
    await page.goto(`${origin}/console/#/projects/${project.id}/audit`);
    const revokedRow = page.getByRole('row', { name: /^.*license\.revoked/ });
    await revokedRow.getByRole('link', { name: 'Beta basic' }).waitFor();
    expect(await revokedRow.getByRole('link', { name: 'Beta basic' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/licenses/${revoked.id}`,
    );
    expect(await revokedRow.getByRole('link', { name: 'Searchable' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/settings`,
    );
    await axe(page, 'project audit log with names');
    await t.app.get(AnalyticsCounts).flush();
    await Promise.all([t.app.get(UsageFlush).flush(), t.app.get(Activations).flush()]);
    await page.goto(`${origin}/console/#/projects/${project.id}/analytics`);
    const domains = page.getByRole('img', { name: /^Top domains/ });
    await domains.waitFor();
    await settles(() => domains.locator('text title').allTextContents(), ['customer1-shop.example.com']);
    // What is drawn is cut (the text node after the title).
    expect(
      await domains
        .locator('text')
        .first()
        .evaluate((el) => el.lastChild?.textContent),
    ).toBe('customer1-shop.exampl…');
    expect(await page.getByRole('link', { name: 'customer1-shop.example.com' }).getAttribute('title')).toBe(
      'customer1-shop.example.com',
    );
    await page.getByRole('heading', { name: 'Top licenses: checks answered' }).waitFor();
    await page
      .getByText(
        /each bar split into the checks answered paid and those answered unpaid\. Refused checks are not counted here\./,
      )
      .waitFor();
  }, 120_000);

  it('customers and subscriptions: search by email, one customer with their licenses and purchases, edit, create; purchases by status, one with its events', async () => {
    const project = await makeProject(t, key, { name: 'Many buyers' });
    const ada = expectCreated(
      await t
        .http()
        .post(`/api/v1/project/${project.id}/customers`)
        .set('X-API-KEY', key)
        .send({ email: 'Ada@Example.com', name: 'Ada' }),
    );
    expectCreated(
      await t
        .http()
        .post(`/api/v1/project/${project.id}/customers`)
        .set('X-API-KEY', key)
        .send({ email: 'bob@example.com' }),
    );
    const license = await makeLicense(t, key, project.id as number, { title: 'Ada theme license' });
    const ds = t.app.get(DataSource);
    await ds.getRepository(LicenseEntity).update(license.id as number, { customer_id: ada.id as number });
    const connector = await makeConnector(t, key, project.id as number, 'stripe', { name: 'Stripe live' });
    const subscriptions = ds.getRepository(SubscriptionEntity);
    const base = { project_id: project.id as number, connector_id: connector.id, provider: 'stripe' };
    const active = await subscriptions.insert({
      ...base,
      kind: 'subscription',
      reference: 'sub_ada_theme',
      status: 'active',
      customer_id: ada.id as number,
      license_id: license.id as number,
      target_kind: 'license',
      target_id: license.id as number,
      product_ids: ['price_theme'],
      last_event_at: new Date('2026-11-27T08:00:00Z'),
      last_event_type: 'invoice.paid',
    });
    const activeId = active.identifiers[0].id as number;
    await subscriptions.insert({
      ...base,
      kind: 'order',
      reference: 'cs_test_sticker',
      status: 'canceled',
      customer_id: null,
    });
    await ds.getRepository(PaymentEventEntity).insert(
      ['checkout.session.completed', 'invoice.paid'].map((type, i) => ({
        connector_id: connector.id,
        project_id: project.id as number,
        provider_event_id: `evt_ada_${i}`,
        type,
        outcome: 'applied' as const,
        target_kind: 'license' as const,
        target_id: license.id as number,
        detail: 'The license is paid.',
        subscription_id: activeId,
        received_at: new Date('2026-11-27T08:00:00Z'),
      })),
    );

    const { page } = await open();
    await signIn(page, key);
    await page.goto(`${origin}/console/#/projects/${project.id}/customers`);
    await heading(page, /Many buyers · Customers/);
    const table = page.getByRole('table', { name: /Customers of Many buyers/ });
    await table.waitFor();
    await settles(
      () => table.getByRole('rowheader').allTextContents(),
      ['bob@example.com', 'ada@example.com'],
    );
    await axe(page, 'customers');

    const search = page.getByRole('search', { name: 'Search the customers' });
    await search.getByLabel('Email').fill('ADA@example.COM');
    await search.getByRole('button', { name: 'Search customers' }).click();
    await page.getByRole('table', { name: 'Customers of Many buyers matching the search' }).waitFor();
    await settles(() => page.locator('main tbody th').allTextContents(), ['ada@example.com']);
    await axe(page, 'customers, searched');

    await page.getByRole('link', { name: 'ada@example.com' }).click();
    await heading(page, 'Customer Ada <ada@example.com> · Many buyers');
    expect(
      await page
        .getByRole('navigation', { name: 'Project' })
        .getByRole('link', { name: 'Customers' })
        .getAttribute('aria-current'),
    ).toBe('location');
    const theirLicenses = page.getByRole('table', { name: /Licenses of ada@example.com/ });
    expect(await theirLicenses.getByRole('link', { name: 'Ada theme license' }).getAttribute('href')).toBe(
      `#/projects/${project.id}/licenses/${license.id}`,
    );
    const theirPurchases = page.getByRole('table', { name: /Subscriptions of ada@example.com/ });
    await theirPurchases.getByRole('link', { name: 'Stripe live' }).waitFor();
    await settles(
      () => theirPurchases.getByRole('rowheader').allTextContents(),
      ['sub_ada_theme (subscription)'],
    );
    await axe(page, 'customer');
    await shot(page, 'customer');

    // Edit: a bad email's 422 beside its field, then a name saved.
    const edit = page.getByRole('form', { name: 'Edit customer' });
    await edit.getByLabel('Email').fill('not an email');
    await edit.getByRole('button', { name: 'Save customer' }).click();
    await edit.locator('.field-error').getByText('The email field must be a valid email address.').waitFor();
    await edit.getByLabel('Email').fill('ada@example.com');
    await edit.getByLabel('Name').fill('Ada Lovelace');
    await edit.getByRole('button', { name: 'Save customer' }).click();
    await heading(page, 'Customer Ada Lovelace <ada@example.com> · Many buyers');
    // Their license still names them: deleting is refused, and the page says why.
    await page.getByRole('button', { name: 'Delete customer' }).click();
    await page.getByRole('button', { name: 'Yes, delete customer' }).click();
    await page
      .getByText('This customer has 1 license: delete it or give it another customer first.')
      .waitFor();

    // Create one from the list.
    await page.goto(`${origin}/console/#/projects/${project.id}/customers`);
    const create = page.getByRole('form', { name: 'New customer' });
    await create.getByLabel('Email').fill('carol@example.com');
    await create.getByRole('button', { name: 'Create customer' }).click();
    await heading(page, 'Customer carol@example.com · Many buyers');
    await page.getByText('No license of this customer.').waitFor();

    // Subscriptions: by status, then one with its events.
    await page.goto(`${origin}/console/#/projects/${project.id}/subscriptions`);
    await heading(page, /Many buyers · Subscriptions/);
    const purchases = page.getByRole('table', { name: /Subscriptions of Many buyers/ });
    await purchases.getByRole('link', { name: 'ada@example.com' }).waitFor();
    await settles(
      () => purchases.getByRole('rowheader').allTextContents(),
      ['cs_test_sticker (order)', 'sub_ada_theme (subscription)'],
    );
    await axe(page, 'subscriptions');
    await page.getByLabel('Status').selectOption('canceled');
    await page.getByRole('button', { name: 'Filter subscriptions' }).click();
    await page.getByRole('table', { name: 'Subscriptions of Many buyers, canceled, newest first' }).waitFor();
    await settles(() => page.locator('main tbody th').allTextContents(), ['cs_test_sticker (order)']);
    await page.getByLabel('Status').selectOption('active');
    await page.getByRole('button', { name: 'Filter subscriptions' }).click();
    await page.getByRole('link', { name: 'sub_ada_theme' }).click();
    await heading(page, 'Subscription sub_ada_theme · Many buyers');
    const history = page.getByRole('table', { name: /Events of sub_ada_theme/ });
    await settles(() => history.getByRole('rowheader').allTextContents(), ['evt_ada_1', 'evt_ada_0']);
    await page
      .locator('dt:text-is("License") + dd')
      .getByRole('link', { name: 'Ada theme license' })
      .waitFor();
    await axe(page, 'subscription');
    await shot(page, 'subscription');

    // A read-only key reads every one of these pages and is offered no write.
    const readOnly = await makeApiKey(t.app, user, { read_only: true, name: 'customers viewer' });
    const viewer = (await open()).page;
    await signIn(viewer, readOnly);
    const seen: Record<string, string[]> = {};
    for (const [hash, ready] of [
      [`#/projects/${project.id}/customers`, 'table'],
      [`#/projects/${project.id}/customers/${ada.id as number}`, 'dl.facts'],
      [`#/projects/${project.id}/subscriptions`, 'table'],
      [`#/projects/${project.id}/subscriptions/${activeId}`, 'table.events'],
    ]) {
      await viewer.goto(`${origin}/console/${hash}`);
      await viewer.locator(`main ${ready}`).first().waitFor();
      seen[hash] = await writeControls(viewer);
      await axe(viewer, `${hash}, read-only`);
    }
    for (const [hash, controls] of Object.entries(seen))
      expect({ hash, controls }).toEqual({ hash, controls: [] });
  }, 120_000);

  it('a hash that changes before the console listens for it still opens its page', async () => {
    // A link opened at once after the page loads (a mail client, a test) can change the hash between
    // the first paint and the moment the console listens for `hashchange`: the page must still follow.
    const context = await browser.newContext();
    opened.push(context);
    await context.addInitScript(() => {
      const listen = window.addEventListener.bind(window);
      window.addEventListener = function (...args: Parameters<typeof listen>) {
        // The change no listener hears: as if it happened just before this registration.
        if (args[0] === 'hashchange') history.replaceState(null, '', '#/invitation/an-invitation-token');
        return listen(...args);
      } as typeof listen;
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${origin}/console/`);
    await page
      .getByRole('heading', { level: 1, name: 'Accept your invitation' })
      .waitFor({ timeout: 10_000 });
    expect(await page.getByRole('button', { name: 'Log in' }).count()).toBe(0);
  });

  /** Signs a person in with email and password on the sign-in page. */
  async function logIn(page: Page, email: string, password: string): Promise<void> {
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  it('a person signs in with a password; members: invite (the link shown once), accept, change a role, remove', async () => {
    const PASSWORD = 'correct horse battery';
    const owner = await makeUser(t.app, { email: `owner-${uniqueToken()}@example.test`, password: PASSWORD });
    const { page } = await open();
    await heading(page, 'Sign in to LicenseGate');
    await page.getByLabel('Email', { exact: true }).fill(owner.email);
    await page.getByLabel('Password', { exact: true }).fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await waitText(page.getByRole('alert'), 'The email or password is incorrect.');
    await logIn(page, owner.email, PASSWORD);
    await heading(page, 'Projects');
    await expect(page.locator('header').textContent()).resolves.toContain(`${owner.email} (owner)`);
    // The cookie is HttpOnly: nothing of the session is in the page's storage.
    expect(await page.evaluate(() => sessionStorage.length + document.cookie.length)).toBe(0);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    await heading(page, 'Members');
    await page.getByRole('rowheader', { name: `${owner.email} (you)` }).waitFor();
    await axe(page, 'members');
    const invitee = `invitee-${uniqueToken()}@example.test`;
    const form = page.getByRole('form', { name: 'Invite a person' });
    await form.getByLabel('Email').fill(invitee);
    await form.getByLabel('Role').selectOption('developer');
    await form.getByRole('button', { name: 'Create invitation' }).click();
    const url = (await page.getByTestId('invitation-url').textContent()) ?? '';
    expect(url).toMatch(/\/console\/#\/invitation\/[\w-]{43}$/);
    await axe(page, 'members, new invitation');
    await page.getByRole('button', { name: 'I have sent it' }).click();
    expect(await page.getByTestId('invitation-url').count()).toBe(0);
    await page
      .getByRole('table', { name: 'Open invitations' })
      .getByRole('rowheader', { name: invitee })
      .waitFor();

    // The invited person opens the link in a browser of their own and chooses a password.
    const joiner = await open();
    await joiner.page.goto(`${origin}/console/${url.slice(url.indexOf('#'))}`);
    await heading(joiner.page, 'Accept your invitation');
    await axe(joiner.page, 'accept an invitation');
    await joiner.page.getByLabel('Choose a password').fill(PASSWORD);
    await joiner.page.getByRole('button', { name: 'Accept the invitation' }).click();
    await heading(joiner.page, 'Projects');
    await expect(joiner.page.locator('header').textContent()).resolves.toContain(`${invitee} (developer)`);

    // The owner makes them a viewer: they then see no write control, and no member actions.
    await page.reload();
    await heading(page, 'Members');
    await page.getByLabel(`Role of ${invitee}`).selectOption('viewer');
    await page.getByRole('button', { name: `Save role of ${invitee}` }).click();
    await waitText(
      page
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: invitee }) })
        .getByRole('cell')
        .first(),
      'viewer',
    );
    await shot(page, 'members');
    await joiner.page.reload();
    await heading(joiner.page, 'Projects');
    expect(await writeControls(joiner.page)).toEqual([]);
    await joiner.page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Members' })
      .click();
    await heading(joiner.page, 'Members');
    await joiner.page.getByRole('rowheader', { name: `${invitee} (you)` }).waitFor();
    expect(await writeControls(joiner.page)).toEqual([]);
    expect(
      await joiner.page.getByRole('button', { name: /Save role|Remove|Create invitation/ }).count(),
    ).toBe(0);
    expect(await joiner.page.getByRole('link', { name: 'API keys' }).count()).toBe(0);
    await axe(joiner.page, 'members, viewer');

    await page.getByRole('button', { name: `Remove ${invitee}` }).click();
    await page.getByRole('button', { name: 'Yes, remove' }).click();
    await page.getByRole('rowheader', { name: invitee }).waitFor({ state: 'detached' });
    await joiner.page.reload();
    await heading(joiner.page, 'Sign in to LicenseGate');
  }, 120_000);

  /**
   * Single sign-on through a real OpenID provider (test/utils/oidc-provider.mjs) in the browser: the
   * console's button, the provider's login page, back to the console signed in. A service of its own:
   * the provider sends the browser back to PUBLIC_URL/console/, which must be that service's address.
   */
  describe('the first account', () => {
    // The shared app has users by now: this one runs on a database of its own, which has none.
    let fresh: TestApp;
    let freshOrigin: string;

    beforeAll(async () => {
      fresh = await createTestApp({ THROTTLE_API_LIMIT: '100000', WEBHOOK_DISPATCHER: 'false' });
      freshOrigin = new URL(fresh.url).origin;
      otherOrigins.push(freshOrigin);
    }, 120_000);

    afterAll(async () => {
      otherOrigins.splice(0);
      await fresh?.close();
    });

    it('the sign-in page says where the setup link is; the link makes the owner, signed in on Projects', async () => {
      const code = fresh.app.get(SetupService).pendingCode;
      expect(code).toMatch(/^[\w-]{43}$/);
      const { page } = await open(false, freshOrigin);
      await heading(page, 'Sign in to LicenseGate');
      await waitText(
        page.getByRole('status'),
        'No account exists yet. The link to create the first one is in the server’s output, the line that starts with “No account yet: open” (it changes at each start).',
      );
      await axe(page, 'sign-in, no account yet');

      // Another code: the API's words, and nothing made.
      await page.goto(`${freshOrigin}/console/#/setup/not-the-printed-code`);
      await heading(page, 'Create the first account');
      const email = `first-${uniqueToken()}@example.test`;
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.getByLabel('Choose a password').fill('correct horse battery');
      await page.getByRole('button', { name: 'Create the account' }).click();
      await waitText(page.getByRole('alert'), WRONG_SETUP_CODE);

      await page.goto(`${freshOrigin}/console/#/setup/${code}`);
      await heading(page, 'Create the first account');
      await axe(page, 'create the first account');
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.getByLabel('Choose a password').fill('too short');
      await page.getByRole('button', { name: 'Create the account' }).click();
      await waitText(page.getByRole('alert'), 'The password must be at least 12 characters.');
      await page.getByLabel('Choose a password').fill('correct horse battery');
      await page.getByRole('button', { name: 'Create the account' }).click();
      await heading(page, 'Projects');
      expect(new URL(page.url()).hash).toBe('#/');
      await expect(page.locator('header').textContent()).resolves.toContain(`${email} (owner)`);
      await page.getByRole('heading', { level: 2, name: 'Getting started' }).waitFor();
      await axe(page, 'projects after the first account');

      // Signed out: the sign-in page no longer speaks of a setup link.
      const asked = page.waitForResponse((res) => res.url() === `${freshOrigin}/api/v1/auth/setup`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await heading(page, 'Sign in to LicenseGate');
      expect(await (await asked).json()).toMatchObject({ data: { needed: false } });
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(done)));
      expect(await page.getByText('No account exists yet').count()).toBe(0);
    }, 120_000);
  });

  describe('single sign-on', () => {
    let sso: TestApp;
    let provider: TestProvider;
    let ssoOrigin: string;
    let ownerKey: string;

    beforeAll(async () => {
      provider = await startOidcProvider();
      const port = await freePort();
      ssoOrigin = `http://127.0.0.1:${port}`;
      await provider.register(`${ssoOrigin}/console/`);
      sso = await createTestApp(
        {
          ...provider.env,
          PUBLIC_URL: ssoOrigin,
          OIDC_ALLOWED_DOMAINS: 'allowed.test',
          OIDC_DEFAULT_ROLE: 'developer',
          THROTTLE_API_LIMIT: '100000',
        },
        { port },
      );
      // The first account: where an allowed domain's new people join.
      ({ key: ownerKey } = await makeAccount(sso.app));
      otherOrigins.push(ssoOrigin, provider.issuer);
    }, 120_000);

    afterAll(async () => {
      otherOrigins.splice(0);
      await sso?.close();
      await provider?.close();
    });

    /**
     * From the console's sign-in page to the provider's login page (its fields are required: both
     * filled, or the browser does not submit), then back at the console, which finishes the sign-in.
     */
    async function ssoSignIn(page: Page, email: string): Promise<void> {
      await page.getByRole('button', { name: 'Single sign-on (SSO)' }).click();
      await heading(page, 'Sign in to the test identity provider');
      expect(new URL(page.url()).origin).toBe(provider.issuer);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('any password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.origin === ssoOrigin);
    }

    it('an invited person signs in with SSO and sees what their role allows; next time without the login page', async () => {
      const email = `invited-${uniqueToken()}@example.test`;
      const invited = await sso
        .http()
        .post('/api/v1/members/invitations')
        .set('X-API-KEY', ownerKey)
        .send({ email, role: 'viewer' });
      expect(invited.status).toBe(201);
      const { page } = await open(false, ssoOrigin);
      await heading(page, 'Sign in to LicenseGate');
      await axe(page, 'sign-in with SSO');
      await ssoSignIn(page, email);
      await heading(page, 'Projects');
      await expect(page.locator('header').textContent()).resolves.toContain(`${email} (viewer)`);
      // The provider's code and state are taken out of the address bar.
      expect(new URL(page.url()).search).toBe('');
      expect(await writeControls(page)).toEqual([]);
      expect(
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).count(),
      ).toBe(0);
      await axe(page, 'signed in with SSO');

      // Signed out here, still signed in at the provider: SSO brings them straight back.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await heading(page, 'Sign in to LicenseGate');
      await page.getByRole('button', { name: 'Single sign-on (SSO)' }).click();
      await heading(page, 'Projects');
      await expect(page.locator('header').textContent()).resolves.toContain(`${email} (viewer)`);
    }, 120_000);

    it('a new person of an allowed domain joins with OIDC_DEFAULT_ROLE (developer)', async () => {
      const email = `new-${uniqueToken()}@allowed.test`;
      const { page } = await open(false, ssoOrigin);
      await ssoSignIn(page, email);
      await heading(page, 'Projects');
      await expect(page.locator('header').textContent()).resolves.toContain(`${email} (developer)`);
      await page.getByRole('button', { name: 'Create project' }).waitFor();
      // Keys and people are an admin's.
      expect(
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).count(),
      ).toBe(0);
    }, 120_000);

    it('a person with a password confirms it once to link SSO', async () => {
      const PASSWORD = 'correct horse battery';
      const member = await makeUser(sso.app, {
        email: `pw-${uniqueToken()}@example.test`,
        password: PASSWORD,
      });
      const { page } = await open(false, ssoOrigin);
      await ssoSignIn(page, member.email);
      await heading(page, 'Link single sign-on');
      await axe(page, 'link single sign-on');
      await page.getByLabel('Your password', { exact: true }).fill('not the password');
      await page.getByRole('button', { name: 'Link and continue' }).click();
      await waitText(page.getByRole('alert'), 'The email or password is incorrect.');
      await page.getByLabel('Your password', { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Link and continue' }).click();
      await heading(page, 'Projects');
      await expect(page.locator('header').textContent()).resolves.toContain(`${member.email} (`);
    }, 120_000);

    it('refuses an unknown email, and an unverified one, with the message on the sign-in page', async () => {
      const stranger = `stranger-${uniqueToken()}@elsewhere.test`;
      const { page } = await open(false, ssoOrigin);
      await ssoSignIn(page, stranger);
      await heading(page, 'Sign in to LicenseGate');
      await waitText(
        page.getByRole('alert'),
        `No member has the email ${stranger}, and its domain is not admitted: ask an owner or admin of your account for an invitation.`,
      );
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      await axe(page, 'SSO refused');

      const other = await open(false, ssoOrigin);
      await ssoSignIn(other.page, `unverified:someone-${uniqueToken()}@allowed.test`);
      await waitText(
        other.page.getByRole('alert'),
        'Your identity provider has not verified your email address (email_verified), so it cannot sign you in.',
      );
    }, 120_000);

    it('opened at another address than PUBLIC_URL (localhost for 127.0.0.1): says where SSO works, before the provider', async () => {
      // The sign-in's cookie would stay with localhost while the provider sends the browser to
      // 127.0.0.1, which would refuse the answer as another sign-in's after the whole round trip.
      const elsewhere = ssoOrigin.replace('127.0.0.1', 'localhost');
      otherOrigins.push(elsewhere);
      const { page } = await open(false, elsewhere);
      await page.getByRole('button', { name: 'Single sign-on (SSO)' }).click();
      await waitText(
        page.getByRole('alert'),
        `Single sign-on works from ${ssoOrigin}/console/ only, where your identity provider sends you back: open the console at that address (or set PUBLIC_URL to the one you use).`,
      );
      expect(new URL(page.url()).origin).toBe(elsewhere);
      expect(requests.filter((url) => url.startsWith(`${provider.issuer}/`))).toEqual([]);
      await axe(page, 'SSO from another address');
    }, 120_000);
  });

  it('the checks can fail: axe finds a missing label, CSP refuses another origin, requests are recorded', async () => {
    const { page } = await open();
    await page.evaluate(() => document.querySelector('main')?.appendChild(document.createElement('input')));
    await expect(axe(page, 'an unlabelled input')).rejects.toThrow(/label/);
    // connect-src 'self': the browser refuses a call to another origin, and says so.
    await page.evaluate(() => fetch('http://elsewhere.invalid/x').catch(() => undefined));
    expect(
      pageErrors.some((text) => /violates the following Content Security Policy directive/.test(text)),
    ).toBe(true);
    pageErrors = [];
    // A navigation is a request the CSP does not govern: the recorder sees it.
    await page.goto('http://elsewhere.invalid/').catch(() => undefined);
    expect(requests).toContain('http://elsewhere.invalid/');
    requests = requests.filter((url) => url !== 'http://elsewhere.invalid/');
  });

  it('first hour: from an empty account to a paid check in the analytics, with a test payment', async () => {
    const fresh = await makeAccount(t.app);
    const { page } = await open();
    // Where a key comes from: the CLI, with the server's own database settings.
    await page.getByText('No API key yet?').click();
    await page.getByText(/in the server's folder with the same environment as the server/).waitFor();
    await page.locator('.key-help code', { hasText: 'DATABASE_URL' }).waitFor();
    await signIn(page, fresh.key);
    await heading(page, 'Projects');
    await page.getByLabel('Name').fill('First Hour');
    await page.getByRole('button', { name: 'Create project', exact: true }).click();
    await heading(page, /First Hour/);
    const base = page.url().replace(/\/settings$/, '');
    const project = Number(/#\/projects\/(\d+)/.exec(base)?.[1]);

    await page.goto(`${base}/licenses`);
    await heading(page, /Licenses/);
    await page.getByLabel('Title').fill('Buyer license');
    await page.getByLabel('Billing').selectOption('license');
    await page.getByRole('button', { name: 'Create license' }).click();
    await heading(page, 'License Buyer license');
    const licenseUrl = page.url();
    const uuid = await page.getByLabel('License key').inputValue();
    const fact = (name: string) => page.locator(`dt:text-is("${name}") + dd`);
    await waitText(fact('Paid (its own flag)'), 'no');
    // The check a site makes, ready to copy: billed on its own, it answers from any site.
    const example = `curl -X POST ${origin}/api/v1/project/has-paid -H 'X-LICENSE-KEY: ${uuid}' -H 'X-Service-Domain: your-site.example'`;
    expect(await page.getByLabel('Example check').inputValue()).toBe(example);
    await page
      .getByText('Billed on its own: its own paid flag answers (now unpaid), from any site.')
      .waitFor();

    await page.goto(`${base}/connectors`);
    await heading(page, /Payment connectors/);
    await page.getByLabel('Provider').selectOption('stripe');
    await page.getByLabel('Signing secret').fill('whsec_first-hour-test-secret-0123');
    await page.getByLabel('Name').fill('Stripe test');
    await page.getByRole('button', { name: 'Create connector' }).click();
    // The control sits on the connector's row, beside its endpoint URL: no other panel to open.
    const row = page.getByRole('row', { name: /^Stripe test/ });
    await row.getByLabel('Test event for Stripe test').selectOption('license');
    await row.getByLabel('License to pay through Stripe test').waitFor();
    await settles(
      () => row.getByLabel('License to pay through Stripe test').locator('option').allTextContents(),
      ['Buyer license'],
    );
    await row.getByText('A test payment marks the license paid as a real payment would').waitFor();
    await axe(page, 'payment connectors, a test payment');
    await row.getByRole('button', { name: 'Send a test event to Stripe test' }).click();
    const said = row.locator('.test-event [role="status"]');
    await page.waitForFunction(() => !!document.querySelector('.test-event [role="status"]')?.textContent);
    await shot(page, 'test-payment');
    expect(await said.textContent()).toMatch(
      /^Test event evt_\S+ \(checkout\.session\.completed\): the endpoint answered 200, applied\. License \d+ is paid\. Open the license$/,
    );
    expect(await said.getByRole('link', { name: 'Open the license' }).getAttribute('href')).toBe(
      licenseUrl.slice(licenseUrl.indexOf('#')),
    );
    // The event log opens below, the event applied to the license.
    const logged = page
      .getByRole('table', { name: /Events received by Stripe test/ })
      .getByRole('row')
      .nth(1);
    await logged.waitFor();
    await settles(
      async () => (await logged.getByRole('cell').allTextContents()).slice(0, 3),
      ['checkout.session.completed', 'applied', 'license Buyer license'],
    );

    await said.getByRole('link', { name: 'Open the license' }).click();
    await heading(page, 'License Buyer license');
    await waitText(fact('Paid (its own flag)'), 'yes');

    // The buyer's site asks with the example's route and headers, as curl would.
    const check = await fetch(`${origin}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { 'X-LICENSE-KEY': uuid, 'X-Service-Domain': 'your-site.example', Accept: 'application/json' },
    });
    expect(check.status).toBe(200);
    expect(((await check.json()) as { data: { has_paid: boolean } }).data.has_paid).toBe(true);
    await t.app.get(AnalyticsCounts).flush();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Analytics' }).click();
    await heading(page, 'Analytics');
    await waitText(page.getByTestId('total-paid'), '1');
    expect(project).toBeGreaterThan(0);
  }, 120_000);
});
