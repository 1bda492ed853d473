import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDate, IsInt, IsOptional, IsString, Min, MinLength } from 'class-validator';
import { FutureDate, MaxChars } from '../../common/validators.js';

export class CreateApiKeyDto {
  @ApiPropertyOptional({ maxLength: 255, example: 'dashboard' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxChars(255)
  name?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, nullable: true, description: 'Scope the key to one of your projects; omit for a global key' })
  @IsOptional()
  @IsInt()
  @Min(1)
  project_id?: number | null;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true })
  @IsOptional()
  @Type(() => Date)
  @IsDate({ message: 'The expires at must be a valid date.' })
  @FutureDate()
  expires_at?: Date | null;
}
