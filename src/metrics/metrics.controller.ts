import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RawResponse } from '../common/http/envelope.js';
import { ApiErrors } from '../common/openapi/decorators.js';
import { REQUEST_ID_HEADER } from '../common/openapi/envelopes.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { registry } from './metrics.js';

/** Prometheus scrape endpoint, outside /api/v1 and outside the envelope (docs/decisions.md#operations). */
@ApiTags('metrics')
@ThrottleAs(null)
@Controller('metrics')
export class MetricsController {
  @Get()
  @RawResponse()
  @Header('Content-Type', registry.contentType)
  @ApiOperation({
    summary: 'Prometheus metrics',
    description:
      'Outside /api/v1 and outside the envelope: the Prometheus text format. No authentication, never rate-limited.',
  })
  @ApiOkResponse({
    description: 'The metrics, in the Prometheus text format',
    headers: REQUEST_ID_HEADER,
    content: {
      // The answer's Content-Type adds `version=0.0.4; charset=utf-8`, as Prometheus expects.
      'text/plain': {
        schema: { type: 'string' },
        example:
          '# HELP licensegate_runtime_checks_total Runtime payment checks answered, by outcome (paid, unpaid) or refusal status\n# TYPE licensegate_runtime_checks_total counter\nlicensegate_runtime_checks_total{outcome="paid"} 512034\n',
      },
    },
  })
  @ApiErrors(
    { status: 400, description: 'HTTP/1.1 without a Host header, or another malformed request' },
    500,
  )
  metrics(): Promise<string> {
    return registry.metrics();
  }
}
