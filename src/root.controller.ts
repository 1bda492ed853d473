import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { RawResponse } from './common/http/envelope.js';
import { ApiErrors } from './common/openapi/decorators.js';
import { REQUEST_ID_HEADER, RootEnvelope } from './common/openapi/envelopes.js';
import { ThrottleAs } from './common/throttling/throttling.js';

/** GET /api/v1/: connectivity check, no authentication, rate-limited per IP. */
@ApiTags('root')
@Controller()
export class RootController {
  @Get()
  @RawResponse()
  @ThrottleAs('root')
  @ApiOperation({ summary: 'Connectivity check', description: 'No authentication; rate-limited per IP.' })
  @ApiOkResponse({
    type: RootEnvelope,
    headers: REQUEST_ID_HEADER,
    description: '{"status":"ok","message":"LicenseGate API v1","data":null,"errors":null}',
  })
  @ApiErrors(
    { status: 429, description: 'Rate limited (THROTTLE_ROOT_LIMIT per THROTTLE_ROOT_TTL_SECONDS per IP)' },
    500,
  )
  root() {
    return { status: 'ok', message: 'LicenseGate API v1', data: null, errors: null };
  }
}
