import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsNotEmpty, IsString } from 'class-validator';
import { MaxChars, OptionalBoolean } from '../../common/http/validators.js';

/** A domain's fields (docs/decisions.md#domains). `domain` is normalised (lowercase, punycode, no trailing dot) by the service. */
export class CreateDomainDto {
  @ApiProperty({
    example: 'shop.example.com',
    description: 'A host name: no scheme, port, path, IP literal or wildcard',
  })
  @IsNotEmpty({ message: 'The domain field is required.' })
  @IsString({ message: 'The domain field must be a string.' })
  @MaxChars(300, { message: 'The domain field must not be greater than 253 characters.' })
  domain: string;

  @ApiPropertyOptional({ default: false, example: true })
  @OptionalBoolean('has_paid')
  has_paid?: boolean;

  @ApiPropertyOptional({ default: true, example: true })
  @OptionalBoolean('is_active')
  is_active?: boolean;

  @ApiPropertyOptional({
    default: false,
    example: true,
    description: 'Setting it clears is_primary on the project’s other domains',
  })
  @OptionalBoolean('is_primary')
  is_primary?: boolean;
}

export class UpdateDomainDto extends PartialType(CreateDomainDto) {}
