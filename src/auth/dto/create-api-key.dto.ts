import { ApiPropertyOptional } from '@nestjs/swagger';
import { OptionalFutureDate, OptionalInt, OptionalString } from '../../common/http/validators.js';

export class CreateApiKeyDto {
  @ApiPropertyOptional({ maxLength: 255, example: 'dashboard', description: '"default" when omitted or blank' })
  @OptionalString('name', 255)
  name?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, nullable: true, example: null, description: 'Scope the key to one of your projects; omit (or null) for a global key' })
  @OptionalInt('project_id', 1)
  project_id?: number | null;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true, example: null, description: 'When the key stops working; null: never' })
  @OptionalFutureDate('expires_at')
  expires_at?: Date | null;
}
