import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { Cursors } from './pagination.js';

/** Process-wide singletons: the validated configuration and the cursor codec. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Cursors, useFactory: () => new Cursors(config.appKey) },
      ],
      exports: [AppConfig, Cursors],
    };
  }
}
