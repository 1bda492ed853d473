import { Controller, Get, Logger, ServiceUnavailableException } from '@nestjs/common';
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
  private readonly logger = new Logger('Health');

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
      'A dependency is down; `data` is the check result (status, info, error, details) and says which, in generic words (the cause is in the log)',
    message: 'Service unavailable.',
    data: {
      status: 'error',
      info: {},
      error: { database: { status: 'down', message: 'The database is not answering.' } },
      details: { database: { status: 'down', message: 'The database is not answering.' } },
    },
  })
  async ready(): Promise<HealthCheckResult> {
    try {
      const checks: HealthIndicatorFunction[] = [() => this.db.pingCheck('database', { timeout: 2000 })];
      if (this.redis.client) checks.push(() => this.redisCheck());
      return await this.health.check(checks);
    } catch (error) {
      if (error instanceof ServiceUnavailableException) {
        const result = error.getResponse() as HealthCheckResult;
        // Anyone may call this: driver and Redis error texts (hosts, users, versions) go to the log only.
        this.logger.warn({ health: result.error }, 'Readiness check failed');
        throw new ApiError(503, 'Service unavailable.', null, { ...generic(result) });
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

const DOWN: Record<string, string> = {
  database: 'The database is not answering.',
  redis: 'Redis is not answering.',
};

/** The check result with each indicator's status only, and a fixed sentence for one that is down. */
function generic(result: HealthCheckResult): HealthCheckResult {
  const strip = (checks: HealthCheckResult['info']) =>
    checks &&
    Object.fromEntries(
      Object.entries(checks).map(([name, check]) => [
        name,
        check?.status === 'up'
          ? { status: 'up' as const }
          : { status: check?.status ?? 'down', message: DOWN[name] ?? `${name} is not answering.` },
      ]),
    );
  return {
    status: result.status,
    info: strip(result.info),
    error: strip(result.error),
    details: strip(result.details) ?? {},
  };
}
