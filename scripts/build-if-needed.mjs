// `npm start` and `npm run cli` build first when dist/ is missing or older than the sources; the
// console (dist/console/, docs/console.md) likewise when it is older than console/.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const target = 'dist/src/main.js';
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}
const sources = Math.max(newest('src'), statSync('package.json').mtimeMs, statSync('tsconfig.json').mtimeMs);
if (!existsSync(target) || statSync(target).mtimeMs < sources) {
  process.stderr.write('building (tsc)…\n');
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: ['ignore', 2, 2],
  });
}

const consoleTarget = 'dist/console/index.html';
const consoleSources = Math.max(
  newest('console/src'),
  newest('console/static'),
  statSync('console/build.mjs').mtimeMs,
);
if (!existsSync(consoleTarget) || statSync(consoleTarget).mtimeMs < consoleSources) {
  process.stderr.write('building the console (esbuild)…\n');
  execFileSync(process.execPath, ['console/build.mjs'], { stdio: ['ignore', 2, 2] });
}
