import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { LicenseResponse } from '../../licenses/dto/license.response.js';
import { SubscriptionResponse } from '../../payments/dto/subscription.response.js';
import { PROVIDERS } from '../../payments/providers/registry.js';

@ApiSchema({ name: 'CustomerExternalId' })
export class CustomerExternalIdResponse {
  @ApiProperty({ enum: PROVIDERS })
  provider: string;

  @ApiProperty({ example: 'cus_QdH6sGswQ2Dk9L', description: "The provider's id for this customer" })
  id: string;
}

@ApiSchema({ name: 'Customer' })
export class CustomerResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  project_id: number;

  @ApiProperty({ example: 'ada@example.com', description: 'Lower-case; not unique' })
  email: string;

  @ApiProperty({ type: 'string', nullable: true, example: 'Ada Lovelace' })
  name: string | null;

  @ApiProperty({
    type: [CustomerExternalIdResponse],
    description: "The payment providers' ids for this customer, set by the payment connectors",
  })
  external_ids: CustomerExternalIdResponse[];

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({ name: 'CustomerWithPurchases' })
export class CustomerDetailResponse extends CustomerResponse {
  @ApiProperty({ type: [LicenseResponse], description: 'Their licenses, newest first, at most 50' })
  licenses: LicenseResponse[];

  @ApiProperty({ type: [SubscriptionResponse], description: 'Their purchases, newest first, at most 50' })
  subscriptions: SubscriptionResponse[];
}
