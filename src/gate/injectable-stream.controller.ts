import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiCursorQuery, ApiEnvelope, ApiErrors, DATABASE_AWAY } from '../common/openapi/decorators.js';
import { CursorQueryDto } from '../database/pagination.js';
import { InjectableStreamPageResponse } from '../injectables/dto/injectable.response.js';
import { InjectablesService } from '../injectables/injectables.service.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import { LicensedRequest, LicenseKeyAuth } from './license-key.guard.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { RuntimeCalls } from './runtime-call.js';

/** Runtime clients stream their project's injectables by license key. */
@ApiTags('injectables')
@ApiErrors(500, DATABASE_AWAY)
@Controller('injectable')
export class InjectableStreamController {
  constructor(
    private readonly injectables: InjectablesService,
    private readonly answers: RuntimeAnswerCounting,
    private readonly payments: RuntimeAnswers,
    private readonly calls: RuntimeCalls,
  ) {}

  @Get('stream')
  @LicenseKeyAuth()
  @ApiOperation({
    operationId: 'streamInjectables',
    summary: "Stream the license's project injectables",
    description:
      "Active injectables in id order; paid-only ones only while the license answers paid (the project's flag, or a billing: license license's own). Pass next_cursor back as cursor while has_more. " +
      "The license's allowed_ips and allowed_countries apply, as on has-paid (403 saying which).",
  })
  @ApiCursorQuery(50)
  @ApiEnvelope(InjectableStreamPageResponse)
  @ApiErrors(422)
  async stream(@Req() req: LicensedRequest, @Query() query: CursorQueryDto) {
    const runtime = this.payments.admit(req.runtime as NonNullable<LicensedRequest['runtime']>);
    const caller = this.calls.caller(req);
    // Where the license may be used from holds here as on has-paid (docs/security.md).
    this.payments.assertPlaceAllowed(runtime, caller);
    const { project } = runtime;
    const paid = this.payments.paidFor(runtime);
    const page = await this.injectables.stream(project, paid, query);
    // Paid or unpaid: whether the paid-only injectables were in it (docs/analytics.md).
    this.answers.answered(caller, project.id, paid, null);
    return page;
  }
}
