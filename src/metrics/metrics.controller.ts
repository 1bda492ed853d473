import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { RawResponse } from '../common/http/envelope.js';
import { ThrottleAs } from '../common/throttling/throttling.js';
import { registry } from './metrics.js';

/** Prometheus scrape endpoint, outside /api/v1 and outside the envelope (docs/decisions.md#operations). */
@ApiExcludeController()
@ThrottleAs(null)
@Controller('metrics')
export class MetricsController {
  @Get()
  @RawResponse()
  @Header('Content-Type', registry.contentType)
  metrics(): Promise<string> {
    return registry.metrics();
  }
}
