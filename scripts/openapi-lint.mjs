// Lints openapi.json with Redocly CLI's recommended rules (redocly.yaml) and fails on any problem,
// warnings included: `redocly lint` alone exits 0 on warnings.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let cli;
try {
  const manifest = createRequire(import.meta.url).resolve('@redocly/cli/package.json');
  const { bin } = createRequire(import.meta.url)(manifest);
  cli = join(dirname(manifest), typeof bin === 'string' ? bin : bin.redocly);
} catch {
  process.stderr.write('@redocly/cli is not installed: run `npm install` (it is a devDependency).\n');
  process.exit(1);
}

const run = spawnSync(
  process.execPath,
  [cli, 'lint', 'openapi.json', '--format=json', '--max-problems=1000'],
  {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  },
);
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  process.stderr.write(`redocly lint failed (exit ${run.status}):\n${run.stdout}${run.stderr}`);
  process.exit(1);
}
for (const problem of report.problems) {
  const where = problem.location?.[0];
  process.stderr.write(
    `${problem.severity} ${problem.ruleId} openapi.json:${where?.start?.line ?? '?'} ${where?.pointer ?? ''}: ${problem.message}\n`,
  );
}
const { errors, warnings } = report.totals;
if (errors + warnings > 0) {
  process.stderr.write(
    `openapi.json: ${errors} error(s), ${warnings} warning(s) under Redocly ${report.version}'s recommended rules.\n`,
  );
  process.exit(1);
}
process.stdout.write(`openapi.json: no problems under Redocly ${report.version}'s recommended rules.\n`);
