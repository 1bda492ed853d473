import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ENTITLEMENTS_SCHEMA } from '../../plans/dto/plan.dto.js';
import type { Entitlements } from '../../plans/entitlements.js';
import { INJECTABLE_MODES, INJECTABLE_TYPES } from '../../injectables/injectable.entity.js';

/** The item keys of `include=injectables` (docs/decisions.md#injectables). */
@ApiSchema({ name: 'PaidInjectable' })
export class PaidInjectableResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty()
  slug: string;

  @ApiProperty({ type: 'string', nullable: true })
  title: string | null;

  @ApiProperty({ enum: INJECTABLE_TYPES })
  type: string;

  @ApiProperty({ enum: INJECTABLE_MODES })
  mode: string;

  @ApiProperty({ type: 'string', nullable: true })
  target_path: string | null;

  @ApiProperty({ format: 'byte', description: 'The encrypted payload, as stored' })
  content: string;

  @ApiProperty({ type: 'string', nullable: true })
  file_path: string | null;

  @ApiProperty()
  is_active: boolean;

  @ApiProperty()
  only_if_paid: boolean;

  @ApiProperty({ type: 'object', additionalProperties: true })
  meta: Record<string, unknown>;
}

@ApiSchema({ name: 'HasPaid' })
export class HasPaidResponse {
  @ApiProperty()
  has_paid: boolean;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    description:
      'Only while a payment grace runs for the project, domain or billing: license license that answered: has_paid stays true until then (docs/payments.md)',
  })
  grace_until?: string;

  @ApiPropertyOptional({ description: 'POST /project/has-paid only: whether the license is a test license' })
  is_test_license?: boolean;

  @ApiPropertyOptional({
    type: 'string',
    format: 'uri',
    nullable: true,
    description: "Only when has_paid is false: the project's default_redirect_url",
  })
  redirect_url?: string | null;

  @ApiPropertyOptional({
    type: () => PaidInjectableResponse,
    isArray: true,
    description: 'Only with include=injectables and has_paid true: the active paid-only injectables',
  })
  injectables?: PaidInjectableResponse[];

  @ApiPropertyOptional({
    example: 'LG1.eyJwcm9qZWN0X2lkIjoxfQ.c2lnbmF0dXJl',
    description:
      "POST /project/has-paid only, with include=token, has_paid true and the project's offline_grace_hours above 0 " +
      "(exp: the earliest of iat + offline_grace_hours × 3600, the answering grace_until, the license's grace_until and expires_at): " +
      'LG1.<base64url(payload JSON)>.<base64url(Ed25519 over "LG1-TOKEN\\n" + the payload part)>, payload ' +
      '{project_id, license_id, key_sha256, domain, has_paid: true, is_test_license, plan?, entitlements?, iat, exp}',
  })
  token?: string;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    example: 'pro',
    description:
      'POST /project/has-paid only, for a license with a plan or entitlements of its own: the plan code (null without a plan)',
  })
  plan?: string | null;

  @ApiPropertyOptional({
    ...ENTITLEMENTS_SCHEMA,
    description:
      "With `plan`: the license's effective entitlements (the plan's, overridden code by code by the license's) when has_paid is true, `{}` when it is false",
  })
  entitlements?: Entitlements;
}

@ApiSchema({ name: 'HasPaidConfig', description: 'Honoured only for licenses with allow_configs' })
export class HasPaidConfig {
  @ApiPropertyOptional({ enum: ['check_project'] })
  action?: 'check_project';

  @ApiPropertyOptional({
    type: 'string',
    example: 'injectables,token',
    description: 'As the include query parameter',
  })
  include?: string;

  @ApiPropertyOptional({ example: 'shop.example.com' })
  domain?: string;
}

/** The optional JSON body of POST /project/has-paid; every field has a header or query equivalent. */
@ApiSchema({ name: 'HasPaidRequest' })
export class HasPaidRequest {
  @ApiPropertyOptional({
    description: 'The license key, when neither X-LICENSE-KEY nor the license query parameter is sent',
  })
  license?: string;

  @ApiPropertyOptional({
    example: 'shop.example.com',
    description: 'The calling domain, when neither X-Service-Domain nor the domain query parameter is sent',
  })
  domain?: string;

  @ApiPropertyOptional({ type: () => HasPaidConfig })
  config?: HasPaidConfig;
}
