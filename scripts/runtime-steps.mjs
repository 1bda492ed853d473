// has-paid taken apart in one process, without the network: node scripts/runtime-steps.mjs
// [--calls 50000] [--rounds 5], after npm run build.
//
// Builds the service as main.ts does (npm start's settings, LOG_LEVEL=warn, limits no run reaches) on
// a fresh SQLite file with one project, its domain and 1,000 licenses, then calls the HTTP server's
// request listener directly: each call is a new IncomingMessage and ServerResponse on a socket that
// drops what it is given, awaited until the answer is finished. Each step answers the same
// constant envelope from a point of the runtime route on (RuntimeFastPath.hasPaid replaced):
//   node:http        a listener writing the answer's bytes with writeHead, nothing of ours;
//   middlewares      the route's middlewares and the envelope (RuntimeFastPath.serve and send);
//   + throttle       and the call counted (ThrottleGuard.count);
//   + license        and the license found (LicenseKeyGuard.find);
//   + verdict        and the gate's verdict (RuntimeGate.check, the call read by RuntimeCalls);
//   whole check      the route as it is.
// Each step's answer carries the headers set up to its point (the middlewares' answer has no
// X-RateLimit-* headers yet; node:http writes all the service's). The steps run in alternating rounds
// in the one process, each its calls in a row, with npm start's node flags; CPU per call is
// process.cpuUsage over the round, and a step that answers anything but 200 stops the run. Without the
// kernel's network work between calls, the code of one call stays in the CPU's caches: a step costs
// about half what it costs under `npm run bench`, and the steps' differences are what to read
// (docs/benchmarks.md#where-the-runtime-checks-time-goes). The route's methods see the steps' functions
// too, so the whole check runs with somewhat worse type feedback than in service.
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';

// With npm start's node flags (its heap and young generation sizes change what a call costs the GC).
const startFlags = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  .scripts.start.split(' ')
  .filter((word) => word.startsWith('--'));
if (!startFlags.every((flag) => process.execArgv.includes(flag))) {
  const run = spawnSync(
    process.execPath,
    [...startFlags, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  process.exit(run.status ?? 1);
}

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const CALLS = flag('calls', 50_000);
const ROUNDS = flag('rounds', 5);

const dist = (p) => new URL(`../dist/src/${p}`, import.meta.url).href;
if (!existsSync(new URL('../dist/src/main.js', import.meta.url))) {
  console.error('Build first: npm run build');
  process.exit(1);
}
const file = join(tmpdir(), `licensegate-steps-${process.pid}.sqlite`);
const removeDatabase = () => ['', '-wal', '-shm'].forEach((ext) => rmSync(file + ext, { force: true }));
Object.assign(process.env, {
  NODE_ENV: 'production',
  DATABASE_URL: `sqlite:${file}`,
  APP_KEY: randomBytes(32).toString('base64'),
  LOG_LEVEL: 'warn',
  WEBHOOK_DISPATCHER: 'false',
  CLUSTER_WORKERS: '1',
  THROTTLE_RUNTIME_LIMIT: '1000000000',
});

const { loadConfig } = await import(dist('config/app-config.js'));
const { dataSourceOptions } = await import(dist('database/data-source-options.js'));
const { sha256Hex } = await import(dist('common/crypto/crypto.js'));
const { newSigningKeyPair } = await import(dist('common/crypto/signing.js'));
const { UserEntity } = await import(dist('auth/user.entity.js'));
const { ProjectEntity } = await import(dist('projects/project.entity.js'));
const { DomainEntity } = await import(dist('domains/domain.entity.js'));
const { LicenseEntity } = await import(dist('licenses/license.entity.js'));
const { AppModule } = await import(dist('app.module.js'));
const { setupApp } = await import(dist('app.setup.js'));
const { RuntimeFastPath } = await import(dist('gate/runtime-fast-path.js'));
const { HasPaidController } = await import(dist('gate/has-paid.controller.js'));
const { NestFactory } = await import('@nestjs/core');
const { DataSource } = await import('typeorm');

const config = loadConfig();
const keys = Array.from({ length: 1000 }, () => randomUUID());
const DOMAIN = 'www.shop.example.com';
{
  const ds = await new DataSource(dataSourceOptions(process.env.DATABASE_URL)).initialize();
  await ds.runMigrations();
  const insert = async (entity, row) => (await ds.getRepository(entity).insert(row)).identifiers[0].id;
  const userId = await insert(UserEntity, { email: 'steps@example.test', name: 'steps' });
  const pair = newSigningKeyPair(config.appKey);
  const projectId = await insert(ProjectEntity, {
    user_id: userId,
    name: 'Steps',
    slug: 'steps',
    default_redirect_url: 'https://example.com/pay',
    meta: {},
    has_paid: true,
    signing_public_key: pair.publicPem,
    signing_private_key: pair.sealedPrivate,
  });
  await ds
    .getRepository(DomainEntity)
    .insert({ project_id: projectId, domain: 'shop.example.com', has_paid: true, is_primary: true });
  const licenses = keys.map((uuid, i) => ({
    project_id: projectId,
    user_id: userId,
    uuid,
    uuid_hash: sha256Hex(uuid),
    title: `License ${i}`,
  }));
  // In chunks: TypeORM reads the inserted rows back with one condition per row.
  for (let i = 0; i < licenses.length; i += 100)
    await ds.getRepository(LicenseEntity).insert(licenses.slice(i, i + 100));
  await ds.destroy();
}

const app = await NestFactory.create(AppModule.forRoot(config), {
  bodyParser: false,
  logger: ['error', 'warn'],
});
setupApp(app);
await app.init();
const [service] = app.getHttpServer().listeners('request');

/** A socket that takes every write and drops it. */
class Discard extends Duplex {
  remoteAddress = '127.0.0.1';
  remotePort = 40000;
  _read() {}
  _write(_chunk, _encoding, done) {
    done();
  }
  _writev(_chunks, done) {
    done();
  }
}
const socket = new Discard();
const HEADERS = { host: '127.0.0.1:3000', 'x-license-key': '', 'x-service-domain': DOMAIN, accept: '*/*' };

/** One has-paid call through `listener`: its status once the answer is finished. */
function call(listener, key) {
  const req = new IncomingMessage(socket);
  req.method = 'POST';
  req.url = '/api/v1/project/has-paid';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  req.headers = { ...HEADERS, 'x-license-key': key };
  req.rawHeaders = Object.entries(req.headers).flat();
  req.complete = true;
  req.push(null);
  const res = new ServerResponse(req);
  res.shouldKeepAlive = true;
  res.assignSocket(socket);
  return new Promise((resolve) => {
    res.on('finish', () => {
      res.detachSocket(socket);
      resolve(res);
    });
    listener(req, res);
  });
}

const first = await call(service, keys[0]);
const sample = first.getHeaders();
if (first.statusCode !== 200) throw new Error(`runtime-steps: has-paid answered ${first.statusCode}`);
const DATA = { has_paid: true, is_test_license: false };
const body = JSON.stringify({ status: 'success', message: 'Success', data: DATA, errors: null });
const fixed = Object.entries(sample)
  .filter(([name]) => name !== 'content-length')
  .flatMap(([name, value]) => [name, String(value)]);

const route = RuntimeFastPath.prototype;
const whole = route.hasPaid;
const ROUTE = HasPaidController.prototype.hasPaid;
// Not the service's andThen: closures of these steps passed to it would make its call sites (the
// gate's too) see more functions than they do in service, and slow the whole check down.
const after = (value, next) => (value instanceof Promise ? value.then(next) : next(value));
const counted = (self, req, res) => self.throttle.count(req, res, ROUTE, HasPaidController);
const found = (self, req, res) => after(counted(self, req, res), () => self.licenses.find(req, res));
const steps = [
  {
    name: 'node:http',
    listener: (_req, res) => {
      res.writeHead(200, [...fixed, 'content-length', String(Buffer.byteLength(body))]);
      res.end(body);
    },
  },
  {
    name: 'middlewares',
    hasPaid(req, res) {
      this.respond(req, res, DATA);
    },
  },
  {
    name: '+ throttle',
    hasPaid(req, res) {
      this.answer(req, res, () => after(counted(this, req, res), () => DATA));
    },
  },
  {
    name: '+ license',
    hasPaid(req, res) {
      this.answer(req, res, () => after(found(this, req, res), () => DATA));
    },
  },
  {
    name: '+ verdict',
    hasPaid(req, res) {
      this.answer(req, res, () =>
        after(found(this, req, res), (entry) =>
          after(
            this.payments.gate.check(entry, (configs) => this.calls.hasPaid(req, configs), Date.now()),
            () => DATA,
          ),
        ),
      );
    },
  },
  { name: 'whole check', hasPaid: whole },
];

const cpu = new Map(steps.map((step) => [step.name, []]));
for (let round = 0; round <= ROUNDS; round++) {
  // Round 0 warms every step up; the order alternates from round to round.
  for (const step of round % 2 ? [...steps].reverse() : steps) {
    if (step.hasPaid) route.hasPaid = step.hasPaid;
    const listener = step.listener ?? service;
    let refused = 0;
    const before = process.cpuUsage();
    for (let i = 0; i < CALLS; i++)
      if ((await call(listener, keys[i % keys.length])).statusCode !== 200) refused++;
    const used = process.cpuUsage(before);
    if (refused > 0)
      throw new Error(
        `runtime-steps: ${step.name} answered ${refused} of ${CALLS} calls with another status than 200`,
      );
    if (round > 0) cpu.get(step.name).push((used.user + used.system) / CALLS);
  }
}
route.hasPaid = whole;
await app.close();
removeDatabase();

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(
  `has-paid taken apart in process: ${ROUNDS} alternating rounds of ${CALLS} calls per step, node ${process.version} ${startFlags.join(' ')}\n`,
);
console.log('| step | CPU µs per call, each round | median | more than the step before |');
console.log('|---|---|---:|---:|');
let previous = null;
for (const step of steps) {
  const values = cpu.get(step.name);
  const mid = median(values);
  const more = previous === null ? '' : `${(mid - previous).toFixed(2)}`;
  console.log(
    `| ${step.name} | ${values.map((v) => v.toFixed(2)).join(', ')} | ${mid.toFixed(2)} | ${more} |`,
  );
  previous = mid;
}
