import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { applyDecorators } from '@nestjs/common';
import { IsNotEmpty, IsString } from 'class-validator';
import { MaxChars, RequiredString } from '../../common/http/validators.js';
import { MAX_PASSWORD, MIN_PASSWORD } from '../passwords.js';
import { ROLES, type Role } from '../roles.js';

/** A password as typed: never trimmed (spaces are characters of it), bounded so hashing stays cheap. */
export const Password = (field: string, label: string) =>
  applyDecorators(
    IsNotEmpty({ message: `The ${label} field is required.` }),
    IsString({ message: `The ${label} field must be a string.` }),
    MaxChars(MAX_PASSWORD, {
      message: `The ${label} field must not be greater than ${MAX_PASSWORD} characters.`,
    }),
  );

export class LoginDto {
  @ApiProperty({ maxLength: 255, example: 'ada@example.com' })
  @RequiredString('email', 255)
  email: string;

  @ApiProperty({ maxLength: MAX_PASSWORD, format: 'password', example: 'correct horse battery' })
  @Password('password', 'password')
  password: string;
}

export class ChangePasswordDto {
  @ApiProperty({ maxLength: MAX_PASSWORD, format: 'password', example: 'correct horse battery' })
  @Password('current_password', 'current password')
  current_password: string;

  @ApiProperty({
    minLength: MIN_PASSWORD,
    maxLength: MAX_PASSWORD,
    format: 'password',
    example: 'a new and longer passphrase',
  })
  @Password('new_password', 'new password')
  new_password: string;
}

@ApiSchema({ name: 'SessionUser' })
export class SessionUserResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty()
  email: string;

  @ApiProperty({ type: 'string', nullable: true })
  name: string | null;
}

@ApiSchema({ name: 'Membership' })
export class MembershipResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty({ type: 'integer' })
  account_id: number;

  @ApiProperty({ enum: ROLES })
  role: Role;

  @ApiProperty({
    type: 'integer',
    isArray: true,
    nullable: true,
    description: 'The projects this member may reach; null: every project of the account',
  })
  project_ids: number[] | null;
}

@ApiSchema({ name: 'Session' })
export class SessionResponse {
  @ApiProperty({ type: SessionUserResponse })
  user: SessionUserResponse;

  @ApiProperty({ type: MembershipResponse, isArray: true })
  memberships: MembershipResponse[];

  @ApiProperty({
    type: 'integer',
    description: 'The account this session acts in (the first membership when it signed in)',
  })
  account_id: number;

  @ApiProperty({
    description: 'Send as X-CSRF-Token on every POST, PUT, PATCH and DELETE made with the session cookie',
  })
  csrf_token: string;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'When the session ends at the latest' })
  expires_at: string;
}
