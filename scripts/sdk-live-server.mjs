// A live LicenseGate for the PHP and Python SDK tests (npm run test:php, npm run test:python):
// `node dist/src/main.js` on a fresh SQLite file in a temporary directory and a free port, seeded
// with the admin CLI and the HTTP API. Prints one JSON line describing what it seeded, then obeys
// lines on stdin: `stop` stops the service (the SDKs' offline paths) and answers `stopped`;
// `start` starts it again on the same port and database and answers `started`. End of stdin ends
// everything and removes the directory. Needs dist/ (`npm run build`).
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'dist/src/main.js'))) {
  process.stderr.write('dist/ is missing: run `npm run build` first.\n');
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'licensegate-sdk-'));
const port = await new Promise((resolve, reject) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
  probe.on('error', reject);
});
const env = {
  ...process.env,
  NODE_ENV: 'test',
  PORT: String(port),
  DATABASE_URL: `sqlite:${join(dir, 'licensegate.sqlite')}`,
  APP_KEY: randomBytes(32).toString('base64'),
  LOG_LEVEL: 'warn',
  CONSOLE_ENABLED: 'false',
  WEBHOOK_DISPATCHER: 'false',
  // The grace of a payment event is a few days: nothing closes it during a test.
  PAYMENT_GRACE_POLL_MS: '3600000',
};
delete env.REDIS_URL;
const base = `http://127.0.0.1:${port}/api/v1`;

let service = null;
async function start() {
  service = spawn(process.execPath, [join(root, 'dist/src/main.js')], {
    cwd: dir,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    if (service.exitCode !== null) throw new Error(`the service exited with ${service.exitCode}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the service did not answer /api/v1/health within 30 s');
}
function stop() {
  const running = service;
  service = null;
  if (!running || running.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    running.once('exit', resolve);
    running.kill('SIGTERM');
  });
}
function cleanUp() {
  void stop().then(() => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}
process.on('SIGTERM', cleanUp);
process.on('SIGINT', cleanUp);

/** The CLI's one JSON object. */
function cli(...args) {
  return JSON.parse(
    execFileSync(process.execPath, [join(root, 'dist/src/cli.js'), ...args], { cwd: dir, env }),
  );
}

let apiKey = '';
/** One management call; `expect` is the status it must answer (else this script fails loudly). */
async function api(method, path, body, expect = 200) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': 'application/json', 'X-API-KEY': apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (expect !== null && res.status !== expect)
    throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return { status: res.status, json };
}

try {
  await start();
  cli('users:create', '--email', 'sdk-tests@example.com');
  apiKey = cli('keys:create', '--email', 'sdk-tests@example.com').key;

  const REDIRECT = 'https://pay.example.com/renew';
  const project = (
    await api('POST', '/project', { name: 'SDK tests', default_redirect_url: REDIRECT, has_paid: false }, 201)
  ).json.data;
  const other = (await api('POST', '/project', { name: 'Another project' }, 201)).json.data;
  const domains = { paid: 'paid.example.com', unpaid: 'unpaid.example.com', grace: 'grace.example.com' };
  for (const [kind, domain] of Object.entries(domains))
    await api('POST', `/project/${project.id}/domains`, { domain, has_paid: kind !== 'unpaid' }, 201);
  const license = (await api('POST', `/project/${project.id}/licenses`, { title: 'live' }, 201)).json.data;
  // Each SDK deactivates with its own license, so the day's allowance of one never starves another.
  const spare = (await api('POST', `/project/${project.id}/licenses`, { title: 'spare' }, 201)).json.data;
  // The WordPress drop-in's tests count this one's activations.
  const wordpress = (await api('POST', `/project/${project.id}/licenses`, { title: 'wordpress' }, 201)).json
    .data;
  const revoked = (await api('POST', `/project/${project.id}/licenses`, { title: 'revoked' }, 201)).json.data;
  await api('POST', `/project/${project.id}/licenses/${revoked.id}/revoke`);
  const signingKey = (await api('GET', `/project/${project.id}/signing-key`)).json.data;
  const otherKey = (await api('GET', `/project/${other.id}/signing-key`)).json.data;

  // A grace: the vendor's payment provider says a payment failed (Standard Webhooks, docs/payments.md).
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const connector = (
    await api(
      'POST',
      `/project/${project.id}/payment-connectors`,
      { provider: 'standard', signing_secret: secret, grace_days: 3 },
      201,
    )
  ).json.data;
  const event = JSON.stringify({
    type: 'payment.failed',
    timestamp: new Date().toISOString(),
    data: { metadata: { licensegate_domain: domains.grace } },
  });
  const id = `evt_${randomUUID()}`;
  const at = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${id}.${at}.${event}`)
    .digest('base64');
  const received = await fetch(
    connector.endpoint_url.replace(/^https?:\/\/[^/]+/, `http://127.0.0.1:${port}`),
    {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': at,
        'webhook-signature': `v1,${signature}`,
      },
      body: event,
    },
  );
  if (received.status !== 200) throw new Error(`the payment event answered ${received.status}`);

  // Plans and metered usage, where this build has them (the SDKs read them when present).
  let plan = null;
  const created = await api(
    'POST',
    `/project/${project.id}/plans`,
    {
      code: 'pro',
      name: 'Pro',
      entitlements: { 'feature.reports': true, seats: 5, 'meter.api_calls': 1000 },
    },
    null,
  );
  if (created.status === 201) {
    plan = created.json.data;
    for (const l of [license, spare, wordpress])
      await api('PATCH', `/project/${project.id}/licenses/${l.id}`, { plan_id: plan.id });
  }

  process.stdout.write(
    `${JSON.stringify({
      base_url: base,
      api_key: apiKey,
      project_id: project.id,
      public_key: signingKey.public_key,
      public_key_pem: signingKey.public_key_pem,
      other_public_key: otherKey.public_key,
      redirect_url: REDIRECT,
      domains,
      license_key: license.uuid,
      spare_license_key: spare.uuid,
      spare_license_id: spare.id,
      wordpress_license_key: wordpress.uuid,
      wordpress_license_id: wordpress.id,
      revoked_license_key: revoked.uuid,
      plan: plan && { code: plan.code, entitlements: plan.entitlements },
    })}\n`,
  );
} catch (err) {
  process.stderr.write(`sdk-live-server: ${err instanceof Error ? err.stack : String(err)}\n`);
  await stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(1);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = line.trim();
  if (command === '') return;
  const done =
    command === 'stop'
      ? stop().then(() => 'stopped')
      : command === 'start'
        ? start().then(() => 'started')
        : null;
  if (!done) return void process.stdout.write(`unknown command: ${command}\n`);
  done.then(
    (word) => process.stdout.write(`${word}\n`),
    (err) => process.stdout.write(`failed: ${err instanceof Error ? err.message : String(err)}\n`),
  );
});
lines.on('close', cleanUp);
