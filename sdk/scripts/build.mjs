#!/usr/bin/env node
// Builds dist/ from src/: the ES modules with their type declarations (tsc), and
// dist/licensegate.browser.js, the whole SDK as one ES module for a single <script type="module">
// (esbuild): one request instead of several, and a file that can be copied anywhere on its own.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { resolveTool, SDK } from './toolchain.mjs';

const DIST = join(SDK, 'dist');
const BROWSER_FILE = 'licensegate.browser.js';

const pkg = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
const tsc = resolveTool('typescript/bin/tsc');
const esbuild = await import(resolveTool('esbuild'));

// A clean dist/: npm pack ships all of it, so nothing stale may stay behind.
rmSync(DIST, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(SDK, 'tsconfig.json')], { stdio: 'inherit' });
await esbuild.build({
  entryPoints: [join(SDK, 'src/index.ts')],
  outfile: join(DIST, BROWSER_FILE),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  // tsc's language level: browsers old enough to need more down-levelling lack WebCrypto's Ed25519.
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  sourcesContent: true,
  banner: { js: `/*! ${pkg.name} ${pkg.version} | ${pkg.license} */` },
  logLevel: 'warning',
});
