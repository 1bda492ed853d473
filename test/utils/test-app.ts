import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module.js';
import { setupApp } from '../../src/app.setup.js';
import { AppConfig, loadConfig } from '../../src/config/app-config.js';
import type { Clock } from '../../src/common/time.js';

export const TEST_DB = process.env.TEST_DB === 'mysql' ? 'mysql' : 'sqlite';
const MYSQL_URL = process.env.TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/test';

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  dataSource: DataSource;
  /** supertest bound to the running server */
  http: () => ReturnType<typeof request>;
  url: string;
  close: () => Promise<void>;
}

/** A database of its own for one test file: a temp SQLite file, or a fresh MySQL database. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  if (TEST_DB === 'sqlite') {
    const file = join(tmpdir(), `licensegate-test-${suffix}.sqlite`);
    return {
      url: `sqlite:${file}`,
      drop: async () => {
        for (const ext of ['', '-wal', '-shm']) rmSync(file + ext, { force: true });
      },
    };
  }
  const server = new URL(MYSQL_URL);
  const name = `lg_test_${suffix}`;
  const admin = await mysql.createConnection({
    host: server.hostname,
    port: Number(server.port || 3306),
    user: decodeURIComponent(server.username),
    password: decodeURIComponent(server.password),
  });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await admin.end();
  const url = new URL(MYSQL_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const conn = await mysql.createConnection({
        host: server.hostname,
        port: Number(server.port || 3306),
        user: decodeURIComponent(server.username),
        password: decodeURIComponent(server.password),
      });
      await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await conn.end();
    },
  };
}

const APP_KEY = randomBytes(32).toString('base64');

export interface TestAppOptions {
  /**
   * Run on this existing database (e.g. another TestApp's `config.env.DATABASE_URL`) instead of a
   * fresh one; it is left in place on close, for its creator to drop.
   */
  databaseUrl?: string;
  /** false: the runtime check goes through Express's router like every other route (setupApp's option). */
  runtimeFastPath?: boolean;
  /** The app's clock (default: the real one); a ManualClock (test/utils/clock.ts) lets a test move time. */
  clock?: Clock;
  /**
   * Listen on this port (e.g. from freePort()) instead of any free one: for a PUBLIC_URL that must be
   * the app's own address, as where a browser is sent back to it (SSO).
   */
  port?: number;
}

/**
 * Boots the real AppModule in-process on its own database and an ephemeral port, or on a shared
 * database when `options.databaseUrl` is given (several instances of one deployment).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const db = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => undefined }
    : await createTestDatabase();
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      APP_KEY,
      DATABASE_URL: db.url,
      THROTTLE_ROOT_LIMIT: '1000',
      // Test files send many made-up keys from one address; the default (60) is tested on its own.
      THROTTLE_AUTH_FAILURES_LIMIT: '100000',
      ...env,
    },
    () => undefined,
  );
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, options.clock), {
    bodyParser: false,
    logger: false,
  });
  setupApp(app, { runtimeFastPath: options.runtimeFastPath });
  await app.listen(options.port ?? 0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    app,
    config,
    dataSource: app.get(DataSource),
    http: () => request(url),
    url,
    close: async () => {
      await app.close();
      await db.drop();
    },
  };
}
