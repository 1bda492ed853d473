import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, ValidateBy, ValidateIf } from 'class-validator';
import {
  MaxChars,
  MetaObject,
  OptionalBoolean,
  OptionalNonNullInt,
  OptionalString,
  OptionalUrl,
  RequiredString,
} from '../../common/http/validators.js';
import { ALL_EVENTS, WEBHOOK_EVENTS } from '../../webhooks/webhook-events.js';

const KNOWN_EVENTS = new Set<unknown>(WEBHOOK_EVENTS);

/** Why a `webhook_events` value is refused, naming every unknown event type; null when it is fine. */
export function webhookEventsProblem(value: unknown): string | null {
  if (!Array.isArray(value)) return 'The webhook events field must be an array of event types, or ["*"].';
  if (value.includes(ALL_EVENTS))
    return value.length === 1
      ? null
      : 'The webhook events field must be ["*"] alone, or a list of event types without "*".';
  const unknown = value
    .filter((type) => !KNOWN_EVENTS.has(type))
    .map((type) => (typeof type === 'string' ? type : JSON.stringify(type)));
  return unknown.length === 0
    ? null
    : `The webhook events field contains unknown event types: ${[...new Set(unknown)].join(', ')}.`;
}

/** `webhook_events`: ["*"] or known event types; null stores the default, ["*"]. */
const WebhookEventList = () =>
  applyDecorators(
    ValidateIf((_, value) => value !== null && value !== undefined),
    ValidateBy({
      name: 'webhookEvents',
      validator: {
        validate: (value: unknown) => webhookEventsProblem(value) === null,
        defaultMessage: (args) => webhookEventsProblem(args?.value) ?? '',
      },
    }),
  );

/** The longest host name DNS has (RFC 1035). */
const MAX_HOST_NAME = 253;

/**
 * A webhook_url's host name fits DNS: a longer one names no receiver, and its events' receiver host
 * (host:port, what the dispatcher's per-host cap counts by) must fit its column. Not a URL is IsUrl's.
 */
const WebhookHostName = () =>
  ValidateBy({
    name: 'webhookHostName',
    validator: {
      validate: (value: unknown) => {
        if (typeof value !== 'string') return true;
        try {
          return new URL(value).hostname.replace(/^\[|\]$/g, '').length <= MAX_HOST_NAME;
        } catch {
          return true;
        }
      },
      defaultMessage: () =>
        `The webhook url field must be a valid URL: its host name is longer than ${MAX_HOST_NAME} characters.`,
    },
  });

/** The longest an offline token may stay valid: 30 days. */
export const MAX_OFFLINE_GRACE_HOURS = 720;

/** A project's fields. The same rules serve create, PATCH (every field optional) and PUT. */
export class CreateProjectDto {
  @ApiProperty({ maxLength: 255, example: 'Acme Shop' })
  @RequiredString('name', 255)
  name: string;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: 255,
    pattern: '^[A-Za-z0-9_-]+$',
    example: 'acme-shop',
    description: 'Unique; generated from name when omitted',
  })
  @IsOptional()
  @IsString({ message: 'The slug field must be a string.' })
  @MaxChars(255, { message: 'The slug field must not be greater than 255 characters.' })
  @Matches(/^[A-Za-z0-9_-]+$/, {
    message: 'The slug field must only contain letters, numbers, dashes, and underscores.',
  })
  slug?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    maxLength: 1000,
    nullable: true,
    example: 'Premium themes for the Acme storefront',
  })
  @OptionalString('description', 1000)
  description?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'uri',
    nullable: true,
    example: 'https://acme.example/pricing',
    description: 'Where the SDK sends visitors while access is refused',
  })
  @OptionalUrl('default_redirect_url')
  default_redirect_url?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'uri',
    nullable: true,
    example: null,
    description:
      'Receives the project\'s events (see docs/api.md, "Webhooks"); loopback, private and link-local addresses are refused unless WEBHOOK_ALLOW_PRIVATE',
  })
  @OptionalUrl('webhook_url')
  @WebhookHostName()
  webhook_url?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: 255,
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'Signs the webhooks (Standard Webhooks); accepted, stored encrypted, never returned',
    writeOnly: true,
  })
  @OptionalString('webhook_secret', 255)
  webhook_secret?: string | null;

  @ApiPropertyOptional({
    type: 'array',
    nullable: true,
    items: { type: 'string', enum: [ALL_EVENTS, ...WEBHOOK_EVENTS] },
    default: [ALL_EVENTS],
    example: ['license.created', 'license.revoked'],
    description:
      'The events the webhook is sent: event types, or ["*"] for every one; null: ["*"]. An unknown type → 422 naming it',
  })
  @WebhookEventList()
  webhook_events?: string[] | null;

  @ApiPropertyOptional({
    default: true,
    example: true,
    description: 'false: no event is sent (none is written to the outbox), whatever webhook_events says',
  })
  @OptionalBoolean('webhook_enabled')
  webhook_enabled?: boolean;

  @ApiPropertyOptional({
    type: 'string',
    format: 'uri',
    nullable: true,
    example: 'https://acme.example/logo.png',
  })
  @OptionalUrl('logo_url')
  logo_url?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    example: { plan: 'pro' },
    description: 'A JSON object, or a JSON string that decodes to one; null stores {}',
  })
  @MetaObject()
  meta?: Record<string, unknown> | null;

  @ApiPropertyOptional({ default: false, example: true })
  @OptionalBoolean('has_paid')
  has_paid?: boolean;

  @ApiPropertyOptional({ default: true, example: true })
  @OptionalBoolean('is_active')
  is_active?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_OFFLINE_GRACE_HOURS,
    default: 72,
    example: 72,
    description:
      'How many hours an offline token (`include=token` on the runtime check) stays valid; 0 issues none',
  })
  @OptionalNonNullInt('offline_grace_hours', 0, MAX_OFFLINE_GRACE_HOURS)
  offline_grace_hours?: number;
}

// Null is checked like any value (not skipped as "omitted"): only the nullable fields take it.
export class UpdateProjectDto extends PartialType(CreateProjectDto, { skipNullProperties: false }) {}

export class LockProjectDto {
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: 1000,
    example: 'Invoice 2026-113 is unpaid',
  })
  @OptionalString('reason', 1000)
  reason?: string | null;
}
