import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';

import { RawResponse } from './common/envelope.js';
import { ThrottleAs } from './common/throttling.js';

/** Seed 4.1: connectivity check, no authentication, rate-limited per IP. */
@ApiTags('root')
@Controller()
export class RootController {
  @Get()
  @RawResponse()
  @ThrottleAs('root')
  @ApiOkResponse({ description: '{"status":"ok","message":"LicenseGate API v1","data":null,"errors":null}' })
  @ApiTooManyRequestsResponse({ description: 'Rate limited (THROTTLE_ROOT_LIMIT per THROTTLE_ROOT_TTL_SECONDS per IP)' })
  root() {
    return { status: 'ok', message: 'LicenseGate API v1', data: null, errors: null };
  }
}

