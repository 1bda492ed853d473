import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { instanceToPlain } from 'class-transformer';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
} from '../common/openapi/decorators.js';
import { ApiKeyAuth } from './api-key.guard.js';
import {
  InvitationCreatedResponse,
  InvitationResponse,
  InviteMemberDto,
  MemberResponse,
  UpdateMemberDto,
} from './dto/members.dto.js';
import type { InvitationEntity } from './invitation.entity.js';
import { ALREADY_MEMBER, LAST_OWNER, MembersService, OWN_ROLE, OWNER_ONLY } from './members.service.js';
import { ApiPrincipal, CurrentPrincipal } from './principal.js';

const FORBIDDEN_MEMBERS = {
  status: 403,
  description:
    'Invalid key, a role below the route’s, a project-scoped key or membership; an admin touching the owner role; or your own membership',
  message: OWNER_ONLY,
};

/** The people of the caller's account and the invitations to it (docs/security.md#members-and-invitations). */
@ApiTags('members')
@ApiKeyAuth()
@ApiErrors(500, DATABASE_AWAY)
@Controller('members')
export class MembersController {
  constructor(private readonly members: MembersService) {}

  @Get()
  @ApiOperation({
    summary: "List the account's members",
    description: 'Every member with their role and projects.',
  })
  @ApiEnvelope(MemberResponse, { isArray: true })
  list(@CurrentPrincipal() principal: ApiPrincipal) {
    return this.members.list(principal);
  }

  @Get('invitations')
  @ApiOperation({
    summary: 'List the open invitations',
    description: 'Invitations neither accepted, revoked nor expired; never their URL, which is shown once.',
  })
  @ApiEnvelope(InvitationResponse, { isArray: true })
  invitations(@CurrentPrincipal() principal: ApiPrincipal): Promise<InvitationEntity[]> {
    return this.members.pendingInvitations(principal);
  }

  @Post('invitations')
  @ApiOperation({
    summary: 'Invite a person',
    description:
      'The invitation_url works once, for 72 hours, and is in this answer only; with SMTP_URL it is also mailed. ' +
      'Only an owner invites an owner.',
  })
  @ApiEnvelope(InvitationCreatedResponse, { status: 201 })
  @ApiBodyErrors(FORBIDDEN_MEMBERS, { status: 409, description: 'Already a member', message: ALREADY_MEMBER })
  async invite(@CurrentPrincipal() principal: ApiPrincipal, @Body() body: InviteMemberDto) {
    const { invitation, url, mailed } = await this.members.invite(principal, body);
    return { ...instanceToPlain(invitation), invitation_url: url, mailed };
  }

  @Delete('invitations/:id')
  @ApiOperation({ summary: 'Revoke an invitation', description: 'Its URL stops working.' })
  @ApiIdParam('id', 'Invitation id')
  @ApiEnvelope(InvitationResponse)
  @ApiErrors(404, FORBIDDEN_MEMBERS)
  revokeInvitation(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('id', IdPipe) id: number,
  ): Promise<InvitationEntity> {
    return this.members.revokeInvitation(principal, id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: "Change a member's role or projects",
    description:
      'Nobody changes their own; only an owner grants or changes the owner role; the last owner stays owner (409).',
  })
  @ApiIdParam('id', 'Member id (the membership)')
  @ApiEnvelope(MemberResponse)
  @ApiBodyErrors(
    404,
    { ...FORBIDDEN_MEMBERS, message: OWN_ROLE },
    { status: 409, description: 'The last owner', message: LAST_OWNER },
  )
  update(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('id', IdPipe) id: number,
    @Body() body: UpdateMemberDto,
  ) {
    return this.members.update(principal, id, body);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Remove a member',
    description:
      'Their sessions in the account end and the API keys they made are revoked. Only an owner removes an owner; the last owner stays (409).',
  })
  @ApiIdParam('id', 'Member id (the membership)')
  @ApiEnvelope(null)
  @ApiErrors(404, FORBIDDEN_MEMBERS, { status: 409, description: 'The last owner', message: LAST_OWNER })
  async remove(@CurrentPrincipal() principal: ApiPrincipal, @Param('id', IdPipe) id: number): Promise<null> {
    await this.members.remove(principal, id);
    return null;
  }
}
