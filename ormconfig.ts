// The TypeORM CLI data source: `npx typeorm migration:run -d dist/ormconfig.js` (after `npm run build`).
// It reuses the app's own options, so the CLI and the service always agree.
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig, loadEnvFile } from './src/config/app-config.js';
import { dataSourceOptions } from './src/database/data-source-options.js';

loadEnvFile();
export default new DataSource(dataSourceOptions(loadConfig().env.DATABASE_URL));
