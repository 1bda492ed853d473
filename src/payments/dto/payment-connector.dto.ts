import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, OmitType, PartialType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsObject, IsString, ValidateBy, ValidateIf, ValidateNested } from 'class-validator';
import { CreateLicenseDto } from '../../licenses/dto/license.dto.js';
import {
  OptionalBoolean,
  OptionalInt,
  OptionalNonNullInt,
  OptionalString,
  RequiredString,
} from '../../common/http/validators.js';
import { PROVIDERS } from '../providers/registry.js';

export const PROVIDER_INVALID = `The selected provider is invalid: it must be one of ${PROVIDERS.join(', ')}.`;

/** The fields of a license issued from an order: those of a license create, except the title (made from the order). */
// Billing, the license's own flag and its customer are the connector's to set on the licenses it issues.
export class LicenseTemplateDto extends OmitType(CreateLicenseDto, [
  'title',
  'billing',
  'has_paid',
  'customer_id',
] as const) {}

/** What a license template is stored as: the license fields, dates as ISO-8601 strings. */
export type LicenseTemplate = Omit<LicenseTemplateDto, 'expires_at'> & { expires_at?: string | null };

const Template = () =>
  applyDecorators(
    ValidateIf((_, value) => value !== null && value !== undefined),
    IsObject({ message: 'The license template field must be a JSON object.' }),
    ValidateNested(),
    Type(() => LicenseTemplateDto),
  );

/** A product of a connector's allow-list: the provider's id, or the id with the plan it grants. */
export type ConnectorProduct = string | { id: string; plan: string };

/** The most products one connector lists. */
export const MAX_PRODUCTS = 200;

export const PRODUCTS_INVALID = `The products field must be a list of at most ${MAX_PRODUCTS} product ids (strings of 1 to 255 characters) or {id, plan} objects.`;

const isProductId = (value: unknown): value is string =>
  typeof value === 'string' && value.trim() !== '' && value.length <= 255;

function isProduct(value: unknown): boolean {
  if (isProductId(value)) return true;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const entry = value as Record<string, unknown>;
  return (
    Object.keys(entry).every((k) => k === 'id' || k === 'plan') &&
    isProductId(entry.id) &&
    typeof entry.plan === 'string' &&
    entry.plan.trim() !== '' &&
    entry.plan.length <= 64
  );
}

const Products = () =>
  applyDecorators(
    ValidateIf((_, value) => value !== null && value !== undefined),
    ValidateBy({
      name: 'connectorProducts',
      validator: {
        validate: (value: unknown) =>
          Array.isArray(value) && value.length <= MAX_PRODUCTS && value.every(isProduct),
        defaultMessage: () => PRODUCTS_INVALID,
      },
    }),
  );

/** A payment connector (docs/payments.md). */
export class CreatePaymentConnectorDto {
  @ApiProperty({ enum: PROVIDERS, example: 'stripe' })
  @IsIn(PROVIDERS, { message: PROVIDER_INVALID })
  @RequiredString('provider', 32)
  provider: string;

  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description:
      "The provider's webhook signing secret: at least 16 characters, not only white space; Stripe's starts with whsec_, Paddle's with pdl_ntfset_, a Standard Webhooks one is whsec_ and base64. Stored encrypted, never returned",
    writeOnly: true,
  })
  @RequiredString('signing_secret', 1000)
  signing_secret: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: 255, example: 'Stripe live' })
  @OptionalString('name', 255)
  name?: string | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 90,
    default: 3,
    example: 3,
    description: 'Days an unpaid event leaves the gate open (0: it closes at once)',
  })
  @OptionalNonNullInt('grace_days', 0, 90)
  grace_days?: number;

  @ApiPropertyOptional({
    default: false,
    example: false,
    description: 'The first paid event of an order or subscription issues a license from license_template',
  })
  @OptionalBoolean('issue_licenses')
  issue_licenses?: boolean;

  @ApiPropertyOptional({
    type: () => LicenseTemplateDto,
    nullable: true,
    example: { max_domains: 3 },
    description: 'The fields of the licenses issued (those of a license create, except title)',
  })
  @Template()
  license_template?: LicenseTemplateDto | null;

  @ApiPropertyOptional({
    type: 'array',
    nullable: true,
    maxItems: MAX_PRODUCTS,
    items: {
      oneOf: [
        { type: 'string', maxLength: 255 },
        {
          type: 'object',
          required: ['id', 'plan'],
          properties: { id: { type: 'string', maxLength: 255 }, plan: { type: 'string', maxLength: 64 } },
        },
      ],
    },
    example: ['price_1QdH6sGswQ2Dk9Lm', 'prod_RkQ3x9'],
    description:
      "The provider's products this connector acts on (Stripe price or product, Paddle price or product, Lemon Squeezy variant or product, Polar product), each an id or {id, plan} (plan: the code of a plan of the project that a paid event for that product grants; another code → 422); empty or null: every product",
  })
  @Products()
  products?: ConnectorProduct[] | null;

  @ApiPropertyOptional({
    default: false,
    example: false,
    description:
      "Whether an event's buyer may be found by email when no customer has the provider's id (an email is typed by the buyer)",
  })
  @OptionalBoolean('match_customers_by_email')
  match_customers_by_email?: boolean;
}

export class UpdatePaymentConnectorDto extends PartialType(CreatePaymentConnectorDto) {
  @ApiPropertyOptional({
    default: true,
    example: true,
    description: 'false: its endpoint answers 404 until set true again',
  })
  @OptionalBoolean('is_active')
  is_active?: boolean;
}

/** What a test event is: one that moves nothing (the default), or the provider's own paying event. */
export const TEST_EVENT_KINDS = ['nothing', 'payment'] as const;
export type TestEventKind = (typeof TEST_EVENT_KINDS)[number];

export const TEST_EVENT_INVALID = 'The selected event is invalid: use nothing or payment.';
export const TEST_TARGET_NEEDS_PAYMENT =
  'The license id and domain id fields name what a test payment pays: send them with "event": "payment".';
export const TEST_TARGET_TWICE =
  'Name one target: the license id or the domain id (neither: the project), not both.';

/** The body of a test event (docs/payments.md#send-a-test-event); none at all is `{"event": "nothing"}`. */
export class SendTestEventDto {
  @ApiPropertyOptional({
    enum: TEST_EVENT_KINDS,
    default: 'nothing',
    example: 'payment',
    description:
      "`nothing`: an example event of a type that moves nothing. `payment`: the provider's own paying event in test mode, for the license or domain named (neither: the project), applied as a real payment is: it marks its target paid (undo: mark it unpaid)",
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsIn(TEST_EVENT_KINDS, { message: TEST_EVENT_INVALID })
  @IsString({ message: 'The event field must be a string.' })
  event?: TestEventKind;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    example: null,
    description:
      'A license of the project: the test payment carries licensegate_license with its id. At most one of license_id and domain_id; neither: the project',
  })
  @OptionalInt('license_id', 1)
  license_id?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    example: 1,
    description:
      'A domain of the project: the test payment carries licensegate_domain with its name. At most one of license_id and domain_id; neither: the project',
  })
  @OptionalInt('domain_id', 1)
  domain_id?: number | null;
}
