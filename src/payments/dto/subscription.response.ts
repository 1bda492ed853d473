import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PROVIDERS } from '../providers/registry.js';
import { SUBSCRIPTION_KINDS, SUBSCRIPTION_STATUSES } from './subscription-list-query.dto.js';
import { PaymentEventResponse, PaymentEventTargetResponse } from './payment-connector.response.js';

@ApiSchema({ name: 'Subscription' })
export class SubscriptionResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer', description: 'The payment connector whose events made the row' })
  connector_id: number;

  @ApiProperty({ enum: PROVIDERS })
  provider: string;

  @ApiProperty({
    example: 'sub_1QdH6sGswQ2Dk9Lm',
    description:
      "The provider's id of the purchase: its subscription id, else the one-time order's (Checkout Session, transaction, order)",
  })
  reference: string;

  @ApiProperty({
    enum: SUBSCRIPTION_KINDS,
    description:
      'With connector_id and reference, which purchase this is (providers reuse one number for both)',
  })
  kind: string;

  @ApiProperty({ enum: SUBSCRIPTION_STATUSES, description: '`paid`: a one-time order that was paid' })
  status: string;

  @ApiProperty({ description: 'Cancelled at the end of the paid period: still paid until then' })
  cancel_at_period_end: boolean;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The buyer (GET …/customers/{customer})' })
  customer_id: number | null;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The license issued for it, or null' })
  license_id: number | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'When its license was deleted; the row stays',
  })
  license_deleted_at: string | null;

  @ApiProperty({
    type: () => PaymentEventTargetResponse,
    nullable: true,
    description: 'What its events move: a license, a domain or the project; null while none',
  })
  target: PaymentEventTargetResponse | null;

  @ApiProperty({
    type: [String],
    example: ['price_1QdH6sGswQ2Dk9Lm', 'prod_Q2Dk9LmH6s'],
    description: "The provider's product (and price or variant) ids the purchase named",
  })
  product_ids: string[];

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  current_period_end: string | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: "The provider's own time of its latest event: an older event changes nothing (`stale`)",
  })
  last_event_at: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'invoice.paid' })
  last_event_type: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({ name: 'SubscriptionWithEvents' })
export class SubscriptionDetailResponse extends SubscriptionResponse {
  @ApiProperty({
    type: [PaymentEventResponse],
    description: "The connector's events of this purchase, latest first, at most 50",
  })
  events: PaymentEventResponse[];
}
