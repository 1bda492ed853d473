import { Module } from '@nestjs/common';
import { CountersService } from './counters.service.js';
import { PaymentsController } from './payments.controller.js';
import { PaymentsService } from './payments.service.js';

/** The runtime "has it been paid" checks (seed 4.2, 4.3); not a payment processor. */
@Module({
  controllers: [PaymentsController],
  providers: [PaymentsService, CountersService],
  exports: [PaymentsService, CountersService],
})
export class PaymentsModule {}
