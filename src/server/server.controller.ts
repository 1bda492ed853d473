import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyAuth } from '../auth/api-key.guard.js';
import { ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { AppConfig } from '../config/app-config.js';
import { ServerInfoResponse } from './server-info.response.js';

/**
 * GET /api/v1/server: the settings a client shows its user to explain what it sees, such as the
 * console warning that no payment provider can reach a connector's endpoint (docs/console.md).
 * Any API key, scoped or read-only: nothing here is secret, but it is no one else's business.
 */
@ApiTags('server')
@ApiKeyAuth()
// The key is looked up in the database: that can fail like any other call's.
@ApiErrors(500, DATABASE_AWAY)
@Controller('server')
export class ServerController {
  constructor(private readonly config: AppConfig) {}

  @Get()
  @ApiOperation({
    summary: 'This server’s public address',
    operationId: 'getServerInfo',
    description:
      'Any valid key: PUBLIC_URL as endpoint URLs use it, whether it is set, and whether it is https.',
  })
  @ApiEnvelope(ServerInfoResponse)
  info(): ServerInfoResponse {
    const public_url = this.config.publicUrl;
    return {
      public_url,
      public_url_set: this.config.env.PUBLIC_URL !== undefined,
      public_url_https: public_url.startsWith('https://'),
    };
  }
}
