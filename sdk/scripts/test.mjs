#!/usr/bin/env node
// `npm test` in sdk/: the root Jest configuration's `sdk` project (sdk/test/*.test.ts), the same
// suites the root `npm test` runs. Extra arguments go to Jest (`npm test -- browser`).
import { spawnSync } from 'node:child_process';
import { resolveTool, ROOT } from './toolchain.mjs';

const jest = resolveTool('jest/bin/jest');
const run = spawnSync(
  process.execPath,
  [jest, ...process.argv.slice(2), '--runInBand', '--selectProjects', 'sdk'],
  { cwd: ROOT, stdio: 'inherit' },
);
process.exit(run.status ?? 1);
