import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsInt, IsNotEmpty, IsOptional, IsString, Max, Min, ValidateBy } from 'class-validator';
import { parseCountry, parseIpEntry, parseList } from '../../common/net.js';
import { FutureDate, MaxChars, OptionalBoolean, OptionalString, label } from '../../common/validators.js';
import { applyDecorators } from '@nestjs/common';

const Limit = (field: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'integer', minimum: 0, nullable: true }),
    IsOptional(),
    IsInt({ message: `The ${label(field)} field must be an integer.` }),
    Min(0, { message: `The ${label(field)} field must be at least 0.` }),
    Max(2_147_483_647, { message: `The ${label(field)} field is too large.` }),
  );

/** A comma-separated list whose every entry parses. */
const ListOf = (field: string, parse: (entry: string) => string | null, what: string) =>
  ValidateBy({
    name: `isListOf_${field}`,
    validator: {
      validate: (value: unknown) => value === null || value === undefined || (typeof value === 'string' && parseList(value, parse).bad === undefined),
      defaultMessage: (args) =>
        `The ${label(field)} field contains an invalid ${what}: "${typeof args?.value === 'string' ? parseList(args.value, parse).bad : ''}".`,
    },
  });

/** Seed 4.8. Lists (allowed_ips, allowed_countries), the domain and the future date are checked by the service. */
export class CreateLicenseDto {
  @ApiProperty({ maxLength: 255, description: 'Unique within the project' })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsNotEmpty({ message: 'The title field is required.' })
  @IsString({ message: 'The title field must be a string.' })
  @MaxChars(255, { message: 'The title field must not be greater than 255 characters.' })
  title: string;

  @ApiPropertyOptional({ type: 'integer', nullable: true, description: 'Pins the license to a domain of this project' })
  @IsOptional()
  @IsInt({ message: 'The domain id field must be an integer.' })
  domain_id?: number | null;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true, description: 'Must be in the future' })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? new Date(value) : value))
  @IsDate({ message: 'The expires at field must be a valid date.' })
  @FutureDate()
  expires_at?: Date | null;

  @Limit('max_domains')
  max_domains?: number | null;

  @Limit('max_subdomains_per_domain')
  max_subdomains_per_domain?: number | null;

  @Limit('max_usage_per_day')
  max_usage_per_day?: number | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, example: '203.0.113.7, 10.0.0.0/8, 2001:db8::/32', description: 'Comma-separated IP addresses or CIDR ranges' })
  @OptionalString('allowed_ips', 4000)
  @ListOf('allowed_ips', parseIpEntry, 'IP address or CIDR range')
  allowed_ips?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, example: 'DE, FR', description: 'Comma-separated ISO 3166-1 alpha-2 codes' })
  @OptionalString('allowed_countries', 2000)
  @ListOf('allowed_countries', parseCountry, 'ISO 3166-1 alpha-2 code')
  allowed_countries?: string | null;

  @ApiPropertyOptional({ default: false })
  @OptionalBoolean('is_test_license')
  is_test_license?: boolean;

  @ApiPropertyOptional({ default: false })
  @OptionalBoolean('allow_configs')
  allow_configs?: boolean;
}

export class UpdateLicenseDto extends PartialType(CreateLicenseDto) {}
