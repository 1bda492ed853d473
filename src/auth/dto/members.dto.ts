import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Max,
  Min,
  ValidateIf,
} from 'class-validator';
import { RequiredString } from '../../common/http/validators.js';
import { MAX_PASSWORD, MIN_PASSWORD } from '../passwords.js';
import { ROLES, type Role } from '../roles.js';
import { Password } from './session.dto.js';

const ROLE_INVALID = `The selected role is invalid: use one of ${ROLES.join(', ')}.`;

/** A required role: missing, not a string, or not a role, each with its one message. */
const RequiredRole = () =>
  applyDecorators(
    IsNotEmpty({ message: 'The role field is required.' }),
    IsString({ message: 'The role field must be a string.' }),
    IsIn(ROLES, { message: ROLE_INVALID }),
  );
const MAX_PROJECT_IDS = 1000;

/** null or omitted: every project of the account; else some of its projects. */
const ProjectIds = () =>
  applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      isArray: true,
      nullable: true,
      example: null,
      description: 'Only these projects of the account; null or omitted: every project',
    }),
    ValidateIf((_, value) => value !== undefined && value !== null),
    IsArray({ message: 'The project ids field must be an array of project ids, or null.' }),
    ArrayMaxSize(MAX_PROJECT_IDS, {
      message: `The project ids field must not have more than ${MAX_PROJECT_IDS} items.`,
    }),
    IsInt({ each: true, message: 'The project ids field must hold project ids (positive integers).' }),
    Min(1, { each: true, message: 'The project ids field must hold project ids (positive integers).' }),
    Max(2_147_483_647, {
      each: true,
      message: 'The project ids field must hold project ids (positive integers).',
    }),
  );

export class InviteMemberDto {
  @ApiProperty({ maxLength: 255, example: 'grace@example.com' })
  @RequiredString('email', 255)
  email: string;

  @ApiProperty({ enum: ROLES, example: 'developer' })
  @RequiredRole()
  role: Role;

  @ProjectIds()
  project_ids?: number[] | null;
}

export class UpdateMemberDto {
  @ApiPropertyOptional({ enum: ROLES, example: 'support' })
  // Omitted keeps the role; null is refused like any value that is not a role.
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ message: 'The role field must be a string.' })
  @IsIn(ROLES, { message: ROLE_INVALID })
  role?: Role;

  @ProjectIds()
  project_ids?: number[] | null;
}

export class AcceptInvitationDto {
  @ApiPropertyOptional({
    minLength: MIN_PASSWORD,
    maxLength: MAX_PASSWORD,
    format: 'password',
    example: 'correct horse battery',
    description: 'The new user’s password; omitted when the email already has a user, who is signed in',
  })
  @IsOptional()
  @Password('password', 'password')
  password?: string;
}

export class SetupDto {
  @ApiProperty({
    maxLength: 64,
    example: 'Zmlyc3QtYWNjb3VudC1zZXR1cC1jb2RlLWV4YW1wbGUtMzI',
    description:
      'The code of the setup link the server printed at start (docs/security.md#the-first-account)',
  })
  @RequiredString('code', 64)
  code: string;

  @ApiProperty({ maxLength: 255, example: 'ada@example.com' })
  @RequiredString('email', 255)
  email: string;

  @ApiProperty({
    minLength: MIN_PASSWORD,
    maxLength: MAX_PASSWORD,
    format: 'password',
    example: 'correct horse battery',
  })
  @Password('password', 'password')
  password: string;
}

export class PasswordResetRequestDto {
  @ApiProperty({ maxLength: 255, example: 'ada@example.com' })
  @RequiredString('email', 255)
  email: string;
}

export class PasswordResetDto {
  @ApiProperty({
    minLength: MIN_PASSWORD,
    maxLength: MAX_PASSWORD,
    format: 'password',
    example: 'a new and longer passphrase',
  })
  @Password('password', 'password')
  password: string;
}

@ApiSchema({ name: 'Member' })
export class MemberResponse {
  @ApiProperty({ type: 'integer', description: 'The membership id: PATCH and DELETE /members/{id} take it' })
  id: number;

  @ApiProperty({ type: 'integer' })
  user_id: number;

  @ApiProperty()
  email: string;

  @ApiProperty({ type: 'string', nullable: true })
  name: string | null;

  @ApiProperty({ enum: ROLES })
  role: Role;

  @ApiProperty({ type: 'integer', isArray: true, nullable: true })
  project_ids: number[] | null;

  @ApiProperty({ description: 'The member signs in with a password' })
  has_password: boolean;

  @ApiProperty({ description: 'The member has signed in with SSO' })
  has_sso: boolean;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;
}

@ApiSchema({ name: 'Invitation' })
export class InvitationResponse {
  @ApiProperty({ type: 'integer' })
  id: number;

  @ApiProperty()
  email: string;

  @ApiProperty({ enum: ROLES })
  role: Role;

  @ApiProperty({ type: 'integer', isArray: true, nullable: true })
  project_ids: number[] | null;

  @ApiProperty({ type: 'integer' })
  account_id: number;

  @ApiProperty({ type: 'integer', nullable: true })
  invited_by_user_id: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'The URL stops working then' })
  expires_at: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  accepted_at: string | null;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The user who accepted it' })
  accepted_by_user_id: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  revoked_at: string | null;

  @ApiProperty({ type: 'string', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  updated_at: string;
}

@ApiSchema({ name: 'InvitationCreated' })
export class InvitationCreatedResponse extends InvitationResponse {
  @ApiProperty({
    example: 'https://licenses.example.com/console/#/invitation/3q2-7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    description: 'Open to accept: shown in this answer only (and mailed when SMTP_URL is set)',
  })
  invitation_url: string;

  @ApiProperty({ description: 'Whether the invitation was mailed (SMTP_URL set and the server took it)' })
  mailed: boolean;
}
