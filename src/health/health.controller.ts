import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ApiError } from '../common/errors.js';
import { ThrottleAs } from '../common/throttling.js';

@ApiTags('health')
@ThrottleAs(null)
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
  ) {}

  /** Readiness: the database (and Redis, when configured) answer. */
  @Get()
  @ApiOkResponse({ description: 'Ready' })
  @ApiServiceUnavailableResponse({ description: 'A dependency is down; `data` says which' })
  async ready(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([() => this.db.pingCheck('database', { timeout: 2000 })]);
    } catch (error) {
      if (error instanceof ServiceUnavailableException) {
        throw new ApiError(503, 'Service unavailable.', null, error.getResponse() as Record<string, unknown>);
      }
      throw error;
    }
  }

  /** Liveness: the process serves requests. */
  @Get('live')
  live() {
    return { status: 'ok' };
  }
}
