import 'reflect-metadata';
import cluster from 'node:cluster';
import { resolve } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.js';
import { setupApp } from './app.setup.js';
import { AppConfig, ConfigError, loadConfig, loadEnvFile } from './config/app-config.js';

function configOrExit(): AppConfig {
  loadEnvFile();
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

async function serve(config: AppConfig): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    bufferLogs: true,
  });
  setupApp(app);
  // Operators take heap snapshots with SIGUSR2 (README "Signals"); unhandled, it would end the process.
  const logger = new Logger('Signals');
  process.on('SIGUSR2', () => {
    const started = Date.now();
    const file = resolve(writeHeapSnapshot());
    logger.warn({ file, ms: Date.now() - started }, `Heap snapshot written to ${file}`);
  });
  await app.listen(config.env.PORT);
}

/**
 * CLUSTER_WORKERS=N: the primary forks N workers sharing the port and replaces any that dies; on
 * SIGTERM, SIGINT or SIGHUP it asks every worker to finish its in-flight requests and exit, and it passes
 * SIGUSR2 on to every worker.
 */
function supervise(workers: number): void {
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    process.stderr.write(`worker ${worker.process.pid} exited (${signal ?? code}); starting a new one\n`);
    setTimeout(fork, 500);
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

const config = configOrExit();
if (cluster.isPrimary && config.env.CLUSTER_WORKERS > 1) {
  supervise(config.env.CLUSTER_WORKERS);
} else {
  void serve(config);
}
