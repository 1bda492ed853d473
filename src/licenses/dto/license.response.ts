import { LICENSE_BILLINGS, type LicenseBilling, type RevokedBy } from '../license.entity.js';
import { ActivationResponse } from './activation.response.js';
import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PROVIDERS } from '../../payments/providers/registry.js';
import { ENTITLEMENTS_SCHEMA } from '../../plans/dto/plan.dto.js';
import { PlanRefResponse } from '../../plans/dto/plan.response.js';
import type { Entitlements } from '../../plans/entitlements.js';

@ApiSchema({ name: 'PaymentReference' })
export class PaymentReferenceResponse {
  @ApiProperty({ enum: PROVIDERS })
  provider: string;

  @ApiProperty({ example: 'sub_1QdH6sGswQ2Dk9Lm', description: 'The order or subscription id' })
  reference: string;

  @ApiProperty({
    enum: ['subscription', 'order'],
    nullable: true,
    description:
      'Which purchase the reference names (providers reuse one number for both); null for a license issued before kinds',
  })
  kind: 'subscription' | 'order' | null;
}

@ApiSchema({ name: 'License' })
export class LicenseResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ format: 'uuid', description: 'The license key to share (X-LICENSE-KEY)' })
  uuid: string;

  @ApiProperty()
  title: string;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The domain the license is pinned to' })
  domain_id: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  expires_at: string | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_domains: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_usage_per_day: number | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: '203.0.113.7,10.0.0.0/8',
    description: 'Comma-separated IP addresses or CIDR ranges',
  })
  allowed_ips: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'DE,FR',
    description: 'Comma-separated ISO 3166-1 alpha-2 codes',
  })
  allowed_countries: string | null;

  @ApiProperty()
  is_test_license: boolean;

  @ApiProperty()
  allow_configs: boolean;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  revoked_at: string | null;

  @ApiProperty({
    type: () => PaymentReferenceResponse,
    nullable: true,
    description: 'A license issued by a payment connector: the order or subscription it was issued for',
  })
  payment_reference: PaymentReferenceResponse | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description:
      'A payment grace: a billing: project license from an order whose payment stopped is revoked at this time unless paid again; a billing: license license answers paid until then, unpaid after (docs/payments.md)',
  })
  grace_until: string | null;

  @ApiProperty({
    enum: LICENSE_BILLINGS,
    description:
      "Whose payment the runtime answer reports: `project` (the project's or the calling domain's has_paid) or `license` (the license's own has_paid)",
  })
  billing: LicenseBilling;

  @ApiProperty({
    description:
      "The license's own paid flag: what a billing: license license answers (paid while grace_until is in the future)",
  })
  has_paid: boolean;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'The customer of this project the license was sold to',
  })
  customer_id: number | null;

  @ApiProperty({
    enum: ['vendor', 'payment'],
    nullable: true,
    readOnly: true,
    description:
      'Who revoked the license: `vendor` (through the API or the console; payment never reactivates it) or `payment` (a payment connector); null while not revoked',
  })
  revoked_by: RevokedBy | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'The plan of the project the license is on' })
  plan_id: number | null;

  @ApiProperty({ type: () => PlanRefResponse, nullable: true })
  plan: PlanRefResponse | null;

  @ApiProperty({
    ...ENTITLEMENTS_SCHEMA,
    nullable: true,
    description: "The license's own entitlements, overriding the plan's code by code",
  })
  entitlements: Entitlements | null;

  @ApiProperty({
    ...ENTITLEMENTS_SCHEMA,
    description: "The plan's entitlements overridden code by code by the license's: what the runtime answers",
  })
  effective_entitlements: Entitlements;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({ name: 'LicenseMeter' })
export class LicenseMeterResponse {
  @ApiProperty({ type: 'integer', description: 'Used this UTC calendar month' })
  used: number;

  @ApiProperty({ type: 'integer', description: 'The monthly quota (the meter entitlement)' })
  limit: number;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'The start of the next UTC month' })
  resets_at: string;
}

@ApiSchema({ name: 'LicenseUsageDay' })
export class LicenseUsageDay {
  @ApiProperty({ format: 'date', example: '2025-12-01', description: 'UTC day' })
  date: string;

  @ApiProperty({ type: 'integer', description: 'Successful checks that day' })
  count: number;
}

@ApiSchema({ name: 'LicenseUsageDomain' })
export class LicenseUsageDomain {
  @ApiProperty({ example: 'example.com', description: 'A registered domain the license has been used from' })
  domain: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  activated_at: string;

  @ApiProperty({
    type: 'string',
    isArray: true,
    example: ['shop.example.com'],
    description: 'Subdomains of it the license has been used from',
  })
  subdomains: string[];
}

@ApiSchema({ name: 'LicenseUsage' })
export class LicenseUsageResponse {
  @ApiProperty({ type: 'integer' })
  license_id: number;

  @ApiProperty({ type: () => LicenseUsageDay })
  today: LicenseUsageDay;

  @ApiProperty({ type: 'integer', nullable: true })
  max_usage_per_day: number | null;

  @ApiProperty({
    type: () => LicenseUsageDay,
    isArray: true,
    description: 'The last 30 UTC days, oldest first, today last',
  })
  last_30_days: LicenseUsageDay[];

  @ApiProperty({ type: 'integer', nullable: true })
  max_domains: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @ApiProperty({
    type: () => LicenseUsageDomain,
    isArray: true,
    description:
      'The domains of the 100 most recently seen activations (all of them below 100), in activation order',
  })
  domains: LicenseUsageDomain[];

  @ApiProperty({
    type: () => ActivationResponse,
    isArray: true,
    description: 'The 100 most recently seen activations, most recent first; all of them: GET …/activations',
  })
  activations: ActivationResponse[];

  @ApiProperty({ type: 'integer', description: 'Activations the license holds' })
  activations_total: number;

  @ApiProperty({ type: 'integer', example: 1000, description: 'LICENSE_MAX_ACTIVATIONS' })
  max_activations: number;

  @ApiProperty({
    description:
      'The license holds LICENSE_MAX_ACTIVATIONS activations: a call from a new place is answered as any other but not recorded',
  })
  activations_capped: boolean;

  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: '#/components/schemas/LicenseMeter' },
    example: { 'meter.ai_credits': { used: 120, limit: 1000, resets_at: '2026-12-01T00:00:00Z' } },
    description: "The license's meters (entitlements `meter.*`) this UTC month, by code",
  })
  meters: Record<string, LicenseMeterResponse>;
}
