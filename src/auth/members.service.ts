import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { EntityManager, In, IsNull, Repository } from 'typeorm';
import { type Actor, currentAuditContext, inAuditContext } from '../audit/audit-context.js';
import { AuditLog } from '../audit/audit-log.service.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError, fieldError, forbidden, notFound } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { Clock } from '../common/time.js';
import { AppConfig } from '../config/app-config.js';
import { UnitOfWork, lockedRow } from '../database/unit-of-work.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { AccountEntity, MembershipEntity } from './account.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { requireGlobalKey } from './auth.service.js';
import { InvitationEntity, UserIdentityEntity } from './invitation.entity.js';
import { Mailer } from './mailer.js';
import { assertPasswordShape, hashPassword } from './passwords.js';
import type { ApiPrincipal } from './principal.js';
import type { Role } from './roles.js';
import { SessionEntity } from './session.entity.js';
import { UserEntity } from './user.entity.js';

export const INVITATION_TTL_MS = 72 * 3_600_000;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export const OWNER_ONLY = 'Only an owner may grant, change or remove the owner role.';
export const OWN_ROLE = 'Nobody changes their own role or projects: ask another owner or admin.';
export const LAST_OWNER =
  "The account's last owner cannot be removed or demoted: make another member owner first.";
export const ALREADY_MEMBER = 'This email already belongs to a member of the account.';
export const INVITATION_INVALID =
  'This invitation is not valid: it may have been revoked. Ask for a new one.';
export const INVITATION_USED = 'This invitation has already been used.';
export const INVITATION_EXPIRED = 'This invitation has expired: ask for a new one.';
export const SIGN_IN_TO_ACCEPT =
  'This email already has a user: sign in as that user, then accept the invitation (no password needed).';
export const OTHER_USER =
  'This invitation is for another email than the one you are signed in with: sign out, or sign in as the invited user.';
export const PASSWORD_REQUIRED = 'The password field is required: it is the password of your new user.';

export interface MemberView {
  id: number;
  user_id: number;
  email: string;
  name: string | null;
  role: Role;
  project_ids: number[] | null;
  has_password: boolean;
  has_sso: boolean;
  created_at: string;
}

/** The account a caller acts in: their membership's, or the holder's for a key the holder or the CLI made. */
export async function accountOf(manager: EntityManager, principal: ApiPrincipal): Promise<AccountEntity> {
  if (principal.member)
    return manager.findOneByOrFail(AccountEntity, { id: principal.member.membership.account_id });
  return manager.findOneByOrFail(AccountEntity, { holder_user_id: principal.user.id });
}

/** The caller's role: a member's, or owner for a key the holder or the CLI made. */
const roleOf = (principal: ApiPrincipal): Role => principal.member?.membership.role ?? 'owner';

/**
 * The people of an account and the invitations to it (docs/security.md#members-and-invitations). The
 * rules a change must keep are read here in one order: owner-only changes, nobody's own role, the
 * last owner.
 */
@Injectable()
export class MembersService {
  constructor(
    @InjectRepository(MembershipEntity) private readonly memberships: Repository<MembershipEntity>,
    @InjectRepository(InvitationEntity) private readonly invitations: Repository<InvitationEntity>,
    private readonly unit: UnitOfWork,
    private readonly audits: AuditLog,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async list(principal: ApiPrincipal): Promise<MemberView[]> {
    const manager = this.memberships.manager;
    const account = await accountOf(manager, principal);
    const rows = await this.memberships.find({ where: { account_id: account.id }, order: { id: 'ASC' } });
    if (rows.length === 0) return [];
    const users = await manager
      .createQueryBuilder(UserEntity, 'u')
      .addSelect('u.password_hash')
      .where({ id: In(rows.map((row) => row.user_id)) })
      .getMany();
    const identities = await manager.find(UserIdentityEntity, {
      where: { user_id: In(rows.map((row) => row.user_id)) },
      select: { user_id: true },
    });
    const linked = new Set(identities.map((identity) => identity.user_id));
    return rows.flatMap((row) => {
      const user = users.find((u) => u.id === row.user_id);
      if (!user) return [];
      return [
        {
          id: row.id,
          user_id: user.id,
          email: user.email,
          name: user.name,
          role: row.role,
          project_ids: row.project_ids,
          has_password: Boolean(user.password_hash),
          has_sso: linked.has(user.id),
          created_at: toIsoTimestamp(row.created_at)!,
        },
      ];
    });
  }

  /** The newest open invitation (not used, revoked or expired) for this email, in any account. */
  async openInvitationFor(email: string): Promise<InvitationEntity | null> {
    const open = await this.invitations.find({
      where: { email, accepted_at: IsNull(), revoked_at: IsNull() },
      order: { id: 'DESC' },
    });
    return open.find((invitation) => invitation.expires_at.getTime() > this.clock.nowMs()) ?? null;
  }

  async pendingInvitations(principal: ApiPrincipal): Promise<InvitationEntity[]> {
    const account = await accountOf(this.invitations.manager, principal);
    const open = await this.invitations.find({
      where: { account_id: account.id, accepted_at: IsNull(), revoked_at: IsNull() },
      order: { id: 'ASC' },
    });
    const now = this.clock.nowMs();
    return open.filter((invitation) => invitation.expires_at.getTime() > now);
  }

  /** Invites a person; the token exists only in the answer's URL (and the mail). */
  async invite(
    principal: ApiPrincipal,
    input: { email: string; role: Role; project_ids?: number[] | null },
  ): Promise<{ invitation: InvitationEntity; url: string; mailed: boolean }> {
    requireGlobalKey(principal);
    const email = input.email.trim().toLowerCase();
    if (!/^[^\s@]+@[^\s@]+$/.test(email))
      throw fieldError('email', 'The email must be a valid email address.');
    if (input.role === 'owner' && roleOf(principal) !== 'owner') throw forbidden(OWNER_ONLY);
    const manager = this.invitations.manager;
    const account = await accountOf(manager, principal);
    const projectIds = await this.checkedProjects(manager, account, input.project_ids ?? null);
    const existing = await manager.findOneBy(UserEntity, { email });
    if (
      existing &&
      (await manager.existsBy(MembershipEntity, { account_id: account.id, user_id: existing.id }))
    )
      throw new ApiError(HttpStatus.CONFLICT, ALREADY_MEMBER);
    const token = randomBytes(32).toString('base64url');
    const invitation = await this.audits.change(
      { owner_id: account.holder_user_id, project_id: null },
      async (m) => {
        const result = await m.insert(InvitationEntity, {
          account_id: account.id,
          email,
          role: input.role,
          project_ids: projectIds,
          token_hash: sha256Hex(token),
          invited_by_user_id: principal.member?.user.id ?? null,
          expires_at: new Date(Math.floor((this.clock.nowMs() + INVITATION_TTL_MS) / 1000) * 1000),
          accepted_at: null,
          accepted_by_user_id: null,
          revoked_at: null,
        });
        const row = await m.findOneByOrFail(InvitationEntity, { id: result.identifiers[0].id as number });
        return { result: row, audit: { action: 'member.invited', before: null, after: row } };
      },
    );
    const url = `${this.config.publicUrl}/console/#/invitation/${token}`;
    const mailed = await this.mailer.send({
      to: email,
      subject: 'Your invitation to LicenseGate',
      text:
        `You have been invited to a LicenseGate account as ${input.role}.\n\n` +
        `Accept the invitation here (the link works once, for 72 hours):\n${url}\n`,
    });
    return { invitation, url, mailed };
  }

  async revokeInvitation(principal: ApiPrincipal, id: number): Promise<InvitationEntity> {
    requireGlobalKey(principal);
    const account = await accountOf(this.invitations.manager, principal);
    const found = await this.invitations.findOneBy({ id, account_id: account.id });
    if (!found || found.accepted_at || found.revoked_at) throw notFound('Invitation');
    if (found.role === 'owner' && roleOf(principal) !== 'owner') throw forbidden(OWNER_ONLY);
    return this.audits.change({ owner_id: account.holder_user_id, project_id: null }, async (m) => {
      const before = await lockedRow(m, InvitationEntity, id);
      if (before.accepted_at || before.revoked_at) throw notFound('Invitation');
      await m.update(
        InvitationEntity,
        { id },
        { revoked_at: new Date(Math.floor(this.clock.nowMs() / 1000) * 1000) },
      );
      const after = await m.findOneByOrFail(InvitationEntity, { id });
      return {
        result: after,
        audit: { action: 'member.removed', before, after, resource_type: 'invitation' },
      };
    });
  }

  /**
   * Accepts an invitation: a new user with `password`, or the signed-in user whose email it names.
   * The invitation is marked used by a conditional update, so that two accepts cannot both win.
   */
  async accept(
    token: string,
    input: { password?: string; signedIn: UserEntity | null },
  ): Promise<{ user: UserEntity; membership: MembershipEntity }> {
    const invitation = TOKEN_SHAPE.test(token)
      ? await this.invitations.findOneBy({ token_hash: sha256Hex(token) })
      : null;
    if (!invitation || invitation.revoked_at) throw new ApiError(HttpStatus.NOT_FOUND, INVITATION_INVALID);
    if (invitation.accepted_at) throw new ApiError(HttpStatus.CONFLICT, INVITATION_USED);
    if (invitation.expires_at.getTime() <= this.clock.nowMs())
      throw new ApiError(HttpStatus.GONE, INVITATION_EXPIRED);
    const existing = await this.invitations.manager.findOneBy(UserEntity, { email: invitation.email });
    if (existing) {
      if (!input.signedIn) throw new ApiError(HttpStatus.UNAUTHORIZED, SIGN_IN_TO_ACCEPT);
      if (input.signedIn.id !== existing.id) throw forbidden(OTHER_USER);
    } else if (input.signedIn && input.signedIn.email !== invitation.email) {
      throw forbidden(OTHER_USER);
    }
    let password_hash: string | null = null;
    if (!existing) {
      // null is no password either (the DTO's @IsOptional lets it through).
      if (input.password === undefined || input.password === null)
        throw fieldError('password', PASSWORD_REQUIRED);
      assertPasswordShape(input.password);
      password_hash = await hashPassword(input.password);
    }
    return this.join(invitation, existing, password_hash);
  }

  /**
   * The invited person joins: their user (new, with `password_hash` or none for SSO) and membership,
   * and the invitation used, in one unit of work audited as member.joined by the person themselves.
   */
  async join(
    invitation: InvitationEntity,
    existing: UserEntity | null,
    password_hash: string | null,
  ): Promise<{ user: UserEntity; membership: MembershipEntity }> {
    const account = await this.invitations.manager.findOneByOrFail(AccountEntity, {
      id: invitation.account_id,
    });
    return this.unit.run(async (m) => {
      const used = await m
        .createQueryBuilder()
        .update(InvitationEntity)
        .set({ accepted_at: new Date(Math.floor(this.clock.nowMs() / 1000) * 1000) })
        .where('id = :id AND accepted_at IS NULL AND revoked_at IS NULL', { id: invitation.id })
        .execute();
      if (!used.affected) throw new ApiError(HttpStatus.CONFLICT, INVITATION_USED);
      const userId = existing?.id ?? (await this.newUser(m, invitation.email, password_hash));
      if (await m.existsBy(MembershipEntity, { account_id: account.id, user_id: userId }))
        throw new ApiError(HttpStatus.CONFLICT, ALREADY_MEMBER);
      await m.update(InvitationEntity, { id: invitation.id }, { accepted_by_user_id: userId });
      const membership = await this.addMember(m, account, userId, invitation.role, invitation.project_ids);
      return { user: await m.findOneByOrFail(UserEntity, { id: userId }), membership };
    });
  }

  /** A new member admitted by their SSO email's domain, with OIDC_DEFAULT_ROLE, in the account `accountId`. */
  async admit(accountId: number, email: string, role: Role): Promise<UserEntity> {
    const account = await this.invitations.manager.findOneByOrFail(AccountEntity, { id: accountId });
    return this.unit.run(async (m) => {
      const existing = await m.findOneBy(UserEntity, { email });
      const userId = existing?.id ?? (await this.newUser(m, email, null));
      await this.addMember(m, account, userId, role, null);
      return m.findOneByOrFail(UserEntity, { id: userId });
    });
  }

  async update(
    principal: ApiPrincipal,
    id: number,
    input: { role?: Role; project_ids?: number[] | null },
  ): Promise<MemberView> {
    requireGlobalKey(principal);
    const manager = this.memberships.manager;
    const account = await accountOf(manager, principal);
    const target = await this.memberships.findOneBy({ id, account_id: account.id });
    if (!target) throw notFound('Member');
    const role = roleOf(principal);
    if (principal.member && target.user_id === principal.member.user.id) throw forbidden(OWN_ROLE);
    if (role !== 'owner' && (target.role === 'owner' || input.role === 'owner')) throw forbidden(OWNER_ONLY);
    const projectIds =
      input.project_ids === undefined
        ? undefined
        : await this.checkedProjects(manager, account, input.project_ids);
    await this.audits.change({ owner_id: account.holder_user_id, project_id: null }, async (m) => {
      const before = await lockedRow(m, MembershipEntity, id);
      if (before.role === 'owner' && input.role !== undefined && input.role !== 'owner')
        await this.assertNotLastOwner(m, account.id, before.id);
      const changes: Partial<MembershipEntity> = {};
      if (input.role !== undefined) changes.role = input.role;
      if (projectIds !== undefined) changes.project_ids = projectIds;
      if (Object.keys(changes).length > 0)
        await m.update(MembershipEntity, { id }, { ...changes, version: before.version + 1 });
      const after = await m.findOneByOrFail(MembershipEntity, { id });
      return { result: after, audit: { action: 'member.updated', before, after } };
    });
    return (await this.list(principal)).find((member) => member.id === id)!;
  }

  /** Removes a member: their sessions in the account end and the API keys they made are revoked. */
  async remove(principal: ApiPrincipal, id: number): Promise<void> {
    requireGlobalKey(principal);
    const manager = this.memberships.manager;
    const account = await accountOf(manager, principal);
    const target = await this.memberships.findOneBy({ id, account_id: account.id });
    if (!target) throw notFound('Member');
    if (roleOf(principal) !== 'owner' && target.role === 'owner') throw forbidden(OWNER_ONLY);
    const now = new Date(Math.floor(this.clock.nowMs() / 1000) * 1000);
    await this.audits.change({ owner_id: account.holder_user_id, project_id: null }, async (m) => {
      const before = await lockedRow(m, MembershipEntity, id);
      if (before.role === 'owner') await this.assertNotLastOwner(m, account.id, before.id);
      await m.delete(MembershipEntity, { id });
      await m.delete(SessionEntity, { user_id: before.user_id, account_id: account.id });
      // The keys they made; the holder's own (made by the CLI or before teams) are theirs too.
      const keys = await m.find(ApiKeyEntity, {
        where: [
          { user_id: account.holder_user_id, created_by_user_id: before.user_id, revoked_at: IsNull() },
          ...(before.user_id === account.holder_user_id
            ? [{ user_id: account.holder_user_id, created_by_user_id: IsNull(), revoked_at: IsNull() }]
            : []),
        ],
      });
      const audit = [];
      for (const key of keys) {
        await m.update(ApiKeyEntity, { id: key.id }, { revoked_at: now });
        audit.push({
          action: 'api_key.revoked' as const,
          before: key,
          after: await m.findOneByOrFail(ApiKeyEntity, { id: key.id }),
        });
      }
      return { result: null, audit: [{ action: 'member.removed' as const, before, after: null }, ...audit] };
    });
  }

  /** A new user who joins by invitation or SSO: `password_hash` null for SSO. */
  private async newUser(m: EntityManager, email: string, password_hash: string | null): Promise<number> {
    const inserted = await m.insert(UserEntity, {
      email,
      name: null,
      max_projects: null,
      can_create_licenses: true,
      webhooks_enabled: true,
      license_defaults: null,
      password_hash,
    });
    return inserted.identifiers[0].id as number;
  }

  /** The user's membership of the account, audited as member.joined by the new member themselves. */
  private async addMember(
    m: EntityManager,
    account: AccountEntity,
    userId: number,
    role: Role,
    project_ids: number[] | null,
  ): Promise<MembershipEntity> {
    const inserted = await m.insert(MembershipEntity, {
      account_id: account.id,
      user_id: userId,
      role,
      project_ids,
      version: 1,
    });
    const membership = await m.findOneByOrFail(MembershipEntity, {
      id: inserted.identifiers[0].id as number,
    });
    await this.asUser(userId, () =>
      this.audits.record(
        m,
        { owner_id: account.holder_user_id, project_id: null },
        { action: 'member.joined', before: null, after: membership },
      ),
    );
    return membership;
  }

  private async assertNotLastOwner(m: EntityManager, accountId: number, membershipId: number): Promise<void> {
    const owners = await m
      .createQueryBuilder(MembershipEntity, 'ms')
      .setLock('pessimistic_write')
      .where('ms.account_id = :accountId AND ms.role = :role', { accountId, role: 'owner' })
      .getMany()
      .catch(() =>
        // SQLite has no row locks: its unit of work runs one write at a time anyway.
        m.find(MembershipEntity, { where: { account_id: accountId, role: 'owner' } }),
      );
    if (owners.every((owner) => owner.id === membershipId))
      throw new ApiError(HttpStatus.CONFLICT, LAST_OWNER);
  }

  private async checkedProjects(
    manager: EntityManager,
    account: AccountEntity,
    ids: number[] | null,
  ): Promise<number[] | null> {
    if (ids === null) return null;
    const unique = [...new Set(ids)].sort((a, b) => a - b);
    const found = unique.length
      ? await manager.find(ProjectEntity, {
          where: { id: In(unique), user_id: account.holder_user_id },
          select: { id: true },
        })
      : [];
    if (found.length !== unique.length)
      throw fieldError('project_ids', 'The project ids field names a project that is not in this account.');
    return unique;
  }

  /** Runs `work` audited as the person `userId` (a public route: no request context names them yet). */
  private asUser<T>(userId: number, work: () => T): T {
    const context = currentAuditContext();
    const actor: Actor = { type: 'user', api_key_id: null, api_key_prefix: null, user_id: userId };
    return inAuditContext(
      {
        actor,
        request_id: context?.request_id ?? null,
        ip: context?.ip ?? null,
        user_agent: context?.user_agent ?? null,
      },
      work,
    );
  }
}
