#!/usr/bin/env node
// npm run bench [-- --db sqlite|mysql --licenses 100000 --projects 1000 --domains 10000
//                  --injectables 1000 --duration 10 --connections 50 --no-growth --workers N
//                  --redis-url URL --pair-rounds 3 --no-redis-pair --no-signed-pair --no-analytics-pair
//                  --no-bare-pair --no-nest-pair --no-billing-pair --pairs-only]
// npm run bench -- --only 'GET / nest' --no-growth --no-redis-pair --pair-rounds 5: only GET / against a stock
//                  NestJS app answering the same bytes (at least 0.7 × at the defaults).
// npm run bench -- --only 'licenses' --no-growth --no-redis-pair: only the licenses lists (all, and per_page=50).
// npm run bench -- --only 'has-paid bare' --no-growth --no-redis-pair --pair-rounds 5: only has-paid against a
//                  bare node:http server answering the same bytes (issue 38: at least 0.6 ×), and against
//                  the least a license check does (scripts/floor-server.mjs).
// npm run bench -- --only 'has-paid analytics' --no-growth --no-redis-pair --pair-rounds 5: only the
//                  analytics pair (target: with analytics at least 0.95 × without).
// npm run bench -- --only 'has-paid billing' --no-growth --no-redis-pair --pair-rounds 5: only has-paid for
//                  billing: project licenses against billing: license ones (target: within 5 %).
// npm run bench -- --only 'has-paid plan' --no-growth --no-redis-pair --pair-rounds 3: only has-paid of licenses
//                  without and on a plan of 20 entitlements (docs/plans.md: within 5 %).
// npm run bench -- --only 'license/usage' --no-growth --no-redis-pair --no-plan-pair: metered usage's throughput.
// npm run bench -- --only 'steady rate' --no-growth --no-redis-pair: latency of has-paid, metered usage and GET / while
//                  the service carries a stated rate (calls due at even intervals; scripts/paced-load.mjs).
// npm run bench -- --soak MINUTES [--svg FILE]: a mixed load against the server as `npm start` runs it
//                  (see soak() below).
// npm run bench -- --baseline DIR [--rounds 3] [--only has-paid|license/usage]: the runtime scenarios of this build and of
//                  another build of the service (DIR: a checkout with its own dist/, e.g. the commit before a
//                  change), on one seeded database, in alternating rounds (see compare() below).
//
// Seeds a database with the service's own entities and crypto, starts the built server, and drives
// it with autocannon. Prints req/s, p50, p99 and the server's peak RSS for each scenario, and each
// scenario's req/s as a ratio of GET / measured in the same run, right before and right after it.
// Then has-paid unsigned and signed (one server, alternating rounds), has-paid against a bare node:http
// server answering the same bytes and against the least a license check does (alternating rounds),
// has-paid with analytics off and on (two servers on one database, alternating rounds), has-paid
// with and without Redis (two servers on one database, measured in alternating rounds), and
// has-paid at 1k and 1M licenses.
import autocannon from 'autocannon';
import { paced } from './paced-load.mjs';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import 'reflect-metadata';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const opts = {
  db: flag('db', 'sqlite'),
  licenses: Number(flag('licenses', 100_000)),
  projects: Number(flag('projects', 1000)),
  domains: Number(flag('domains', 10_000)),
  injectables: Number(flag('injectables', 1000)),
  duration: Number(flag('duration', 10)),
  warmup: Number(flag('warmup', 3)),
  connections: Number(flag('connections', 50)),
  growth: !args.includes('--no-growth'),
  redisPair: !args.includes('--no-redis-pair'),
  signedPair: !args.includes('--no-signed-pair'),
  analyticsPair: !args.includes('--no-analytics-pair'),
  barePair: !args.includes('--no-bare-pair'),
  nestPair: !args.includes('--no-nest-pair'),
  billingPair: !args.includes('--no-billing-pair'),
  planPair: !args.includes('--no-plan-pair'),
  steadyRates: !args.includes('--no-steady-rates'),
  pairRounds: Number(flag('pair-rounds', 3)),
  only: flag('only', null),
  pairsOnly: args.includes('--pairs-only'),
  nodeArgs: flag('node-args', ''),
  // --workers N: CLUSTER_WORKERS=N, which needs Redis (a fresh key prefix per run).
  workers: Number(flag('workers', 1)),
  redisUrl: flag('redis-url', process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'),
  mysqlUrl: flag('mysql-url', process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/test'),
  soak: Number(flag('soak', 0)),
  svg: flag('svg', null),
  baseline: flag('baseline', null),
  rounds: Number(flag('rounds', 3)),
};

const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;
if (!existsSync(new URL('../dist/src/main.js', import.meta.url))) {
  console.error('Build first: npm run build');
  process.exit(1);
}
const { loadConfig } = await import(dist('config/app-config.js'));
const { dataSourceOptions } = await import(dist('database/data-source-options.js'));
const { sha256Hex, sealSecret } = await import(dist('common/crypto/crypto.js'));
const { newSigningKeyPair, openPrivateKey, signEd25519 } = await import(dist('common/crypto/signing.js'));
const { encryptPayload, contentHash, signedMessage } = await import(dist('common/crypto/payload.js'));
const { UserEntity } = await import(dist('auth/user.entity.js'));
const { ApiKeyEntity } = await import(dist('auth/api-key.entity.js'));
const { ProjectEntity } = await import(dist('projects/project.entity.js'));
const { DomainEntity } = await import(dist('domains/domain.entity.js'));
const { LicenseEntity } = await import(dist('licenses/license.entity.js'));
const { InjectableEntity } = await import(dist('injectables/injectable.entity.js'));
const { PlanEntity } = await import(dist('plans/plan.entity.js'));
const { DataSource } = await import('typeorm');

const APP_KEY = randomBytes(32).toString('base64');
const log = (...m) => console.error('[bench]', ...m);

async function createDatabase(tag) {
  if (opts.db === 'sqlite') {
    const file = join(tmpdir(), `licensegate-bench-${tag}-${process.pid}.sqlite`);
    for (const ext of ['', '-wal', '-shm']) rmSync(file + ext, { force: true });
    return {
      url: `sqlite:${file}`,
      drop: async () => ['', '-wal', '-shm'].forEach((e) => rmSync(file + e, { force: true })),
    };
  }
  const mysql = (await import('mysql2/promise')).default;
  const server = new URL(opts.mysqlUrl);
  const name = `lg_bench_${tag}_${process.pid}`;
  const conn = () =>
    mysql.createConnection({
      host: server.hostname,
      port: Number(server.port || 3306),
      user: decodeURIComponent(server.username),
      password: decodeURIComponent(server.password),
    });
  const admin = await conn();
  await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await admin.end();
  const url = new URL(opts.mysqlUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = await conn();
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
    },
  };
}

async function insertChunked(ds, entity, rows, size = 500) {
  for (let i = 0; i < rows.length; i += size) {
    await ds
      .createQueryBuilder()
      .insert()
      .into(entity)
      .values(rows.slice(i, i + size))
      .updateEntity(false)
      .execute();
  }
}

/** Seeds through the service's entities and crypto. Returns what the scenarios need. */
async function seed(url, counts, extra = {}) {
  const started = Date.now();
  const config = loadConfig({ NODE_ENV: 'test', APP_KEY, DATABASE_URL: url }, () => undefined);
  const ds = await new DataSource(dataSourceOptions(url)).initialize();
  await ds.runMigrations();
  await ds.getRepository(UserEntity).insert({
    email: 'bench@example.test',
    name: 'bench',
    max_projects: null,
    can_create_licenses: true,
    webhooks_enabled: Boolean(extra.webhookUrl),
    license_defaults: null,
  });
  const user = await ds.getRepository(UserEntity).findOneByOrFail({ email: 'bench@example.test' });
  const apiKey = `lg_${randomBytes(32).toString('base64url')}`;
  await ds.getRepository(ApiKeyEntity).insert({
    user_id: user.id,
    project_id: null,
    name: 'bench',
    prefix: apiKey.slice(0, 8),
    key_hash: sha256Hex(apiKey),
    expires_at: null,
    revoked_at: null,
    last_used_at: null,
  });

  // More global keys when asked (the soak spreads its management calls over them, under the default
  // limit of 600 a minute per key).
  const apiKeys = [apiKey];
  for (let k = 1; k < (extra.apiKeys ?? 1); k++) apiKeys.push(`lg_${randomBytes(32).toString('base64url')}`);
  await insertChunked(
    ds,
    ApiKeyEntity,
    apiKeys.slice(1).map((key, k) => ({
      user_id: user.id,
      project_id: null,
      name: `bench ${k + 1}`,
      prefix: key.slice(0, 8),
      key_hash: sha256Hex(key),
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    })),
  );

  const keys = [];
  const projects = [];
  for (let p = 0; p < counts.projects; p++) {
    const pair = newSigningKeyPair(config.appKey);
    keys.push(pair);
    projects.push({
      user_id: user.id,
      license_key_id: null,
      name: `Project ${p}`,
      slug: `project-${p}`,
      description: null,
      default_redirect_url: 'https://example.com/pay',
      logo_url: null,
      meta: {},
      is_active: true,
      has_paid: p % 2 === 0,
      locked_at: null,
      lock_reason: null,
      signing_public_key: pair.publicPem,
      signing_private_key: pair.sealedPrivate,
      webhook_url: p < (extra.webhookProjects ?? 0) ? extra.webhookUrl : null,
      webhook_secret:
        p < (extra.webhookProjects ?? 0)
          ? sealSecret(config.appKey, 'whsec_' + randomBytes(24).toString('base64'))
          : null,
    });
  }
  await insertChunked(ds, ProjectEntity, projects, 200);
  const projectIds = (
    await ds.getRepository(ProjectEntity).find({ select: { id: true }, order: { id: 'ASC' } })
  ).map((p) => p.id);

  const domains = [];
  for (let d = 0; d < counts.domains; d++) {
    domains.push({
      project_id: projectIds[d % projectIds.length],
      domain: `shop${d}.example.com`,
      has_paid: d % 3 !== 0,
      is_active: true,
      is_primary: d < projectIds.length,
    });
  }
  await insertChunked(ds, DomainEntity, domains);

  const pool = [];
  const batch = [];
  for (let l = 0; l < counts.licenses; l++) {
    const uuid = randomUUID();
    const p = l % projectIds.length;
    batch.push(batchRow(projectIds[p], user.id, uuid, `License ${l}`));
    // The pool the load generator cycles through: licenses of projects that have domains.
    if (pool.length < 1000 && p < Math.min(projectIds.length, counts.domains))
      pool.push({ uuid, domain: `www.shop${p}.example.com`, p });
    if (batch.length === 1000) await insertChunked(ds, LicenseEntity, batch.splice(0), 1000);
  }
  await insertChunked(ds, LicenseEntity, batch, 1000);

  // One `billing: license` license beside each license of the pool, of the same project, called from
  // a buyer's site the project never registered; paid as often as the pool's calling domains are (the
  // domain shop{p} of project p is paid unless p % 3 is 0), so both pools answer the same mix.
  const billingPool = [];
  const billed = pool.map(({ p }, i) => {
    const uuid = randomUUID();
    billingPool.push({ uuid, domain: `www.buyer${i}.example.org` });
    return {
      ...batchRow(projectIds[p], user.id, uuid, `Billed license ${i}`),
      billing: 'license',
      has_paid: p % 3 !== 0,
    };
  });
  await insertChunked(ds, LicenseEntity, billed, 1000);
  // Licenses on a plan of 20 entitlements (one plan per project of the pool), as many as the pool
  // holds, from the same domains: the plan pair compares them with the pool's licenses without one.
  // Those from paid domains record metered usage (meter.bench, a quota no run reaches).
  const planned = Math.min(pool.length, counts.licenses);
  const planProjects = [...new Set(pool.map((_, i) => i % projectIds.length))];
  await insertChunked(
    ds,
    PlanEntity,
    planProjects.map((p) => ({
      project_id: projectIds[p],
      code: 'pro',
      name: 'Pro',
      entitlements: Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [
          i === 0 ? 'meter.bench' : `feature_${i}`,
          i === 0 ? 2147483647 : i % 3 === 0 ? i * 100 : i % 3 === 1 ? true : `tier-${i}`,
        ]),
      ),
      max_domains: null,
      max_subdomains_per_domain: null,
      max_usage_per_day: null,
    })),
  );
  const planIds = new Map(
    (await ds.getRepository(PlanEntity).find({ select: { id: true, project_id: true } })).map((plan) => [
      plan.project_id,
      plan.id,
    ]),
  );
  const planPool = [];
  const usagePool = [];
  const plannedRows = [];
  for (let l = 0; l < planned; l++) {
    const uuid = randomUUID();
    const p = l % projectIds.length;
    plannedRows.push({
      ...batchRow(projectIds[p], user.id, uuid, `Planned ${l}`),
      plan_id: planIds.get(projectIds[p]),
    });
    planPool.push({ uuid, domain: `www.shop${p}.example.com` });
    if (p % 3 !== 0) usagePool.push({ uuid, domain: `www.shop${p}.example.com` });
  }
  await insertChunked(ds, LicenseEntity, plannedRows, 1000);

  // One encrypted payload reused (scrypt is deliberately slow), signed per injectable like the service does.
  const blob = await encryptPayload('bench-secret', Buffer.from('console.log("paid")'));
  const content = blob.toString('base64');
  const hash = contentHash(blob);
  const injectables = [];
  for (let i = 0; i < counts.injectables; i++) {
    const p = i % projectIds.length;
    const fields = {
      project_id: projectIds[p],
      slug: `inj-${i}`,
      type: 'script',
      mode: 'inject',
      target_path: null,
      content_hash: hash,
    };
    injectables.push({
      ...fields,
      title: null,
      validate_endpoint: null,
      content,
      file_path: null,
      is_active: true,
      only_if_paid: i % 2 === 0,
      meta: {},
      signature: signEd25519(openPrivateKey(config.appKey, keys[p].sealedPrivate), signedMessage(fields)),
    });
  }
  await insertChunked(ds, InjectableEntity, injectables, 200);
  const projectId = projectIds[0];
  // A few licenses and domains of the first projects by id, for management reads and writes.
  const writable = await ds.getRepository(LicenseEntity).find({
    select: { id: true, project_id: true },
    where: projectIds.slice(0, extra.webhookProjects ?? 1).map((id) => ({ project_id: id })),
    take: 200,
    order: { id: 'ASC' },
  });
  await ds.destroy();
  log(
    `seeded ${counts.licenses} licenses, ${counts.projects} projects, ${counts.domains} domains, ${counts.injectables} injectables in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return { apiKey, apiKeys, pool, billingPool, planPool, usagePool, projectId, projectIds, writable };
}

/** A license row of the seed: no limits, not pinned. */
function batchRow(projectId, userId, uuid, title) {
  return {
    project_id: projectId,
    user_id: userId,
    uuid,
    uuid_hash: sha256Hex(uuid),
    title,
    domain_id: null,
    expires_at: null,
    max_domains: null,
    max_subdomains_per_domain: null,
    max_usage_per_day: null,
    allowed_ips: null,
    allowed_countries: null,
    is_test_license: false,
    allow_configs: false,
    validate_against: 'project_domains',
    revoked_at: null,
  };
}

/** The server starts exactly as `npm start` starts it (same node flags), unless --node-args says otherwise. */
const startFlags = () => {
  if (opts.nodeArgs) return opts.nodeArgs.split(' ').filter(Boolean);
  const script = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start;
  return script.split(' ').filter((word) => word.startsWith('--'));
};

/** The built server of this checkout, or of another one (`root`: a directory with its own dist/). */
function startServer(url, port, extraEnv = {}, root = null) {
  const main = root ? join(root, 'dist/src/main.js') : 'dist/src/main.js';
  const child = spawn(process.execPath, [...startFlags(), main], {
    ...(root ? { cwd: root } : {}),
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      DATABASE_URL: url,
      APP_KEY,
      LOG_LEVEL: 'warn',
      WEBHOOK_DISPATCHER: 'false',
      THROTTLE_ROOT_LIMIT: '1000000000',
      THROTTLE_API_LIMIT: '1000000000',
      THROTTLE_RUNTIME_LIMIT: '1000000000',
      ...(opts.workers > 1
        ? {
            CLUSTER_WORKERS: String(opts.workers),
            REDIS_URL: opts.redisUrl,
            REDIS_KEY_PREFIX: `lg-bench-${process.pid}-${port}:`,
          }
        : { CLUSTER_WORKERS: '1' }),
      ...extraEnv,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

async function waitReady(port) {
  // Up to a minute: a shared machine under load starts the service slowly.
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

const peakRss = (pid) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
/** With workers: the primary's peak plus each worker's (an upper bound: the peaks need not coincide). */
const serverRss = (pid) => {
  let children = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // no children file: a single process
  }
  return [pid, ...children].reduce((sum, p) => sum + peakRss(p), 0);
};

/** CPU seconds (user + system) the process has used so far, from /proc (Linux; clock ticks of 10 ms). */
const cpuSeconds = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
};

/** A scenario's requests, one per variant (a license of the pool, a nonce), each built once. */
function requestsOf(scenario) {
  const variants = scenario.headers ? (scenario.variants ?? 1) : 1;
  return Array.from({ length: variants }, (_, i) => ({
    method: scenario.method,
    path: scenario.path,
    headers: { accept: 'application/json', ...(scenario.headers?.(i) ?? {}) },
    ...(scenario.body ? { body: scenario.body(i) } : {}),
  }));
}

async function drive(port, scenario, warmup, pid = null) {
  // Every request is built once, before the run: autocannon renders a static request to bytes a
  // single time and then only cycles through them, so the load generator (which shares the cores
  // with the server) costs the same per request in every scenario. A per-request setupRequest
  // would cost it ~20 µs more per has-paid call than per GET /, taken from the server's cores.
  const requests = requestsOf(scenario);
  // idReplacement: `[<id>]` in a body becomes a fresh id in every request (metered usage's
  // idempotency keys), at a cost to the load generator that only such a scenario pays.
  const base = {
    url: `http://127.0.0.1:${port}`,
    connections: opts.connections,
    ...(scenario.idReplacement ? { idReplacement: true } : {}),
  };
  // The warm-up hands each next request to whichever connection is free: first one call per variant
  // (every license of the pool, however long their first loads take), then `warmup` seconds more.
  // In the measured run all connections walk the list from its start together.
  let next = 0;
  const rotating = [
    {
      ...requests[0],
      setupRequest: (req) => ({ ...req, headers: requests[next++ % requests.length].headers }),
    },
  ];
  if (requests.length > 1) await autocannon({ ...base, requests: rotating, amount: requests.length });
  await autocannon({ ...base, requests: rotating, duration: warmup });
  // The server's CPU time per answer: unlike req/s, it does not move when other tenants take the cores.
  const cpuBefore = pid === null ? NaN : cpuSeconds(pid);
  const result = await autocannon({ ...base, requests, duration: opts.duration });
  const cpuUs = ((cpuSeconds(pid) - cpuBefore) * 1e6) / result.requests.total;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    cpuUs,
  };
}

/**
 * list[0] is GET /. It is measured first, and again right after every other scenario: this VM's
 * speed drifts by ±15 % over a minute (other tenants share the host), so each scenario's ratio is
 * taken against the mean of the GET / runs just before and just after it, not against one run
 * made minutes earlier. Re-measurements of GET / warm up for 1 s (the server is already warm).
 */
async function runScenarios(url, seedInfo, list, port, root = null) {
  const server = startServer(url, port, {}, root);
  try {
    await waitReady(port);
    const [rootScenario, ...rest] = list;
    const measure = async (scenario, warmup) => {
      const r = await drive(port, scenario, warmup, opts.workers > 1 ? null : server.pid);
      log(
        `${scenario.name}: ${Math.round(r.rps)} req/s p50 ${r.p50} ms p99 ${r.p99} ms server CPU ${r.cpuUs.toFixed(0)} µs/req${r.non2xx ? ` non2xx ${r.non2xx}` : ''}`,
      );
      return { name: scenario.name, ...r, rss: serverRss(server.pid) };
    };
    let before = await measure(rootScenario, opts.warmup);
    const rows = [{ ...before, root: before.rps }];
    for (const scenario of rest) {
      const row = await measure(scenario, opts.warmup);
      const after = await measure(rootScenario, 1);
      rows.push({ ...row, root: (before.rps + after.rps) / 2 });
      before = after;
    }
    return rows;
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

const runtime = (info, query) => ({
  method: 'POST',
  path: `/api/v1/project/has-paid${query}`,
  variants: info.pool.length,
  headers: (i) => {
    const l = info.pool[i % info.pool.length];
    return { 'x-license-key': l.uuid, 'x-service-domain': l.domain };
  },
});

/**
 * has-paid with X-Service-Nonce, a different nonce in every request a connection sends: the list
 * holds NONCES_PER_LICENSE requests per license of the pool, each with its own random nonce, rendered
 * once like every other scenario's. More than a connection sends in a run (about 2000 at 10 s), so
 * no connection repeats one; the connections walk the same list, so one nonce reaches the server
 * once per connection, which costs the server the same (it keeps no record of nonces: every answer
 * is signed afresh). autocannon's idReplacement would make them unique across connections too, but
 * it re-renders the whole request on every call (4.4 µs per request in a tight loop here, before its
 * garbage is collected), taken from the cores the server shares, which the unsigned scenario does not pay.
 */
const NONCES_PER_LICENSE = 4;

/** POST /license/usage: one of meter.bench for a license on a plan, from its paid domain, a new key each call. */
const usage = (info) => ({
  method: 'POST',
  path: '/api/v1/license/usage',
  variants: info.usagePool.length,
  headers: (i) => {
    const l = info.usagePool[i % info.usagePool.length];
    return { 'x-license-key': l.uuid, 'x-service-domain': l.domain, 'content-type': 'application/json' };
  },
  body: () => JSON.stringify({ meter: 'meter.bench', amount: 1, idempotency_key: '[<id>]' }),
  idReplacement: true,
});

/**
 * has-paid (license + domain) of licenses without a plan and of licenses on a plan of 20
 * entitlements (the same domains), against one server in alternating rounds: what carrying the plan
 * and its entitlements in every answer costs.
 */
async function planPair(url, info, basePort) {
  const server = startServer(url, basePort);
  try {
    await waitReady(basePort);
    const entries = [
      { name: 'without a plan', port: basePort, scenario: runtime(info, ''), pid: server.pid },
      {
        name: 'on a plan of 20 entitlements',
        port: basePort,
        scenario: runtime({ pool: info.planPool }, ''),
        pid: server.pid,
      },
    ];
    await alternating(
      `has-paid (license + domain) without a plan and on a plan of 20 entitlements: ${opts.pairRounds} alternating rounds of ${opts.duration} s each, one server`,
      entries,
    );
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
  }
}
const signedRuntime = (info, query) => {
  const plain = runtime(info, query);
  const nonces = Array.from({ length: info.pool.length * NONCES_PER_LICENSE }, () =>
    randomBytes(24).toString('base64url'),
  );
  return {
    ...plain,
    variants: nonces.length,
    headers: (i) => ({ ...plain.headers(i), 'x-service-nonce': nonces[i] }),
  };
};

function scenarios(info) {
  return [
    { name: 'GET /', method: 'GET', path: '/api/v1/' },
    { name: 'has-paid (license + domain)', ...runtime(info, '') },
    { name: 'has-paid signed (nonce per request)', ...signedRuntime(info, '') },
    { name: 'has-paid action=check_project', ...runtime(info, '?action=check_project') },
    { name: 'has-paid include=injectables', ...runtime(info, '?action=check_project&include=injectables') },
    { name: 'POST /license/usage (a new idempotency key per call)', ...usage(info) },
    {
      name: 'GET /injectable/stream',
      method: 'GET',
      path: '/api/v1/injectable/stream',
      variants: info.pool.length,
      headers: (i) => ({ 'x-license-key': info.pool[i % info.pool.length].uuid }),
    },
    {
      name: 'GET /project/{id}/licenses',
      method: 'GET',
      path: `/api/v1/project/${info.projectId}/licenses`,
      headers: () => ({ 'x-api-key': info.apiKey }),
    },
    {
      name: 'GET /project/{id}/licenses?per_page=50',
      method: 'GET',
      path: `/api/v1/project/${info.projectId}/licenses?per_page=50`,
      headers: () => ({ 'x-api-key': info.apiKey }),
    },
  ];
}

function table(rows) {
  const lines = [
    '| scenario | req/s | p50 ms | p99 ms | server CPU µs/req | peak RSS MB | GET / around it, req/s | × GET / |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${Number.isFinite(r.cpuUs) ? r.cpuUs.toFixed(0) : '–'} | ${r.rss.toFixed(0)} | ${Math.round(r.root)} | ${(r.rps / r.root).toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

const port = 3900 + (process.pid % 50);

/**
 * has-paid (license + domain) against two servers on the same database, one without Redis and one
 * with REDIS_URL (a fresh key prefix), both running throughout. Measured in alternating rounds
 * (without, with; then with, without; …) so that the drift of a shared machine falls on both alike.
 */
async function redisPair(url, info, basePort) {
  const { Redis } = await import('ioredis');
  const probe = new Redis(opts.redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
  });
  probe.on('error', () => undefined);
  const reachable = await probe
    .connect()
    .then(() => probe.ping())
    .then(
      () => true,
      () => false,
    );
  probe.disconnect();
  if (!reachable) {
    console.log(`\nhas-paid with and without Redis: skipped, no Redis at ${opts.redisUrl} (--redis-url)`);
    return;
  }
  const setups = [
    { name: 'no Redis', port: basePort, env: {} },
    {
      name: 'REDIS_URL',
      port: basePort + 1,
      env: { REDIS_URL: opts.redisUrl, REDIS_KEY_PREFIX: `lg-bench-pair-${process.pid}:` },
    },
  ];
  const servers = setups.map((setup) => startServer(url, setup.port, setup.env));
  const scenario = { name: 'has-paid (license + domain)', ...runtime(info, '') };
  try {
    await Promise.all(setups.map((setup) => waitReady(setup.port)));
    const title = `has-paid (license + domain) with and without Redis: ${opts.pairRounds} alternating rounds of ${opts.duration} s each, both servers up throughout`;
    await alternating(
      title,
      setups.map((setup, i) => ({ ...setup, scenario, pid: servers[i].pid })),
    );
  } finally {
    for (const server of servers) server.kill('SIGTERM');
    await Promise.all(
      servers.map((server) => new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)))),
    );
  }
}

/**
 * has-paid (license + domain) against two servers on the same database, ANALYTICS_ENABLED=false and
 * true, both running throughout, in alternating rounds: the cost of counting every answer
 * (docs/analytics.md#cost) as the second's req/s over the first's.
 */
async function analyticsPair(url, info, basePort) {
  const setups = [
    { name: 'analytics off', port: basePort, env: { ANALYTICS_ENABLED: 'false' } },
    { name: 'analytics on', port: basePort + 1, env: { ANALYTICS_ENABLED: 'true' } },
  ];
  const servers = setups.map((setup) => startServer(url, setup.port, setup.env));
  const scenario = { name: 'has-paid (license + domain)', ...runtime(info, '') };
  try {
    await Promise.all(setups.map((setup) => waitReady(setup.port)));
    const title = `has-paid (license + domain) with analytics off and on: ${opts.pairRounds} alternating rounds of ${opts.duration} s each, both servers up throughout`;
    await alternating(
      title,
      setups.map((setup, i) => ({ ...setup, scenario, pid: servers[i].pid })),
    );
  } finally {
    for (const server of servers) server.kill('SIGTERM');
    await Promise.all(
      servers.map((server) => new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)))),
    );
  }
}

/** A floor server of scripts/ (`script`) answering `answer` on `port`, with `npm start`'s node flags. */
const floor = (script, answer, port) =>
  spawn(
    process.execPath,
    [...startFlags(), new URL(`./${script}`, import.meta.url).pathname, JSON.stringify(answer), String(port)],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );

/** Resolves when the floor server says it listens. */
const ready = (child, what) =>
  new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', () => reject(new Error(`${what} did not start`)));
  });

/**
 * has-paid (license + domain) against a bare node:http server that answers every call with the bytes
 * has-paid answered for the first license of the pool (status, headers, body), in alternating rounds
 * with the same requests (docs/benchmarks.md#the-runtime-check-against-a-bare-server): what Node itself
 * costs per call, and how much of the rest is ours. The floor server (scripts/floor-server.mjs) runs
 * in the same rounds: the least a license check does per call, given the same answer and the pool's
 * keys. All three are single processes with `npm start`'s flags.
 */
async function barePair(url, info, basePort) {
  const server = startServer(url, basePort);
  let bare = null;
  let least = null;
  try {
    await waitReady(basePort);
    const [first] = info.pool;
    const sample = await fetch(`http://127.0.0.1:${basePort}/api/v1/project/has-paid`, {
      method: 'POST',
      headers: { accept: 'application/json', 'x-license-key': first.uuid, 'x-service-domain': first.domain },
    });
    const body = await sample.text();
    const headers = {};
    for (const [name, value] of sample.headers)
      if (!['date', 'connection', 'keep-alive'].includes(name)) headers[name] = value;
    bare = floor('bare-server.mjs', { status: sample.status, headers, body }, basePort + 1);
    const keys = info.pool.map((license) => license.uuid);
    least = floor('floor-server.mjs', { status: sample.status, headers, body, keys }, basePort + 2);
    // Both listened for at once: a message that came before its listener would be lost.
    await Promise.all([ready(bare, 'the bare server'), ready(least, 'the floor server')]);
    log(`bare server answers ${sample.status}, ${Buffer.byteLength(body)} bytes: ${body}`);
    const scenario = { name: 'has-paid (license + domain)', ...runtime(info, '') };
    const [, floorRun, check] = await alternating(
      `has-paid (license + domain) against a bare node:http server answering the same bytes, and against the least a license check does (scripts/floor-server.mjs): ${opts.pairRounds} alternating rounds of ${opts.duration} s each`,
      [
        { name: 'bare node:http', port: basePort + 1, scenario, pid: bare.pid },
        { name: "a check's floor", port: basePort + 2, scenario, pid: least.pid },
        { name: 'has-paid', port: basePort, scenario, pid: server.pid },
      ],
    );
    const cpu = Number.isFinite(check.cpuUs / floorRun.cpuUs)
      ? `; CPU per answer ${check.cpuUs.toFixed(0)} against ${floorRun.cpuUs.toFixed(0)} µs, ${(check.cpuUs / floorRun.cpuUs).toFixed(2)} ×`
      : '';
    console.log(`\nhas-paid × the floor: ${(check.rps / floorRun.rps).toFixed(2)} (req/s)${cpu}`);
  } finally {
    for (const child of [server, bare, least]) {
      if (!child || child.exitCode !== null) continue;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
}

/**
 * GET /api/v1/ against a stock NestJS application on Express (scripts/stock-nest.mjs) answering the
 * same body and headers, in alternating rounds: what a management call pays beyond Nest's own
 * pipeline. The service runs at its defaults (LOG_LEVEL info: one access line per request, to
 * /dev/null here), so the access log's cost is in the figure (docs/benchmarks.md#the-management-path-against-a-stock-nest-app).
 */
async function nestPair(url, info, basePort) {
  const server = startServer(url, basePort, { LOG_LEVEL: 'info' });
  let nest = null;
  try {
    await waitReady(basePort);
    const sample = await fetch(`http://127.0.0.1:${basePort}/api/v1/`, {
      headers: { accept: 'application/json' },
    });
    const body = await sample.text();
    const headers = {};
    for (const [name, value] of sample.headers)
      if (
        !['date', 'connection', 'keep-alive', 'x-request-id'].includes(name) &&
        !name.startsWith('x-ratelimit')
      )
        headers[name] = value;
    nest = floor('stock-nest.mjs', { status: sample.status, headers, body }, basePort + 1);
    await ready(nest, 'the stock Nest app');
    log(`stock Nest app answers ${sample.status}, ${Buffer.byteLength(body)} bytes: ${body}`);
    const scenario = { name: 'GET /', method: 'GET', path: '/api/v1/' };
    await alternating(
      `GET / against a stock NestJS 12 + Express app answering the same bytes, the service at LOG_LEVEL=info: ${opts.pairRounds} alternating rounds of ${opts.duration} s each`,
      [
        { name: 'stock Nest', port: basePort + 1, scenario, pid: nest.pid },
        { name: 'GET / (LicenseGate)', port: basePort, scenario, pid: server.pid },
      ],
    );
  } finally {
    for (const child of [server, nest]) {
      if (!child || child.exitCode !== null) continue;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
}

/**
 * Latency at a steady rate (scripts/paced-load.mjs): has-paid and metered usage carrying a stated
 * number of calls a second, the calls due at even intervals whether or not the ones before were
 * answered, each latency counted from when the call was due. The scenarios above drive a closed loop
 * of 50 connections at saturation, where a call's latency is the queue of the 50 before it; this asks
 * how long a call waits while the service carries R a second (docs/benchmarks.md#latency-at-a-steady-rate).
 */
const STEADY_RATES = [
  { scenario: 'has-paid (license + domain)', rates: [1000, 2500, 5000] },
  { scenario: 'POST /license/usage (a new idempotency key per call)', rates: [1000, 2000, 3000] },
  { scenario: 'GET /', rates: [1000, 2000] },
];

async function steadyRates(url, info, port) {
  const server = startServer(url, port);
  try {
    await waitReady(port);
    const byName = new Map(scenarios(info).map((scenario) => [scenario.name, scenario]));
    const rows = [];
    for (const { scenario: name, rates } of STEADY_RATES) {
      const requests = requestsOf(byName.get(name));
      for (const rate of rates) {
        const load = { port, requests, rate, connections: opts.connections };
        await paced({ ...load, duration: opts.warmup });
        const cpuBefore = cpuSeconds(server.pid);
        const r = await paced({ ...load, duration: opts.duration });
        const cpuUs = ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / r.answered;
        log(
          `${name} at ${rate}/s: ${Math.round(r.rate)} answered/s p50 ${r.p50} p99 ${r.p99} max ${r.max} ms, ${cpuUs.toFixed(0)} µs/call${r.non2xx ? ` non2xx ${r.non2xx}` : ''}${r.errors ? ` errors ${r.errors}` : ''}`,
        );
        rows.push({ name, asked: rate, ...r, cpuUs });
      }
    }
    console.log(
      `\nLatency at a steady rate: calls due at even intervals over ${opts.connections} keep-alive connections, ${opts.duration} s after ${opts.warmup} s at the same rate; ms from when each call was due\n`,
    );
    console.log(
      '| scenario | rate asked /s | answered /s | p50 ms | p90 ms | p99 ms | max ms | found every connection busy | server CPU µs/call | non-2xx |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of rows)
      console.log(
        `| ${r.name} | ${r.asked} | ${Math.round(r.rate)} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.max} | ${(r.late * 100).toFixed(1)} % | ${r.cpuUs.toFixed(0)} | ${r.non2xx + r.errors} |`,
      );
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
  }
}

/**
 * has-paid without and with X-Service-Nonce on one server, in alternating rounds (issue: a signed
 * answer's cost is read as its req/s against the unsigned check's in the same run).
 */
async function signedPair(url, info, port) {
  const server = startServer(url, port);
  try {
    await waitReady(port);
    const title = `has-paid (license + domain) unsigned and signed: ${opts.pairRounds} alternating rounds of ${opts.duration} s each, one server`;
    await alternating(title, [
      {
        name: 'unsigned',
        port,
        pid: server.pid,
        scenario: { name: 'has-paid (license + domain)', ...runtime(info, '') },
      },
      {
        name: 'signed (nonce per request)',
        port,
        pid: server.pid,
        scenario: { name: 'has-paid signed (nonce per request)', ...signedRuntime(info, '') },
      },
    ]);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

/**
 * has-paid for `billing: project` licenses (the project's registered domains answer) and for
 * `billing: license` licenses (the license's own flag, called from unregistered buyers' sites counted
 * by registrable domain) on one server, in alternating rounds: the cost of a license that carries its
 * own payment, as the second's req/s over the first's (docs/benchmarks.md).
 */
async function billingPair(url, info, port) {
  const server = startServer(url, port);
  try {
    await waitReady(port);
    const title = `has-paid billing: project and billing: license: ${opts.pairRounds} alternating rounds of ${opts.duration} s each, one server`;
    await alternating(title, [
      {
        name: 'billing: project',
        port,
        pid: server.pid,
        scenario: { name: 'has-paid (license + domain)', ...runtime(info, '') },
      },
      {
        name: 'billing: license',
        port,
        pid: server.pid,
        scenario: { name: 'has-paid billing: license', ...runtime({ ...info, pool: info.billingPool }, '') },
      },
    ]);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

/**
 * Each entry's scenario against its port, opts.pairRounds times, in alternating order (first, second;
 * then second, first; …) so that the drift of a shared machine falls on both alike. Prints each
 * round, then a table with the mean req/s and each one's ratio to the first entry.
 */
async function alternating(title, entries) {
  const rounds = entries.map(() => []);
  for (let r = 0; r < opts.pairRounds; r++) {
    const order = r % 2 === 0 ? entries.map((_, i) => i) : entries.map((_, i) => entries.length - 1 - i);
    for (const i of order) {
      const result = await drive(
        entries[i].port,
        entries[i].scenario,
        r === 0 ? opts.warmup : 1,
        entries[i].pid ?? null,
      );
      log(
        `round ${r + 1}, ${entries[i].name}: ${Math.round(result.rps)} req/s p50 ${result.p50} ms p99 ${result.p99} ms${Number.isFinite(result.cpuUs) ? ` server CPU ${result.cpuUs.toFixed(0)} µs/req` : ''}${result.non2xx ? ` non2xx ${result.non2xx}` : ''}`,
      );
      rounds[i].push(result);
    }
  }
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  const summary = rounds.map((list) => ({
    rps: mean(list.map((x) => x.rps)),
    p99: list.map((x) => x.p99),
    rounds: list.map((x) => Math.round(x.rps)),
    cpuUs: median(list.map((x) => x.cpuUs)),
  }));
  console.log(`\n${title}\n`);
  console.log(
    `| setup | req/s (mean) | each round | p99 ms, each round | median p99 ms | server CPU µs/req (median) | × ${entries[0].name} |\n|---|---:|---|---|---:|---:|---:|`,
  );
  entries.forEach((entry, i) => {
    const { rps, rounds: each, p99, cpuUs } = summary[i];
    console.log(
      `| ${entry.name} | ${Math.round(rps)} | ${each.join(', ')} | ${p99.join(', ')} | ${median(p99)} | ${Number.isFinite(cpuUs) ? cpuUs.toFixed(0) : '–'} | ${(rps / summary[0].rps).toFixed(2)} |`,
    );
  });
  return summary;
}

/**
 * --soak MINUTES: a mixed load for minutes on end against the server started as `npm start` starts
 * it, with its defaults (LOG_LEVEL info, default rate limits, the webhook dispatcher in process),
 * its stdout read by this process as a log collector would read it. One setting differs:
 * WEBHOOK_ALLOW_PRIVATE=true, because the webhook receiver is this process, on 127.0.0.1.
 *
 * Each connection cycles through one list: runtime checks (plain, signed, with injectables), the injectable
 * stream, management reads (a project, its licenses, its domains, its deliveries) and writes (a
 * license PATCH, which also sends a webhook), spread over 300 API keys so that the default 600
 * calls a minute per key are not what is measured. Every 10 s: RSS, the event loop's delay p99 (from
 * the server's /metrics, which resets it each scrape), answers per second by status class, log lines
 * read and dropped, webhooks received. Printed as a table and drawn as an SVG chart.
 */
async function soak(minutes, port) {
  const received = { count: 0 };
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.count++;
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const webhookUrl = `http://127.0.0.1:${receiver.address().port}/hook`;
  const db = await createDatabase('soak');
  const info = await seed(db.url, opts, { webhookUrl, webhookProjects: 10, apiKeys: 300 });
  const child = spawn(process.execPath, [...startFlags(), 'dist/src/main.js'], {
    env: { ...process.env, PORT: String(port), DATABASE_URL: db.url, APP_KEY, WEBHOOK_ALLOW_PRIVATE: 'true' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs = { lines: 0 };
  child.stdout.on('data', (chunk) => {
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) logs.lines++;
  });
  const samples = [];
  try {
    await waitReady(port);
    const requests = soakRequests(info);
    const window = { responses: 0, byClass: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 } };
    const totals = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
    const run = autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: opts.connections,
      requests,
      duration: minutes * 60,
    });
    run.on('response', (_client, status) => {
      const cls = `${Math.floor(status / 100)}xx`;
      window.responses++;
      window.byClass[cls] = (window.byClass[cls] ?? 0) + 1;
      totals[cls] = (totals[cls] ?? 0) + 1;
    });
    const started = Date.now();
    let lastLines = 0;
    let lastReceived = 0;
    const sample = async () => {
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
      const metric = (name) =>
        Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1] ?? NaN);
      const row = {
        t: Math.round((Date.now() - started) / 1000),
        rps: Math.round(window.responses / 10),
        rss: currentRss(child.pid),
        lagP99: metric('licensegate_nodejs_eventloop_lag_p99_seconds') * 1000,
        non2xx: window.responses - window.byClass['2xx'],
        status5xx: window.byClass['5xx'],
        logLines: logs.lines - lastLines,
        dropped: metric('licensegate_log_lines_dropped_total'),
        webhooks: received.count - lastReceived,
        heap: metric('licensegate_nodejs_heap_size_used_bytes') / 2 ** 20,
        heapTotal: metric('licensegate_nodejs_heap_size_total_bytes') / 2 ** 20,
        external: metric('licensegate_nodejs_external_memory_bytes') / 2 ** 20,
      };
      lastLines = logs.lines;
      lastReceived = received.count;
      window.responses = 0;
      window.byClass = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
      samples.push(row);
      log(
        `t=${row.t}s ${row.rps} req/s rss ${row.rss.toFixed(0)} MB lag p99 ${row.lagP99.toFixed(1)} ms non-2xx ${row.non2xx} 5xx ${row.status5xx} log lines ${row.logLines} dropped ${row.dropped} webhooks ${row.webhooks} heap ${row.heap.toFixed(0)}/${row.heapTotal.toFixed(0)} MB external ${row.external.toFixed(0)} MB`,
      );
    };
    const timer = setInterval(() => void sample(), 10_000);
    await run;
    clearInterval(timer);
    const rows = samples;
    console.log(
      `\nSoak: ${minutes} min, ${opts.connections} connections, ${opts.db}, npm start's defaults (LOG_LEVEL=info, default rate limits) but WEBHOOK_ALLOW_PRIVATE=true\n`,
    );
    console.log(
      '| t (s) | req/s | RSS MB | event-loop p99 ms | non-2xx | 5xx | log lines | dropped (total) | webhooks |',
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows)
      console.log(
        `| ${r.t} | ${r.rps} | ${r.rss.toFixed(0)} | ${r.lagP99.toFixed(1)} | ${r.non2xx} | ${r.status5xx} | ${r.logLines} | ${r.dropped} | ${r.webhooks} |`,
      );
    const at = (sec) =>
      rows.reduce((best, r) => (Math.abs(r.t - sec) < Math.abs(best.t - sec) ? r : best), rows[0]);
    const from = at(120);
    const to = rows[rows.length - 1];
    const maxRss = Math.max(...rows.map((r) => r.rss));
    const drift = ((to.rss - from.rss) / from.rss) * 100;
    const lagSorted = rows.map((r) => r.lagP99).sort((a, b) => a - b);
    console.log(
      `\nRSS at ${from.t} s ${from.rss.toFixed(0)} MB, at ${to.t} s ${to.rss.toFixed(0)} MB (${drift >= 0 ? '+' : ''}${drift.toFixed(1)} %), peak ${maxRss.toFixed(0)} MB; ` +
        `req/s median ${median(rows.map((r) => r.rps))}; event-loop p99 median ${median(lagSorted).toFixed(1)} ms, worst ${lagSorted[lagSorted.length - 1].toFixed(1)} ms; ` +
        `answers ${Object.entries(totals)
          .map(([k, v]) => `${k} ${v}`)
          .join(
            ', ',
          )}; log lines read ${logs.lines}, dropped ${to.dropped}; webhooks received ${received.count}`,
    );
    console.log(
      `flat within 10 % from minute 2: ${Math.abs(drift) <= 10 ? 'yes' : 'NO'}; under 250 MB: ${maxRss < 250 ? 'yes' : 'NO'}`,
    );
    const file = opts.svg ?? `soak-${new Date().toISOString().slice(0, 10)}.svg`;
    writeFileSync(
      file,
      soakChart(
        rows,
        `LicenseGate soak ${new Date().toISOString().slice(0, 10)}: ${minutes} min, ${opts.connections} connections, ${opts.db}, npm start defaults`,
      ),
    );
    console.log(`chart: ${file}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    receiver.close();
    await db.drop();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const currentRss = (pid) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

function soakRequests(info) {
  const list = [];
  const json = { 'content-type': 'application/json' };
  let k = 0;
  const key = () => ({ 'x-api-key': info.apiKeys[k++ % info.apiKeys.length] });
  const licenses = info.writable;
  for (let i = 0; i < 2000; i++) {
    const l = info.pool[i % info.pool.length];
    const runtimeHeaders = { 'x-license-key': l.uuid, 'x-service-domain': l.domain };
    const w = licenses[i % licenses.length];
    const slot = i % 20;
    if (slot < 12) list.push({ method: 'POST', path: '/api/v1/project/has-paid', headers: runtimeHeaders });
    else if (slot === 12)
      list.push({
        method: 'POST',
        path: '/api/v1/project/has-paid',
        headers: { ...runtimeHeaders, 'x-service-nonce': randomBytes(24).toString('base64url') },
      });
    else if (slot === 13)
      list.push({
        method: 'POST',
        path: '/api/v1/project/has-paid?action=check_project&include=injectables',
        headers: runtimeHeaders,
      });
    else if (slot === 14)
      list.push({ method: 'GET', path: '/api/v1/injectable/stream', headers: { 'x-license-key': l.uuid } });
    else if (slot === 15)
      list.push({ method: 'GET', path: `/api/v1/project/${w.project_id}`, headers: key() });
    else if (slot === 16)
      list.push({ method: 'GET', path: `/api/v1/project/${w.project_id}/licenses`, headers: key() });
    else if (slot === 17)
      list.push({ method: 'GET', path: `/api/v1/project/${w.project_id}/domains`, headers: key() });
    else if (slot === 18)
      list.push({
        method: 'GET',
        path: `/api/v1/project/${w.project_id}/webhook-deliveries?per_page=10`,
        headers: key(),
      });
    else
      list.push({
        method: 'PATCH',
        path: `/api/v1/project/${w.project_id}/licenses/${w.id}`,
        headers: { ...json, ...key() },
        body: JSON.stringify({ max_usage_per_day: null }),
      });
  }
  return list;
}

/** Three stacked line charts over time: RSS, answers per second, event-loop delay p99. */
function soakChart(rows, title) {
  const width = 900;
  const panel = 170;
  const left = 70;
  const right = 20;
  const top = 40;
  const gap = 40;
  const tMax = Math.max(...rows.map((r) => r.t), 1);
  const x = (t) => left + ((width - left - right) * t) / tMax;
  const series = [
    { label: 'RSS (MB)', value: (r) => r.rss, color: '#1f77b4', limit: 250 },
    { label: 'answers per second', value: (r) => r.rps, color: '#2ca02c' },
    { label: 'event-loop delay p99 (ms)', value: (r) => r.lagP99, color: '#d62728' },
  ];
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${top + series.length * (panel + gap)}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="20" font-size="14">${title}</text>`,
  ];
  series.forEach((s, i) => {
    const y0 = top + i * (panel + gap);
    const values = rows.map(s.value).filter((v) => Number.isFinite(v));
    const vMax = Math.max(...values, s.limit ?? 0) * 1.1 || 1;
    const y = (v) => y0 + panel - (panel * v) / vMax;
    parts.push(`<text x="${left}" y="${y0 - 6}">${s.label}</text>`);
    parts.push(
      `<line x1="${left}" y1="${y0 + panel}" x2="${width - right}" y2="${y0 + panel}" stroke="#999"/><line x1="${left}" y1="${y0}" x2="${left}" y2="${y0 + panel}" stroke="#999"/>`,
    );
    for (const frac of [0, 0.5, 1])
      parts.push(
        `<text x="${left - 6}" y="${y((vMax * frac) / 1.1) + 4}" text-anchor="end">${Math.round((vMax * frac) / 1.1)}</text>`,
      );
    if (s.limit)
      parts.push(
        `<line x1="${left}" y1="${y(s.limit)}" x2="${width - right}" y2="${y(s.limit)}" stroke="${s.color}" stroke-dasharray="4 4" opacity="0.6"/>`,
      );
    const points = rows
      .filter((r) => Number.isFinite(s.value(r)))
      .map((r) => `${x(r.t).toFixed(1)},${y(s.value(r)).toFixed(1)}`)
      .join(' ');
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${points}"/>`);
  });
  const yAxis = top + series.length * (panel + gap) - gap + 16;
  for (let m = 0; m <= tMax / 60; m++)
    parts.push(`<text x="${x(m * 60)}" y="${yAxis}" text-anchor="middle">${m} min</text>`);
  parts.push('</svg>');
  return parts.join('\n');
}

/**
 * --baseline DIR: this build against another build of the service (DIR holds its own dist/, built from
 * the commit to compare with), on one database seeded by this build, so both serve the same rows.
 * Each round starts each build's server afresh and measures GET / and the runtime scenarios (--only
 * narrows them) as runScenarios does, each against GET / right before and after it; the order of the
 * two builds alternates from round to round, so the VM's drift does not favour one. Prints every run
 * and, per scenario, each build's median ratio to GET / and median server CPU time per answer, and the
 * changes. On a shared machine the CPU time per answer is the steadier of the two: other tenants slow
 * the server down, they do not make it do more work per answer.
 */
async function compare(baseline, port) {
  if (!existsSync(join(baseline, 'dist/src/main.js'))) {
    console.error(`--baseline ${baseline}: no dist/src/main.js there (build it first)`);
    process.exit(1);
  }
  const db = await createDatabase('compare');
  try {
    const info = await seed(db.url, opts);
    // GET / and the has-paid scenarios; with --only, metered usage may be picked too.
    const list = scenarios(info)
      .slice(0, 6)
      .filter((s, i) => i === 0 || (opts.only ? s.name.includes(opts.only) : i < 4));
    const builds = [
      { name: 'baseline', root: baseline },
      { name: 'this build', root: null },
    ];
    const runs = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 === 1 ? builds : [...builds].reverse();
      for (const build of order) {
        log(`round ${round}: ${build.name}`);
        const [, ...rows] = await runScenarios(db.url, info, list, port, build.root);
        for (const row of rows) runs.push({ round, build: build.name, ...row });
      }
    }
    console.log(
      `\nbaseline: ${baseline}; ${opts.licenses} licenses, ${opts.projects} projects, ${opts.domains} domains, ${opts.rounds} rounds\n`,
    );
    console.log(
      '| round | build | scenario | req/s | p50 ms | p99 ms | server CPU µs/req | GET / around it, req/s | × GET / |\n|---:|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of runs) {
      console.log(
        `| ${r.round} | ${r.build} | ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.cpuUs.toFixed(0)} | ${Math.round(r.root)} | ${(r.rps / r.root).toFixed(2)} |`,
      );
    }
    // Medians (of an even count, the mean of the middle two): one round caught in a slow phase of the VM moves a mean, not a median.
    const middle = (values) => {
      const sorted = [...values].sort((a, b) => a - b);
      const half = Math.floor(sorted.length / 2);
      return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
    };
    console.log(
      '\n| scenario | baseline × GET / | this build × GET / | change | baseline CPU µs/req | this build CPU µs/req | change |\n|---|---:|---:|---:|---:|---:|---:|',
    );
    const pct = (before, after) =>
      `${after >= before ? '+' : ''}${((after / before - 1) * 100).toFixed(1)} %`;
    for (const scenario of list.slice(1)) {
      const of = (build, value) =>
        middle(runs.filter((r) => r.build === build && r.name === scenario.name).map(value));
      const [ratioBefore, ratioAfter] = [
        of('baseline', (r) => r.rps / r.root),
        of('this build', (r) => r.rps / r.root),
      ];
      const [cpuBefore, cpuAfter] = [of('baseline', (r) => r.cpuUs), of('this build', (r) => r.cpuUs)];
      console.log(
        `| ${scenario.name} | ${ratioBefore.toFixed(2)} | ${ratioAfter.toFixed(2)} | ${pct(ratioBefore, ratioAfter)} | ${cpuBefore.toFixed(0)} | ${cpuAfter.toFixed(0)} | ${pct(cpuBefore, cpuAfter)} |`,
      );
    }
  } finally {
    await db.drop();
  }
}

if (opts.soak > 0) {
  await soak(opts.soak, port);
  process.exit(0);
}

if (opts.baseline) {
  console.log(
    `LicenseGate bench, this build against ${opts.baseline} — ${new Date().toISOString()} — node ${process.version} ${startFlags().join(' ')}, ${opts.db}, ${opts.connections} connections, ${opts.duration} s after ${opts.warmup} s warm-up`,
  );
  await compare(resolve(opts.baseline), port);
  process.exit(0);
}

console.log(
  `LicenseGate bench — ${new Date().toISOString()} — node ${process.version} ${startFlags().join(' ')}, ${opts.db}, ${opts.workers > 1 ? `${opts.workers} workers + Redis, ` : ''}${opts.connections} connections, ${opts.duration} s after ${opts.warmup} s warm-up`,
);
const main = await createDatabase('main');
try {
  const info = await seed(main.url, opts);
  console.log(
    `\n${opts.licenses} licenses, ${opts.projects} projects, ${opts.domains} domains, ${opts.injectables} injectables\n`,
  );
  if (!opts.pairsOnly) {
    const list = scenarios(info).filter((s, i) => i === 0 || !opts.only || s.name.includes(opts.only));
    console.log(table(await runScenarios(main.url, info, list, port)));
  }
  if (opts.signedPair && opts.workers === 1 && (!opts.only || 'has-paid signed'.includes(opts.only)))
    await signedPair(main.url, info, port + 4);
  if (opts.billingPair && opts.workers === 1 && (!opts.only || 'has-paid billing'.includes(opts.only)))
    await billingPair(main.url, info, port + 11);
  if (opts.barePair && opts.workers === 1 && (!opts.only || 'has-paid bare'.includes(opts.only)))
    await barePair(main.url, info, port + 6);
  if (opts.nestPair && opts.workers === 1 && (!opts.only || 'GET / nest'.includes(opts.only)))
    await nestPair(main.url, info, port + 8);
  if (opts.steadyRates && opts.workers === 1 && (!opts.only || 'steady rate'.includes(opts.only)))
    await steadyRates(main.url, info, port + 12);
  if (opts.analyticsPair && opts.workers === 1 && (!opts.only || 'has-paid analytics'.includes(opts.only)))
    await analyticsPair(main.url, info, port + 5);
  if (opts.planPair && opts.workers === 1 && (!opts.only || 'has-paid plan'.includes(opts.only)))
    await planPair(main.url, info, port + 10);
  if (opts.redisPair && opts.workers === 1) await redisPair(main.url, info, port + 2);
} finally {
  await main.drop();
}

if (opts.growth) {
  const results = [];
  for (const licenses of [1000, 1_000_000]) {
    const db = await createDatabase(`g${licenses}`);
    try {
      const info = await seed(db.url, { ...opts, licenses, injectables: 0 });
      const [, hasPaid] = await runScenarios(db.url, info, scenarios(info).slice(0, 2), port + 1);
      results.push({ licenses, rps: hasPaid.rps, p99: hasPaid.p99, root: hasPaid.root });
    } finally {
      await db.drop();
    }
  }
  console.log('\nhas-paid (license + domain) as the license table grows\n');
  console.log('| licenses | req/s | p99 ms | × GET / |\n|---:|---:|---:|---:|');
  for (const r of results)
    console.log(`| ${r.licenses} | ${Math.round(r.rps)} | ${r.p99} | ${(r.rps / r.root).toFixed(2)} |`);
  console.log(`\n1M vs 1k: ${((results[1].rps / results[0].rps - 1) * 100).toFixed(1)} %`);
}
