import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { WEBHOOK_EVENTS } from '../webhook-events.js';

@ApiSchema({ name: 'WebhookAttempt' })
export class WebhookAttemptResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer', description: '1 for the first try' })
  attempt: number;

  @ApiProperty({ format: 'uri' })
  url: string;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'HTTP status of the answer; null when none came',
  })
  response_code: number | null;

  @ApiProperty({ type: 'integer' })
  duration_ms: number;

  @ApiProperty({ type: 'string', nullable: true })
  error: string | null;

  @ApiProperty({
    enum: ['succeeded', 'retrying', 'failed', 'interrupted'],
    description:
      'interrupted: the dispatcher sending it stopped before the outcome was known; the receiver may have received it',
  })
  outcome: string;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'The next attempt this one scheduled',
  })
  next_attempt_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;
}

@ApiSchema({ name: 'WebhookDelivery' })
export class WebhookDeliveryResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ description: 'Also the webhook-id header, the same on every retry' })
  event_id: string;

  @ApiProperty({ enum: WEBHOOK_EVENTS, example: 'license.created' })
  type: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'The JSON body sent: {id, type, timestamp, data}. `data` is the resource as the API returns it, except for license.usage_limit_reached ' +
      '{license_id, project_id, max_usage_per_day, day}, license.deactivated (LicenseDeactivatedEvent) and license.domain_limit_reached ' +
      '(LicenseDomainLimitReachedEvent); license.expiring and license.expired carry the License.',
  })
  payload: Record<string, unknown>;

  @ApiProperty({ enum: ['pending', 'delivering', 'succeeded', 'failed'] })
  status: string;

  @ApiProperty({ type: 'integer' })
  attempts: number;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'The first try; the retry schedule counts from it',
  })
  first_attempt_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  next_attempt_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  last_attempt_at: string | null;

  @ApiProperty({ type: 'integer', nullable: true })
  last_status_code: number | null;

  @ApiProperty({ type: 'string', nullable: true })
  last_error: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

/** The list answer carries every attempt of each delivery. */
@ApiSchema({ name: 'WebhookDeliveryWithAttempts' })
export class WebhookDeliveryWithAttemptsResponse extends WebhookDeliveryResponse {
  @ApiProperty({
    type: () => WebhookAttemptResponse,
    isArray: true,
    description: 'Every attempt, oldest first',
  })
  attempt_log: WebhookAttemptResponse[];
}
