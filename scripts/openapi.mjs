// Writes openapi.json (the contract admin-UI clients are generated from) from the compiled app, or with
// --check fails when the committed file differs from what the code describes. Run after `npm run build`.
// The app is created but never listens; an in-memory SQLite database and a fixed APP_KEY make it run anywhere.
import 'reflect-metadata';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'openapi.json');
const check = process.argv.includes('--check');

if (!existsSync(join(root, 'dist/src/common/openapi/document.js'))) {
  process.stderr.write('dist/ is missing: run `npm run build` first.\n');
  process.exit(1);
}

const { NestFactory } = await import('@nestjs/core');
const { AppModule } = await import('../dist/src/app.module.js');
const { setupApp } = await import('../dist/src/app.setup.js');
const { loadConfig } = await import('../dist/src/config/app-config.js');
const { buildOpenApiDocument, serializeOpenApiDocument } =
  await import('../dist/src/common/openapi/document.js');

const config = loadConfig(
  {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: 'sqlite::memory:',
    APP_KEY: Buffer.alloc(32).toString('base64'),
    WEBHOOK_DISPATCHER: 'false',
  },
  () => undefined,
);
const app = await NestFactory.create(AppModule.forRoot(config), { bodyParser: false, logger: false });
setupApp(app);
const text = serializeOpenApiDocument(buildOpenApiDocument(app));
await app.close();

if (!check) {
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
  process.exit(0);
}

const committed = existsSync(target) ? readFileSync(target, 'utf8') : null;
if (committed === text) {
  process.stdout.write('openapi.json is up to date.\n');
  process.exit(0);
}
process.stderr.write(
  committed === null
    ? 'openapi.json is missing: run `npm run openapi && npm run openapi:types` and commit the result.\n'
    : 'openapi.json is out of date with the code: run `npm run openapi && npm run openapi:types` and commit the result.\n',
);
if (committed !== null) {
  const a = committed.split('\n');
  const b = text.split('\n');
  const first = a.findIndex((line, i) => line !== b[i]);
  process.stderr.write(
    `first difference at line ${first + 1}:\n  committed: ${a[first] ?? '<end of file>'}\n  generated: ${b[first] ?? '<end of file>'}\n`,
  );
}
process.exit(1);
