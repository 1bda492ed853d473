/**
 * `npm pack` in sdk/ builds (prepack) and makes a tarball that installs on its own, offline (the SDK
 * has no dependencies), and works from a plain Node program by the package's name against a real
 * server, both entry points (`@licensegate/sdk` and `@licensegate/sdk/browser`), with its types.
 * Also the other way the README gives: `npm install /path/to/repo/sdk`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  symlinkSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTestApp, TestApp } from '../../../test/utils/test-app.js';
import { REDIRECT, Seeded, seedProject } from './seed.js';

const SDK = resolve(__dirname, '..', '..');
const ROOT = resolve(SDK, '..');
const FIXTURES = join(__dirname, 'fixtures');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** npm with the calling npm's settings left out (`npm test` passes its own down as npm_config_*). */
function npm(args: string[], cwd: string): string {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A directory to install into: a package of its own, outside the repository. */
function consumerDir(parent: string, name: string): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }),
  );
  for (const file of ['consumer.mjs', 'checks.mjs']) copyFileSync(join(FIXTURES, file), join(dir, file));
  return dir;
}

/** Runs consumer.mjs in `dir`; asynchronously, since the server it calls lives in this process. */
function runConsumer(
  dir: string,
  config: object,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['consumer.mjs'], {
      cwd: dir,
      env: { ...process.env, LG_CHECKS: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', fail);
    child.on('close', (status) => {
      clearTimeout(timer);
      done({ status, stdout, stderr });
    });
  });
}

describe('the packed SDK, installed from its tarball', () => {
  let t: TestApp;
  let s: Seeded;
  let tmp: string;
  let tarball: string;
  let packed: { name: string; version: string; filename: string; files: Array<{ path: string }> };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'licensegate-sdk-pack-'));
    // Packed from a copy: prepack rebuilds dist/ from scratch, and the browser test (another worker)
    // serves the checkout's sdk/dist meanwhile. The copy finds the toolchain up its tree, as sdk/ does.
    const copy = join(tmp, 'checkout', 'sdk');
    cpSync(SDK, copy, { recursive: true, filter: (path) => !/[/\\](node_modules|dist)$/.test(path) });
    symlinkSync(join(ROOT, 'node_modules'), join(tmp, 'checkout', 'node_modules'));
    [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', tmp], copy));
    tarball = join(tmp, packed.filename);
    t = await createTestApp();
    s = await seedProject(t);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('holds the build (modules, types, the browser bundle), the sources its maps point at, the README; nothing else', () => {
    expect(packed).toMatchObject({
      name: '@licensegate/sdk',
      version: '0.1.0',
      filename: 'licensegate-sdk-0.1.0.tgz',
    });
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/licensegate.browser.js',
        'src/index.ts',
      ]),
    );
    expect(
      files.filter(
        (f) => !/^(dist\/[\w.]+\.(js|d\.ts)(\.map)?|src\/[\w.]+\.ts|README\.md|package\.json)$/.test(f),
      ),
    ).toEqual([]);
  });

  it('installs offline with no dependencies, and works from plain Node ESM against a real server', async () => {
    const app = consumerDir(tmp, 'from-tarball');
    npm(['install', '--offline', tarball], app);
    const installed = join(app, 'node_modules', '@licensegate', 'sdk');
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect({
      dependencies: pkg.dependencies,
      peerDependencies: pkg.peerDependencies,
      optionalDependencies: pkg.optionalDependencies,
    }).toEqual({});
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8'));
    expect(Object.keys(lock.packages).sort()).toEqual(['', 'node_modules/@licensegate/sdk']);

    const run = await runConsumer(app, s);
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    const results = JSON.parse(run.stdout);
    const revoked = {
      error: expect.objectContaining({
        isLicenseGateError: true,
        status: 403,
        message: 'This license has been revoked.',
        redirectUrl: REDIRECT,
      }),
    };
    for (const entry of ['main', 'browser']) {
      expect(results[entry].paidDomain).toEqual({
        value: {
          hasPaid: true,
          isTestLicense: false,
          redirectUrl: null,
          injectables: [],
          offline: false,
          expiresAt: null,
          graceUntil: null,
        },
      });
      expect(results[entry].revokedLicense).toEqual(revoked);
      expect(results[entry].paidInjectables).toEqual({
        value: {
          hasPaid: true,
          items: s.injectables.map((i) => ({
            ...i,
            verified: true,
            verifiedWithPem: true,
            verifiedAsOtherProject: false,
          })),
        },
      });
      expect([...results[entry].stream.value].sort()).toEqual(
        [...s.injectables.map((i) => i.slug), s.freeSlug].sort(),
      );
      expect(results[entry].deactivate).toEqual({ value: { deactivated: 1 } });
      expect(results[entry].wrongSecret.error).toMatchObject({ name: 'DecryptionError' });
      expect(results[entry].signedAnswers).toEqual({
        value: { hasPaid: true, offline: false, otherKey: 'bad_signature' },
      });
    }
  }, 120_000);

  it('carries its types: a TypeScript program type-checks against the installed package', () => {
    const app = consumerDir(tmp, 'typed');
    npm(['install', '--offline', tarball], app);
    writeFileSync(
      join(app, 'check.ts'),
      [
        "import { createClient, LicenseGateError, type HasPaidResult } from '@licensegate/sdk';",
        "import { createClient as createBrowserClient } from '@licensegate/sdk/browser';",
        "const client = createClient({ baseUrl: 'https://lg.example.com', licenseKey: 'k', domain: 'shop.example.com' });",
        'export const paid: Promise<HasPaidResult> = client.hasPaid({ includeInjectables: true });',
        'export const status = (err: LicenseGateError): number => err.status;',
        '// @ts-expect-error licenseKey is required',
        "createBrowserClient({ baseUrl: 'https://lg.example.com' });",
      ].join('\n'),
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    execFileSync(process.execPath, [TSC, '-p', app], { cwd: app, encoding: 'utf8' });
  }, 60_000);

  it('npm install /path/to/repo/sdk links the built checkout', async () => {
    const app = consumerDir(tmp, 'from-directory');
    npm(['install', '--offline', SDK], app);
    const installed = join(app, 'node_modules', '@licensegate', 'sdk');
    expect(lstatSync(installed).isSymbolicLink()).toBe(true);
    expect(realpathSync(installed)).toBe(realpathSync(SDK));
    const run = await runConsumer(app, { ...s, run: ['paidDomain'] });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(run.stdout).main.paidDomain.value.hasPaid).toBe(true);
  }, 60_000);
});
