#!/usr/bin/env node
// Builds dist/ from src/: the type declarations (tsc); the ES modules, one per source file, with what
// they import from packages (@noble/hashes's scrypt) inlined, so that the SDK installs with no
// dependency (esbuild); and dist/licensegate.browser.js, the whole SDK as one ES module for a single
// <script type="module">: one request instead of several, and a file that can be copied anywhere on
// its own.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { resolveTool, SDK } from './toolchain.mjs';

const DIST = join(SDK, 'dist');
const BROWSER_FILE = 'licensegate.browser.js';

const pkg = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
const tsc = resolveTool('typescript/bin/tsc');
const esbuild = await import(resolveTool('esbuild'));

// A clean dist/: npm pack ships all of it, so nothing stale may stay behind.
rmSync(DIST, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(SDK, 'tsconfig.json'), '--emitDeclarationOnly'], {
  stdio: 'inherit',
});
// Each module stays a file of its own that imports its siblings (browsers may load dist/index.js and
// its relative imports), so only a package is followed into and bundled.
const siblingsStayImports = {
  name: 'siblings-stay-imports',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, ({ path, importer }) =>
      dirname(importer) === join(SDK, 'src') ? { path, external: true } : undefined,
    );
  },
};
await esbuild.build({
  entryPoints: readdirSync(join(SDK, 'src'))
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(SDK, 'src', file)),
  outdir: DIST,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: 'linked',
  sourcesContent: true,
  plugins: [siblingsStayImports],
  logLevel: 'warning',
});
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
