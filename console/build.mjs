// Builds the console (docs/console.md) into dist/console/: index.html and assets/app-<hash>.{js,css};
// and beside it the customer portal (docs/portal.md): portal.html and assets/portal-<hash>.{js,css}.
// `npm run build` runs it after tsc; esbuild bundles Preact and openapi-fetch in, so nothing is
// fetched at run time. Type-checking is `npm run typecheck` (console/tsconfig.json), not this.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console');
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: {
    app: join(root, 'console', 'src', 'main.tsx'),
    portal: join(root, 'console', 'src', 'portal', 'main.tsx'),
  },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  outdir: join(out, 'assets'),
  metafile: true,
  logLevel: 'warning',
  legalComments: 'eof',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file));
const asset = (entry, ext) => {
  const name = outputs.find((file) => new RegExp(`^${entry}-\\w+\\.${ext}$`).test(file));
  if (!name) throw new Error(`console build: ${entry}-<hash>.${ext} expected, got ${outputs.join(', ')}`);
  return name;
};
const script = asset('app', 'js');
const style = asset('app', 'css');

// The favicon is a hashed asset like the others: served from memory under the same CSP and caching,
// and named in index.html, so the browser never asks for /favicon.ico (a 404 on every load).
const icon = readFileSync(join(root, 'console', 'static', 'favicon.svg'));
const iconName = `favicon-${createHash('sha256').update(icon).digest('hex').slice(0, 8)}.svg`;
writeFileSync(join(out, 'assets', iconName), icon);

// No inline script or style: the Content-Security-Policy (src/console/console.ts) allows neither.
writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LicenseGate console</title>
<link rel="icon" type="image/svg+xml" href="./assets/${iconName}">
<link rel="stylesheet" href="./assets/${style}">
<script type="module" src="./assets/${script}"></script>
</head>
<body>
<div id="app"><noscript>The LicenseGate console needs JavaScript.</noscript></div>
</body>
</html>
`,
);

// The portal's page, served at /portal/ with its assets under /portal/assets/ (src/portal/portal-pages.ts).
writeFileSync(
  join(out, 'portal.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Your licenses</title>
<link rel="icon" type="image/svg+xml" href="./assets/${iconName}">
<link rel="stylesheet" href="./assets/${asset('portal', 'css')}">
<script type="module" src="./assets/${asset('portal', 'js')}"></script>
</head>
<body>
<div id="app"><noscript>Your licenses page needs JavaScript.</noscript></div>
</body>
</html>
`,
);
