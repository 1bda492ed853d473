import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({
  name: 'Activation',
  description:
    'A (registered domain, host) a license has been used from: what max_domains and max_subdomains_per_domain count.',
})
export class ActivationResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  license_id: number;

  @ApiProperty({ example: 'example.com', description: 'The registered domain the use was counted against' })
  domain: string;

  @ApiProperty({
    example: 'shop.example.com',
    description:
      "'' for the registered domain itself (its max_domains slot, taken by any use from it or a subdomain); else the exact subdomain",
  })
  host: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  first_seen_at: string;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    description: 'Within a minute of the last use (written in batches)',
  })
  last_seen_at: string;
}

@ApiSchema({ name: 'Deactivation' })
export class DeactivationResponse {
  @ApiProperty({
    type: 'integer',
    example: 1,
    description: 'The activations of that exact host that were deleted; 0 when there were none',
  })
  deactivated: number;
}

@ApiSchema({ name: 'DeactivationRequest' })
export class DeactivationRequest {
  @ApiProperty({
    required: false,
    example: 'shop.example.com',
    description:
      'The host to deactivate, when X-Service-Domain is not sent (a URL or host:port is reduced to the host)',
  })
  domain?: string;

  @ApiProperty({
    required: false,
    description: 'The license key, when neither X-LICENSE-KEY nor the `license` query parameter is sent',
  })
  license?: string;
}

@ApiSchema({
  name: 'LicenseDeactivatedEvent',
  description: '`data` of the license.deactivated webhook: an activation was deleted and its slot freed.',
})
export class LicenseDeactivatedEvent {
  @ApiProperty({ type: 'integer' })
  license_id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ example: 'example.com' })
  domain: string;

  @ApiProperty({ example: '', description: "'' for the registered domain itself, else the subdomain" })
  host: string;

  @ApiProperty({
    enum: ['api_key', 'license', 'portal'],
    description:
      'api_key: DELETE …/activations/{activation}; license: POST /license/deactivate; portal: the buyer in the customer portal',
  })
  by: 'api_key' | 'license' | 'portal';
}

@ApiSchema({
  name: 'LicenseDomainLimitReachedEvent',
  description:
    '`data` of the license.domain_limit_reached webhook: sent on the first refusal of a license for a place (domain and host) per UTC day.',
})
export class LicenseDomainLimitReachedEvent {
  @ApiProperty({ type: 'integer' })
  license_id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ enum: ['max_domains', 'max_subdomains_per_domain'] })
  limit: 'max_domains' | 'max_subdomains_per_domain';

  @ApiProperty({ example: 'example.com' })
  domain: string;

  @ApiProperty({
    example: 'shop.example.com',
    description: "'' for the registered domain itself, else the subdomain",
  })
  host: string;
}
