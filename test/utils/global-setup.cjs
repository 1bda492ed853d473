// Jest's globalSetup: builds what the suites run as child processes, once, before any file runs:
// dist/ (the service and CLI the spawned-process tests start) when older than the sources, and
// sdk/dist/ (examples/ and the SDK's browser test run the built SDK) when older than sdk/src.
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..', '..');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

module.exports = function globalSetup() {
  execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { cwd: ROOT, stdio: 'inherit' });
  const sdkTarget = join(ROOT, 'sdk/dist/licensegate.browser.js');
  const sdkSources = Math.max(
    newest(join(ROOT, 'sdk/src')),
    statSync(join(ROOT, 'sdk/package.json')).mtimeMs,
  );
  if (!existsSync(sdkTarget) || statSync(sdkTarget).mtimeMs < sdkSources) {
    process.stderr.write('building the SDK…\n');
    execFileSync(process.execPath, ['sdk/scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  }
};
