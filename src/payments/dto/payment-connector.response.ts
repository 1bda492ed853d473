import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PROVIDERS } from '../providers/registry.js';
import { LicenseTemplateDto } from './payment-connector.dto.js';

@ApiSchema({ name: 'PaymentConnector' })
export class PaymentConnectorResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ enum: PROVIDERS })
  provider: string;

  @ApiProperty({ type: 'string', nullable: true })
  name: string | null;

  @ApiProperty({
    format: 'uri',
    example:
      'https://licenses.example.com/api/v1/payments/stripe/3q2-7wXnB4y9vXkGm0aQfPZc1LtRj8sHdE5oUiK6NbA',
    description: 'Where the provider sends its events: PUBLIC_URL + /api/v1/payments/{provider}/{token}',
  })
  endpoint_url: string;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: 90 })
  grace_days: number;

  @ApiProperty()
  issue_licenses: boolean;

  @ApiProperty({ type: () => LicenseTemplateDto, nullable: true })
  license_template: LicenseTemplateDto | null;

  @ApiProperty({
    type: 'array',
    items: {
      oneOf: [
        { type: 'string' },
        { type: 'object', properties: { id: { type: 'string' }, plan: { type: 'string' } } },
      ],
    },
    description: "The provider's products this connector acts on; empty: every product",
  })
  products: Array<string | { id: string; plan: string }>;

  @ApiProperty()
  match_customers_by_email: boolean;

  @ApiProperty()
  is_active: boolean;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  last_event_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({ name: 'PaymentEventTarget' })
export class PaymentEventTargetResponse {
  @ApiProperty({ enum: ['project', 'domain', 'license'] })
  kind: 'project' | 'domain' | 'license';

  @ApiProperty({ type: 'integer' })
  id: number;
}

@ApiSchema({ name: 'PaymentEvent' })
export class PaymentEventResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ example: 'evt_1QdH6sGswQ2Dk9Lm', description: "The provider's event id" })
  provider_event_id: string;

  @ApiProperty({ example: 'invoice.paid' })
  type: string;

  @ApiProperty({
    enum: ['applied', 'ignored', 'stale'],
    description:
      'A redelivery is answered `duplicate` and not stored again; `stale`: older than an event already applied to its purchase',
  })
  outcome: string;

  @ApiProperty({ type: () => PaymentEventTargetResponse, nullable: true })
  target: PaymentEventTargetResponse | null;

  @ApiProperty({ example: 'The project is paid (has_paid was false).' })
  detail: string;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 7,
    description: 'The purchase the event recorded (GET …/subscriptions/{subscription}), or null',
  })
  subscription_id: number | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  received_at: string;
}

@ApiSchema({ name: 'PaymentEventWithPayload' })
export class PaymentEventWithPayloadResponse extends PaymentEventResponse {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: {
      id: 'evt_1QdH6sGswQ2Dk9Lm',
      type: 'invoice.paid',
      data: { object: { customer_email: '[redacted]' } },
    },
    description:
      'The body the provider sent, as parsed after its signature was verified: the value of every key naming personal data (email, name, address, phone, ip) is "[redacted]", at any depth; no headers. A body over 64 KiB is `{"truncated": true}`; null for events received before payloads were stored.',
  })
  payload: Record<string, unknown> | null;
}

@ApiSchema({ name: 'PaymentReceipt' })
export class PaymentReceiptResponse {
  @ApiProperty({ enum: ['applied', 'ignored', 'duplicate', 'stale'] })
  outcome: string;

  @ApiProperty({ example: 'evt_1QdH6sGswQ2Dk9Lm' })
  event_id: string;
}

@ApiSchema({ name: 'PaymentTestEvent' })
export class PaymentTestEventResponse {
  @ApiProperty({
    example: 'evt_1TkXb7Qr2mPz9LwD4nVc8HsE',
    description: "The sample event's id, as the provider's own events carry it",
  })
  event_id: string;

  @ApiProperty({
    example: 'customer.created',
    description:
      "A type of the provider that moves nothing, or for a test payment the provider's paying type",
  })
  event_type: string;

  @ApiProperty({
    type: 'integer',
    example: 200,
    description:
      "What the connector's endpoint answered: 200 once stored, 404 while the connector is paused (is_active false)",
  })
  http_status: number;

  @ApiProperty({
    enum: ['applied', 'ignored', 'duplicate', 'stale'],
    nullable: true,
    example: 'ignored',
    description: 'As in the event log; null when the endpoint refused the event (nothing stored)',
  })
  outcome: string | null;

  @ApiProperty({
    example: 'The event type customer.created is not one that moves has_paid.',
    description: "The event log's detail, or why the endpoint refused the event",
  })
  detail: string;

  @ApiProperty({
    type: () => PaymentEventTargetResponse,
    nullable: true,
    description:
      "The event log's target of the event: what a test payment marked paid; null when nothing was stored",
  })
  target: PaymentEventTargetResponse | null;
}
