import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { Clock } from './time.js';

/**
 * What is truly ambient: the validated configuration and the clock. Everything else is exported by
 * the module that owns it (DatabaseModule, CacheModule, RedisModule) and imported by name.
 */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, clock: Clock): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Clock, useValue: clock },
      ],
      exports: [AppConfig, Clock],
    };
  }
}
