import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorFunction,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { RedisService } from '../common/cache/redis.js';
import { ApiError } from '../common/http/errors.js';
import { ApiEnvelope, ApiErrors } from '../common/openapi/decorators.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { HealthResponse, LivenessResponse } from './dto/health.response.js';

@ApiTags('health')
@ThrottleAs(null)
@ApiErrors({ status: 400, description: 'HTTP/1.1 without a Host header, or another malformed request' }, 500)
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisService,
  ) {}

  /** Redis, when configured: the service still answers without it (from the database), but is degraded. */
  private async redisCheck() {
    const check = this.indicators.check('redis');
    const status = this.redis.client?.status;
    // Down at start-up or since: say so, rather than what ioredis answers a command it cannot send.
    if (status !== 'ready') return check.down({ message: `Redis is not connected (${status}).` });
    try {
      await Promise.race([
        this.redis.client?.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000).unref()),
      ]);
      return check.up();
    } catch (error) {
      return check.down({ message: (error as Error).message });
    }
  }

  /** Readiness: the database (and Redis, when configured) answer; 503 says which does not. */
  @Get()
  @ApiOperation({ summary: 'Readiness', description: 'The database, and Redis when configured, answer.' })
  @ApiEnvelope(HealthResponse, { description: 'Ready' })
  @ApiErrors({
    status: 503,
    description:
      'A dependency is down; `data` is the check result (status, info, error, details) and says which',
    message: 'Service unavailable.',
    data: {
      status: 'error',
      info: {},
      error: { database: { status: 'down', message: 'timeout of 2000ms exceeded' } },
      details: { database: { status: 'down', message: 'timeout of 2000ms exceeded' } },
    },
  })
  async ready(): Promise<HealthCheckResult> {
    try {
      const checks: HealthIndicatorFunction[] = [() => this.db.pingCheck('database', { timeout: 2000 })];
      if (this.redis.client) checks.push(() => this.redisCheck());
      return await this.health.check(checks);
    } catch (error) {
      if (error instanceof ServiceUnavailableException) {
        throw new ApiError(503, 'Service unavailable.', null, error.getResponse() as Record<string, unknown>);
      }
      throw error;
    }
  }

  /** Liveness: the process serves requests. */
  @Get('live')
  @ApiOperation({ summary: 'Liveness', description: 'The process serves requests.' })
  @ApiEnvelope(LivenessResponse)
  live() {
    return { status: 'ok' };
  }
}
