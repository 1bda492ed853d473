import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { PinoNestLogger } from './common/logging/pino-nest.js';
import { ConfigError, loadConfig, loadEnvFile } from './config/app-config.js';

/**
 * The webhook dispatcher on its own, without the HTTP server (`npm run dispatcher`), with the expiry
 * scheduler that runs wherever the dispatcher does. Any number of these may run beside the service
 * instances: rows and notices are claimed atomically (docs/decisions.md#webhooks).
 */
async function main(): Promise<void> {
  loadEnvFile();
  let config;
  try {
    config = loadConfig({ ...process.env, WEBHOOK_DISPATCHER: 'true' });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { bufferLogs: true });
  app.useLogger(new PinoNestLogger());
  app.enableShutdownHooks();
  await app.init();
}

void main();
