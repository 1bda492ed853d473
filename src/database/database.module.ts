import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions, openDataSource } from './data-source-options.js';
import { Cursors } from './pagination.js';
import { UnitOfWork } from './unit-of-work.js';
import { WalCheckpoints } from './wal-checkpoints.js';

/**
 * The database: the connection (migrations run at start-up), units of work, SQLite's WAL checkpoints
 * and cursor pages. Every
 * module that runs a unit of work or pages a list imports it; Nest makes one of each for the process.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.env.DATABASE_URL, { service: true }),
        migrationsRun: true,
      }),
      dataSourceFactory: (options) => openDataSource(options!),
    }),
  ],
  providers: [
    UnitOfWork,
    WalCheckpoints,
    { provide: Cursors, inject: [AppConfig], useFactory: (config: AppConfig) => new Cursors(config.appKey) },
  ],
  exports: [UnitOfWork, Cursors],
})
export class DatabaseModule {}
