import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, ValidateBy } from 'class-validator';
import { parseCountry, parseIpEntry, parseList } from '../../common/net/address-lists.js';
import {
  label,
  MaxChars,
  OptionalBoolean,
  OptionalFutureDate,
  OptionalInt,
  RequiredString,
} from '../../common/http/validators.js';
import { applyDecorators } from '@nestjs/common';
import { LICENSE_BILLINGS, type LicenseBilling } from '../license.entity.js';
import { ENTITLEMENTS_SCHEMA } from '../../plans/dto/plan.dto.js';
import { EntitlementsField } from '../../plans/dto/entitlements.validator.js';
import type { Entitlements } from '../../plans/entitlements.js';

const Limit = (field: string, example: number) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'integer', minimum: 0, nullable: true, example }),
    OptionalInt(field, 0),
  );

/** A comma-separated list whose every entry parses. */
const ListOf = (field: string, parse: (entry: string) => string | null, what: string) =>
  ValidateBy({
    name: `isListOf_${field}`,
    validator: {
      validate: (value: unknown) =>
        value === null ||
        value === undefined ||
        (typeof value === 'string' && parseList(value, parse).bad === undefined),
      defaultMessage: (args) =>
        `The ${label(field)} field contains an invalid ${what}: "${typeof args?.value === 'string' ? parseList(args.value, parse).bad : ''}".`,
    },
  });

/**
 * A list as one comma-separated string; an array of strings is taken too, joined (clients that build
 * lists as arrays need not join them).
 */
const ListField = (field: string, max: number, parse: (entry: string) => string | null, what: string) =>
  applyDecorators(
    Transform(({ value }: { value: unknown }) =>
      Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(',') : value,
    ),
    IsOptional(),
    IsString({
      message: `The ${label(field)} field must be a string of comma-separated values (or an array of strings).`,
    }),
    MaxChars(max, { message: `The ${label(field)} field must not be greater than ${max} characters.` }),
    ListOf(field, parse, what),
  );

/** A license's fields. Lists (allowed_ips, allowed_countries), the domain and the future date are checked by the service. */
export class CreateLicenseDto {
  @ApiProperty({ maxLength: 255, example: 'Customer 1', description: 'Unique within the project' })
  @RequiredString('title', 255)
  title: string;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    example: null,
    description: 'Pins the license to a domain of this project (its id)',
  })
  @OptionalInt('domain_id', 1)
  domain_id?: number | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2099-12-31T23:59:59Z',
    description: 'Must be in the future',
  })
  @OptionalFutureDate('expires_at')
  expires_at?: Date | null;

  @Limit('max_domains', 3)
  max_domains?: number | null;

  @Limit('max_subdomains_per_domain', 10)
  max_subdomains_per_domain?: number | null;

  @Limit('max_usage_per_day', 100000)
  max_usage_per_day?: number | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    example: null,
    description:
      'Comma-separated IP addresses or CIDR ranges, e.g. `203.0.113.7, 10.0.0.0/8, 2001:db8::/32` (an array of strings is joined); null allows every address',
  })
  @ListField('allowed_ips', 4000, parseIpEntry, 'IP address or CIDR range')
  allowed_ips?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    example: null,
    description:
      'Comma-separated ISO 3166-1 alpha-2 codes, e.g. `DE, FR` (an array of strings is joined); null allows every country',
  })
  @ListField('allowed_countries', 2000, parseCountry, 'ISO 3166-1 alpha-2 code')
  allowed_countries?: string | null;

  @ApiPropertyOptional({ default: false, example: false })
  @OptionalBoolean('is_test_license')
  is_test_license?: boolean;

  @ApiPropertyOptional({ default: false, example: false })
  @OptionalBoolean('allow_configs')
  allow_configs?: boolean;

  @ApiPropertyOptional({
    enum: LICENSE_BILLINGS,
    default: 'project',
    example: 'project',
    description:
      "Whose payment the runtime answer reports: `project` (the project's or the calling domain's has_paid) or `license` (the license's own has_paid; used from any site, docs/api.md#licenses-that-carry-their-own-payment)",
  })
  @IsOptional()
  @IsIn(LICENSE_BILLINGS, { message: 'The selected billing is invalid: use project or license.' })
  billing?: LicenseBilling;

  @ApiPropertyOptional({
    default: false,
    example: false,
    description:
      "The license's own paid flag, what a billing: license license answers; setting it ends a payment grace (grace_until)",
  })
  @OptionalBoolean('has_paid')
  has_paid?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    example: null,
    description: 'The customer of this project the license was sold to (its id); null: none',
  })
  @OptionalInt('customer_id', 1)
  customer_id?: number | null;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    example: null,
    description:
      "A plan of this project (its id): its entitlements, and its limits where the license's are null; license_defaults then fill no limit field",
  })
  @OptionalInt('plan_id', 1)
  plan_id?: number | null;

  @ApiPropertyOptional({
    ...ENTITLEMENTS_SCHEMA,
    nullable: true,
    description: "Overrides of the plan's entitlements, code by code (validated as a plan's)",
  })
  @EntitlementsField(true)
  entitlements?: Entitlements | null;
}

export class UpdateLicenseDto extends PartialType(CreateLicenseDto) {}
