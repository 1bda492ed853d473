import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { MaxChars } from '../../common/http/validators.js';

const trimmed = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** A customer's fields (docs/payments.md#customers). The service stores `email` lower-case. */
export class CreateCustomerDto {
  @ApiProperty({
    maxLength: 320,
    example: 'ada@example.com',
    description: 'Stored lower-case; not unique (two buyers may type one address)',
  })
  @trimmed()
  @IsNotEmpty({ message: 'The email field is required.' })
  @IsString({ message: 'The email field must be a string.' })
  @MaxChars(320, { message: 'The email field must not be greater than 320 characters.' })
  @IsEmail({}, { message: 'The email field must be a valid email address.' })
  email: string;

  @ApiPropertyOptional({ type: 'string', maxLength: 255, nullable: true, example: 'Ada Lovelace' })
  @trimmed()
  @IsOptional()
  @IsString({ message: 'The name field must be a string.' })
  @MaxChars(255, { message: 'The name field must not be greater than 255 characters.' })
  name?: string | null;
}

export class UpdateCustomerDto extends PartialType(CreateCustomerDto) {}
