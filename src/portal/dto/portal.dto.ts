import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { OptionalInt, OptionalString } from '../../common/http/validators.js';
import { ActivationResponse } from '../../licenses/dto/activation.response.js';

export class CreatePortalSessionDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    nullable: true,
    example: null,
    description:
      'A customer of this project: the portal shows all their licenses of it. Exactly one of customer_id and license_id',
  })
  @OptionalInt('customer_id', 1)
  customer_id?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    nullable: true,
    example: 1,
    description:
      'A license of this project: the portal shows that license only. Exactly one of customer_id and license_id',
  })
  @OptionalInt('license_id', 1)
  license_id?: number;

  @ApiPropertyOptional({
    maxLength: 2048,
    example: 'https://app.example.com/account',
    description: 'Where "Back to <host>" leads: an https URL (any scheme with a host outside production)',
  })
  @OptionalString('return_url', 2048)
  return_url?: string;
}

@ApiSchema({ name: 'PortalLink', description: 'A one-use link into the customer portal' })
export class PortalLinkResponse {
  @ApiProperty({
    example: 'https://licenses.example.com/portal/3q2-7wEw5m0fJk4lJq9w2aX0cN8yV1rT6uB5eD4gH7s',
    description: 'PUBLIC_URL/portal/<token>: send the buyer there (a redirect from your app). Shown once',
  })
  url: string;

  @ApiProperty({ type: 'string', format: 'date-time', description: '15 minutes from now' })
  expires_at: string;
}

@ApiSchema({ name: 'PortalCustomer' })
export class PortalCustomerResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ example: 'buyer@example.com' })
  email: string;

  @ApiProperty({ type: 'string', nullable: true })
  name: string | null;
}

@ApiSchema({ name: 'PortalProject' })
export class PortalProjectResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ example: 'Acme Forms Pro' })
  name: string;
}

@ApiSchema({ name: 'PortalPayment', description: 'Whether the license answers paid now' })
export class PortalPaymentResponse {
  @ApiProperty({
    enum: ['paid', 'grace', 'unpaid'],
    description: 'grace: paid until grace_until, then unpaid unless a payment arrives',
  })
  state: 'paid' | 'grace' | 'unpaid';

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  grace_until: string | null;
}

@ApiSchema({ name: 'PortalSelfDeactivations' })
export class PortalSelfDeactivationsResponse {
  @ApiProperty({ type: 'integer', description: 'SELF_DEACTIVATIONS_PER_DAY' })
  per_day: number;

  @ApiProperty({ type: 'integer', description: 'Sites that can still be freed today (UTC)' })
  left_today: number;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'Midnight UTC' })
  resets_at: string;
}

@ApiSchema({ name: 'PortalOfflineTokenState' })
export class PortalOfflineTokenStateResponse {
  @ApiProperty()
  available: boolean;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Why no token can be had now (revoked, expired, unpaid, turned off)',
  })
  reason: string | null;
}

@ApiSchema({ name: 'PortalLicense', description: 'A license as its buyer sees it in the portal' })
export class PortalLicenseResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ example: '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f', description: 'The license key' })
  key: string;

  @ApiProperty()
  title: string;

  @ApiProperty({ enum: ['active', 'revoked', 'expired'] })
  status: 'active' | 'revoked' | 'expired';

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  revoked_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  expires_at: string | null;

  @ApiProperty()
  is_test_license: boolean;

  @ApiProperty({ type: () => PortalPaymentResponse })
  payment: PortalPaymentResponse;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: "The license's plan ({id, code, name}) when it has one",
  })
  plan: Record<string, unknown> | null;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { 'feature.export': true, seats: 5 },
    description: 'What the license includes',
  })
  entitlements: Record<string, unknown>;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'Metered usage this month, by meter ({used, limit, resets_at}), when the license has meters',
  })
  meters: Record<string, unknown> | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_domains: number | null;

  @ApiProperty({ type: 'integer', nullable: true })
  max_subdomains_per_domain: number | null;

  @ApiProperty({
    type: () => ActivationResponse,
    isArray: true,
    description: 'The 100 most recently seen sites, oldest first',
  })
  activations: ActivationResponse[];

  @ApiProperty({ type: 'integer' })
  activations_total: number;

  @ApiProperty({ type: () => PortalSelfDeactivationsResponse })
  self_deactivations: PortalSelfDeactivationsResponse;

  @ApiProperty({ type: () => PortalOfflineTokenStateResponse })
  offline_token: PortalOfflineTokenStateResponse;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;
}

@ApiSchema({ name: 'PortalSession', description: 'What the portal session shows' })
export class PortalSessionResponse {
  @ApiProperty({
    type: () => PortalCustomerResponse,
    nullable: true,
    description: 'The customer; for a portal opened on one license, its customer or null',
  })
  customer: PortalCustomerResponse | null;

  @ApiProperty({ type: () => PortalProjectResponse })
  project: PortalProjectResponse;

  @ApiProperty({ type: () => PortalLicenseResponse, isArray: true, description: 'Newest first, at most 100' })
  licenses: PortalLicenseResponse[];

  @ApiProperty({ description: 'Send it as X-CSRF-Token on every write' })
  csrf_token: string;

  @ApiProperty({ type: 'string', nullable: true, description: 'Where "Back to <host>" leads' })
  return_url: string | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    description: 'The session ends an hour after it opened',
  })
  expires_at: string;
}

@ApiSchema({ name: 'PortalSiteFreed' })
export class PortalSiteFreedResponse {
  @ApiProperty({ type: 'integer', example: 1 })
  deactivated: number;

  @ApiProperty({ type: 'integer', description: 'Sites that can still be freed today (UTC)' })
  left_today: number;

  @ApiProperty({ type: 'integer', description: 'SELF_DEACTIVATIONS_PER_DAY' })
  per_day: number;
}

@ApiSchema({
  name: 'PortalOfflineToken',
  description: 'An offline token as the has-paid check with include=token issues it (domain null)',
})
export class PortalOfflineTokenResponse {
  @ApiProperty({ example: 'LG1.eyJwcm9qZWN0X2lkIjoxfQ.c2lnbmF0dXJl' })
  token: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  expires_at: string;

  @ApiProperty({ type: 'integer' })
  license_id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;
}
