import { Module } from '@nestjs/common';
import { RedisService } from './redis.js';

/** The shared Redis connection (REDIS_URL), for the modules that use it by name. */
@Module({
  providers: [RedisService],
  exports: [RedisService],
})
export class RedisModule {}
