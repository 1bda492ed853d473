import 'reflect-metadata';
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { writeHeapSnapshot } from 'node:v8';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { pino } from 'pino';
import { AppModule } from './app.module.js';
import { setupApp } from './app.setup.js';
import { AppConfig, ConfigError, loadConfig, loadEnvFile } from './config/app-config.js';
import { listening, noAccountYet, sayListening } from './common/logging/listening.js';
import { SETUP_CODE_ENV, SetupService } from './auth/setup.service.js';
import { settingsHelp, unknownSettings } from './config/settings-help.js';

function configOrExit(): AppConfig {
  loadEnvFile();
  // Once, by the process that was started (cluster workers read the same environment).
  if (cluster.isPrimary)
    for (const line of unknownSettings(process.env)) process.stderr.write(`warning: ${line}\n`);
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** A port another process holds: one line saying what to do, not a stack trace. */
function portInUse(port: number): never {
  process.stderr.write(`Port ${port} is already in use: set PORT.\n`);
  process.exit(1);
}

/** Error codes of a database that cannot be reached or opened (TypeORM has retried it meanwhile). */
const DATABASE_SYSCALLS = new Set(['connect', 'getaddrinfo', 'mkdir', 'open']);
const isDatabaseFailure = (error: NodeJS.ErrnoException & { sqlState?: string }): boolean =>
  DATABASE_SYSCALLS.has(error.syscall ?? '') ||
  /^(ER_|SQLITE_|PROTOCOL_)|^ETIMEDOUT$/.test(error.code ?? '') ||
  error.sqlState !== undefined;

/**
 * Start-up failed before the app could listen. A database that cannot be opened is one line naming
 * DATABASE_URL; anything else is a fault of ours: the buffered logs (with the stack) are written.
 */
function startFailed(error: unknown): never {
  const failure = error as NodeJS.ErrnoException;
  if (failure instanceof Error && isDatabaseFailure(failure)) {
    process.stderr.write(
      `Could not start: the database (DATABASE_URL) could not be opened: ${failure.message.split('\n')[0]}\n`,
    );
  } else {
    Logger.flush();
    process.stderr.write(
      `Could not start: ${failure instanceof Error ? failure.message.split('\n')[0] : String(error)}\n`,
    );
  }
  process.exit(1);
}

/** `announce`: write the line that says where the API is (a lone process; in a cluster the primary does). */
async function serve(config: AppConfig, announce: boolean): Promise<void> {
  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
      bodyParser: false,
      bufferLogs: true,
      // Failures come back here, their logs still buffered (instead of Nest printing each retry's
      // stack and exiting); once the app's logger is set, the buffer goes to it (flushLogs below).
      abortOnError: false,
      autoFlushLogs: false,
    });
  } catch (error) {
    return startFailed(error);
  }
  setupApp(app);
  app.flushLogs();
  // Operators take heap snapshots with SIGUSR2 (docs/operations.md, "Signals"); unhandled, it would end the process.
  const logger = new Logger('Signals');
  process.on('SIGUSR2', () => {
    const started = Date.now();
    const file = resolve(writeHeapSnapshot());
    logger.warn({ file, ms: Date.now() - started }, `Heap snapshot written to ${file}`);
  });
  try {
    await app.listen(config.env.PORT);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    // A worker tells the primary, which says it once for all of them.
    if (cluster.isWorker) process.send?.({ portInUse: config.env.PORT }, () => process.exit(1));
    else portInUse(config.env.PORT);
    return;
  }
  if (announce) {
    const { msg, ...where } = listening(
      (app.getHttpServer().address() as AddressInfo).port,
      config.env.CONSOLE_ENABLED,
      config.env.DATABASE_URL,
    );
    new Logger('LicenseGate').log(where, msg);
    sayListening(msg);
  }
  // No user yet: the setup link, beside the listening line (in a cluster the primary says it).
  const code = app.get(SetupService).pendingCode;
  if (code !== null && announce) {
    const line = noAccountYet(config.publicUrl, code, config.env.CONSOLE_ENABLED);
    new Logger('LicenseGate').log({ setup: true }, line);
    sayListening(line);
  } else if (code !== null && cluster.isWorker) process.send?.({ setupNeeded: true });
}

/**
 * CLUSTER_WORKERS=N: the primary forks N workers sharing the port and replaces any that dies; on
 * SIGTERM, SIGINT or SIGHUP it asks every worker to finish its in-flight requests and exit, and it passes
 * SIGUSR2 on to every worker.
 *
 * A worker that dies before any worker has served failed to start (it wrote why: a database that
 * cannot be opened, say), and a new one would fail alike: the primary then stops the others and exits
 * 1 instead of forking forever. Once the service has served, a dead worker is replaced after 0.5 s,
 * doubling up to 30 s while replacements keep dying before they listen.
 */
const RESTART_MS = 500;
const MAX_RESTART_MS = 30_000;

function supervise(workers: number, config: AppConfig): void {
  const env = config.env;
  let stopping = false;
  let served = false;
  let restartMs = RESTART_MS;
  // One setup code for every worker, made here whether or not the database has a user (the primary
  // does not open it): a worker that finds no user takes it and says so, and the primary prints the
  // link once (docs/operations.md#the-first-account).
  const setupCode = randomBytes(32).toString('base64url');
  let setupSaid = false;
  const fork = () => cluster.fork({ [SETUP_CODE_ENV]: setupCode });
  for (let i = 0; i < workers; i++) fork();
  cluster.once('listening', (_worker, address) => {
    const { msg, ...where } = listening(address.port, env.CONSOLE_ENABLED, env.DATABASE_URL);
    pino({ level: env.LOG_LEVEL }).info({ context: 'LicenseGate', workers, ...where }, msg);
    sayListening(msg);
  });
  cluster.on('message', (_worker, message: { portInUse?: number; setupNeeded?: boolean }) => {
    if (message?.setupNeeded && !setupSaid) {
      setupSaid = true;
      const line = noAccountYet(config.publicUrl, setupCode, env.CONSOLE_ENABLED);
      pino({ level: env.LOG_LEVEL }).info({ context: 'LicenseGate', setup: true }, line);
      sayListening(line);
    }
    if (message?.portInUse === undefined || stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    portInUse(message.portInUse);
  });
  cluster.on('listening', () => {
    served = true;
    restartMs = RESTART_MS;
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (!served) {
      stopping = true;
      process.exitCode = 1;
      process.stderr.write(
        `worker ${worker.process.pid} exited (${signal ?? code}) before the service could serve: stopping\n`,
      );
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      return;
    }
    process.stderr.write(
      `worker ${worker.process.pid} exited (${signal ?? code}); starting a new one in ${restartMs} ms\n`,
    );
    setTimeout(fork, restartMs);
    restartMs = Math.min(restartMs * 2, MAX_RESTART_MS);
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
  // The heap worth a snapshot is the workers': each writes its own.
  process.on('SIGUSR2', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGUSR2');
  });
}

// --help (or -h): the settings, then exit; nothing is opened or listened on.
if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
  process.stdout.write(`${settingsHelp()}\n`);
  process.exit(0);
}

const config = configOrExit();
if (cluster.isPrimary && config.env.CLUSTER_WORKERS > 1) {
  supervise(config.env.CLUSTER_WORKERS, config);
} else {
  void serve(config, cluster.isPrimary);
}
