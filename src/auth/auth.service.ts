import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { growingLru } from '../common/cache/growing-lru.js';
import { randomBytes } from 'node:crypto';
import { EntityManager, Not, Repository } from 'typeorm';
import { AuditLog, REDACTED } from '../audit/audit-log.service.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError, EMAIL_TAKEN, fieldError, forbidden, GLOBAL_KEY_REQUIRED } from '../common/http/errors.js';
import { lockedRow, writeLocked } from '../database/unit-of-work.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { AccountEntity, MembershipEntity } from './account.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { assertPasswordShape, hashPassword } from './passwords.js';
import { SessionEntity } from './session.entity.js';
import { ApiPrincipal, Member } from './principal.js';
import type { Role } from './roles.js';
import { UserEntity } from './user.entity.js';

export interface NewUser {
  email: string;
  name?: string | null;
  max_projects?: number | null;
  can_create_licenses?: boolean;
  webhooks_enabled?: boolean;
  /** At least 12 characters; omitted: the user signs in with no password (API keys, SSO). */
  password?: string;
  /** Join this account with this role (an accepted invitation) instead of holding an account of their own. */
  joins?: { account_id: number; role: Role; project_ids: number[] | null };
  /**
   * Only as the service's first user (the setup link): refused with 409 when any user exists, decided
   * inside the unit of work that inserts, so two concurrent setups cannot both make an owner.
   */
  first?: boolean;
}

export interface NewApiKey {
  name?: string;
  project_id?: number | null;
  expires_at?: Date | null;
  read_only?: boolean;
  /** The member who made the key through a session (docs/security.md#roles). */
  created_by_user_id?: number | null;
}

/** How long a rolled key keeps working when the roll names no grace (docs/decisions.md#accounts-and-api-keys). */
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400;
export const MAX_ROLL_GRACE_SECONDS = 604_800;

/** The answer to a setup once the service has a user (docs/security.md#the-first-account). */
export const ACCOUNT_EXISTS = 'This service has an account already: sign in.';

export const INVALID_API_KEY = 'Invalid API key.';
/** `lg_` + 43 base64url characters: the only shape of key this service makes. */
const API_KEY_SHAPE = /^lg_[A-Za-z0-9_-]{43}$/;
const ABSENT_MS = 60_000;

/** How often last_used_at is written at most, so that a busy key does not write on every call. */
const LAST_USED_RESOLUTION_MS = 60_000;

@Injectable()
export class AuthService {
  /**
   * Hashes of keys found in no row, believed absent for ABSENT_MS; bounded, so random keys push out
   * only each other. A key is 32 random bytes made here, so it cannot have been sent before it
   * exists; still, a key stored by this process leaves the set at once (forgetAbsent).
   */
  private readonly absent = growingLru<string, true>(10_000, {
    ttl: ABSENT_MS,
    ttlResolution: 0,
    perf: Date,
  });

  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    private readonly audits: AuditLog,
  ) {}

  /**
   * The project a scoped key names, deleted ones included. Read through the entity manager: every
   * project feature guards its routes with ApiKeyGuard, so this module cannot import ProjectsModule.
   */
  private project(id: number): Promise<ProjectEntity | null> {
    return this.keys.manager.findOne(ProjectEntity, {
      where: { id },
      withDeleted: true,
      select: { id: true, user_id: true, deleted_at: true },
    });
  }

  async createUser(input: NewUser): Promise<UserEntity> {
    const email = input.email.trim().toLowerCase();
    if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 255)
      throw fieldError('email', 'The email must be a valid email address.');
    // The CLI's values reach here unchecked by any DTO: SQLite would store what MySQL's columns refuse.
    assertName(input.name);
    if (input.max_projects !== undefined && input.max_projects !== null && input.max_projects > MAX_INT) {
      throw fieldError('max_projects', `The max projects field must not be greater than ${MAX_INT}.`);
    }
    if (await this.users.existsBy({ email })) throw fieldError('email', EMAIL_TAKEN);
    if (input.password !== undefined) assertPasswordShape(input.password);
    const password_hash = input.password === undefined ? null : await hashPassword(input.password);
    // A user made here holds an account of their own, which they own (docs/security.md#accounts).
    // insert(), not save(): save() opens a transaction of its own (see database/unit-of-work.ts).
    const id = await this.audits.unaudited(async (manager) => {
      // MySQL: FOR UPDATE on the (empty) table locks its gap, so the insert of a racing setup
      // deadlocks with ours; the unit runs again and then sees our user. SQLite: units run one at a time.
      if (
        input.first &&
        (await writeLocked(manager.createQueryBuilder(UserEntity, 'u').select('u.id').limit(1)).getOne())
      )
        throw new ApiError(HttpStatus.CONFLICT, ACCOUNT_EXISTS);
      const result = await manager.insert(UserEntity, {
        email,
        name: input.name ?? null,
        max_projects: input.max_projects ?? null,
        can_create_licenses: input.can_create_licenses ?? true,
        webhooks_enabled: input.webhooks_enabled ?? true,
        license_defaults: null,
        password_hash,
      });
      const userId = result.identifiers[0].id as number;
      const joins =
        input.joins ??
        ({
          account_id: (await manager.insert(AccountEntity, { holder_user_id: userId })).identifiers[0]
            .id as number,
          role: 'owner',
          project_ids: null,
        } as const);
      await manager.insert(MembershipEntity, { ...joins, user_id: userId, version: 1 });
      return userId;
    });
    return this.users.findOneByOrFail({ id });
  }

  /**
   * Sets a user's password (at least 12 characters) and ends their sessions, all but `keepSession`
   * (the caller's own when they change it themselves): whoever knew the old one is signed out.
   */
  async setPassword(
    userId: number,
    password: string,
    options: { field?: string; keepSession?: number } = {},
  ): Promise<void> {
    assertPasswordShape(password, options.field);
    const password_hash = await hashPassword(password);
    await this.audits.unaudited(async (manager) => {
      await manager.update(UserEntity, { id: userId }, { password_hash });
      await manager.delete(
        SessionEntity,
        options.keepSession === undefined
          ? { user_id: userId }
          : { user_id: userId, id: Not(options.keepSession) },
      );
    });
  }

  async findUserByEmail(email: string): Promise<UserEntity | null> {
    return this.users.findOneBy({ email: email.trim().toLowerCase() });
  }

  listUsers(): Promise<UserEntity[]> {
    return this.users.find({ order: { id: 'ASC' } });
  }

  /** Creates a key and returns it with its plaintext, which exists only in this answer. */
  async createKey(user: UserEntity, input: NewApiKey): Promise<{ key: ApiKeyEntity; plaintext: string }> {
    if (input.project_id !== undefined && input.project_id !== null) {
      const project = await this.project(input.project_id);
      if (!project || project.deleted_at)
        throw fieldError('project_id', 'The selected project id is invalid.');
      if (project.user_id !== user.id) throw forbidden('The project is not owned by this account.');
    }
    if (input.expires_at && input.expires_at.getTime() <= Date.now()) {
      throw fieldError('expires_at', 'The expires at field must be a date after now.');
    }
    if (input.expires_at && input.expires_at.getTime() > LAST_STORABLE) {
      throw fieldError('expires_at', 'The expires at field must be a date before the year 10000.');
    }
    assertName(input.name);
    const plaintext = newPlaintextKey();
    const key = await this.audits.change(
      { owner_id: user.id, project_id: input.project_id ?? null },
      async (manager) => {
        const key = await insertKey(manager, plaintext, {
          user_id: user.id,
          project_id: input.project_id ?? null,
          name: input.name?.trim() || 'default',
          read_only: input.read_only ?? false,
          expires_at: input.expires_at ?? null,
          created_by_user_id: input.created_by_user_id ?? null,
        });
        return {
          result: key,
          audit: { action: 'api_key.created', before: null, after: key, also: { key: [null, REDACTED] } },
        };
      },
    );
    this.forgetAbsent(plaintext);
    return { key, plaintext };
  }

  listKeys(userId: number): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { user_id: userId }, order: { id: 'ASC' } });
  }

  async revokeKey(id: number, userId?: number): Promise<ApiKeyEntity | null> {
    const key = await this.keys.findOneBy(userId === undefined ? { id } : { id, user_id: userId });
    if (!key) return null;
    return this.audits.change({ owner_id: key.user_id, project_id: key.project_id }, async (manager) => {
      const before = await lockedRow(manager, ApiKeyEntity, key.id);
      if (!before.revoked_at) await manager.update(ApiKeyEntity, { id: key.id }, { revoked_at: new Date() });
      const after = await manager.findOneByOrFail(ApiKeyEntity, { id: key.id });
      return { result: after, audit: { action: 'api_key.revoked', before, after } };
    });
  }

  /**
   * Replaces a key with a new one of the same name, scope and read_only (and expiry): the old key
   * keeps working for `graceSeconds` (whole seconds from now; 0: it stops at once), then is refused.
   * Returns the new key with its plaintext, which exists only in this answer, and the old key.
   */
  async rollKey(
    id: number,
    userId: number | undefined,
    graceSeconds = DEFAULT_ROLL_GRACE_SECONDS,
    /** The caller's own expiry: a key with one cannot make a replacement that outlives it. */
    caller: { notAfter: Date | null } = { notAfter: null },
  ): Promise<{ key: ApiKeyEntity; plaintext: string; previous: ApiKeyEntity } | null> {
    const key = await this.keys.findOneBy(userId === undefined ? { id } : { id, user_id: userId });
    if (!key) return null;
    if (caller.notAfter && (!key.expires_at || key.expires_at.getTime() > caller.notAfter.getTime()))
      throw forbidden('This API key expires before the key it would roll, so it cannot roll it.');
    if (key.project_id !== null) {
      const project = await this.project(key.project_id);
      if (!project || project.deleted_at)
        throw new ApiError(
          HttpStatus.CONFLICT,
          "This API key's project has been deleted: it cannot be rolled.",
        );
    }
    const plaintext = newPlaintextKey();
    const rolled = await this.audits.change(
      { owner_id: key.user_id, project_id: key.project_id },
      async (manager) => {
        const before = await lockedRow(manager, ApiKeyEntity, key.id);
        const now = Math.floor(Date.now() / 1000) * 1000;
        if (before.revoked_at)
          throw new ApiError(HttpStatus.CONFLICT, 'This API key has been revoked: it cannot be rolled.');
        if (before.rolled_at)
          throw new ApiError(
            HttpStatus.CONFLICT,
            'This API key has already been rolled: roll its replacement instead.',
          );
        if (before.expires_at && before.expires_at.getTime() <= Date.now())
          throw new ApiError(HttpStatus.CONFLICT, 'This API key has expired: it cannot be rolled.');
        const graceEnd = now + graceSeconds * 1000;
        const until =
          before.expires_at && before.expires_at.getTime() < graceEnd
            ? before.expires_at
            : new Date(graceEnd);
        await manager.update(ApiKeyEntity, { id: key.id }, { expires_at: until, rolled_at: new Date(now) });
        const previous = await manager.findOneByOrFail(ApiKeyEntity, { id: key.id });
        const replacement = await insertKey(manager, plaintext, {
          user_id: before.user_id,
          project_id: before.project_id,
          name: before.name,
          read_only: before.read_only,
          expires_at: before.expires_at,
          created_by_user_id: before.created_by_user_id,
        });
        return {
          result: { key: replacement, plaintext, previous },
          audit: [
            { action: 'api_key.created', before: null, after: replacement, also: { key: [null, REDACTED] } },
            { action: 'api_key.rolled', before, after: previous },
          ],
        };
      },
    );
    this.forgetAbsent(plaintext);
    return rolled;
  }

  /** A key just stored is no longer absent (see `absent`). */
  private forgetAbsent(plaintext: string): void {
    this.absent.delete(sha256Hex(plaintext));
  }

  /**
   * Resolves an API key; null when it is malformed or unknown. The lookup goes by SHA-256 of what was
   * sent, so the stored value is never compared byte by byte against the input (no timing oracle).
   * Revoked or expired → 403. A malformed key costs no lookup, nor does an unknown one seen again
   * within ABSENT_MS (docs/security.md).
   */
  async authenticate(plaintext: string): Promise<ApiPrincipal | null> {
    if (!API_KEY_SHAPE.test(plaintext)) return null;
    const hash = sha256Hex(plaintext);
    if (this.absent.has(hash)) return null;
    const key = await this.keys.findOneBy({ key_hash: hash });
    if (!key) {
      this.absent.set(hash, true);
      return null;
    }
    if (key.revoked_at) throw forbidden('This API key has been revoked.');
    if (key.expires_at && key.expires_at.getTime() <= Date.now()) {
      throw forbidden(
        key.rolled_at
          ? 'This API key has been rolled and its grace period is over: use the key that replaced it.'
          : 'This API key has expired.',
      );
    }
    if (key.project_id !== null) {
      const project = await this.project(key.project_id);
      if (!project || project.deleted_at) throw forbidden("This API key's project has been deleted.");
    }
    const user = await this.users.findOneBy({ id: key.user_id });
    if (!user) throw forbidden(INVALID_API_KEY);
    const member = key.created_by_user_id === null ? null : await this.maker(key, user);
    this.touch(key);
    return {
      key,
      user,
      projectId: key.project_id,
      projectIds: member?.membership.project_ids ?? null,
      member,
    };
  }

  /**
   * The member who made a key through a session, as their membership stands now: the key acts with
   * at most their role and projects (docs/security.md#roles). A member who left takes their keys along.
   */
  private async maker(key: ApiKeyEntity, holder: UserEntity): Promise<Member> {
    const manager = this.keys.manager;
    const account = await manager.findOneBy(AccountEntity, { holder_user_id: holder.id });
    const membership = account
      ? await manager.findOneBy(MembershipEntity, {
          account_id: account.id,
          user_id: key.created_by_user_id!,
        })
      : null;
    const user = membership ? await this.users.findOneBy({ id: membership.user_id }) : null;
    if (!membership || !user) throw forbidden('This API key has been revoked.');
    return { user, membership, session: null };
  }

  private touch(key: ApiKeyEntity): void {
    const now = Date.now();
    if (key.last_used_at && now - key.last_used_at.getTime() < LAST_USED_RESOLUTION_MS) return;
    key.last_used_at = new Date(now);
    this.keys.update({ id: key.id }, { last_used_at: key.last_used_at }).catch(() => undefined);
  }
}

/** The columns' bounds: INT, VARCHAR(255), and the last second both databases store (see common/http/validators.ts). */
const MAX_INT = 2_147_483_647;
const MAX_NAME = 255;
const LAST_STORABLE = Date.UTC(9999, 11, 31, 23, 59, 59);

function assertName(name: string | null | undefined): void {
  if (typeof name === 'string' && name.length > MAX_NAME)
    throw fieldError('name', `The name field must not be greater than ${MAX_NAME} characters.`);
}

/** `lg_` + 43 base64url characters: 32 random bytes. */
const newPlaintextKey = () => `lg_${randomBytes(32).toString('base64url')}`;

/** Stores a key by the SHA-256 of its plaintext, which is never stored. */
async function insertKey(
  manager: EntityManager,
  plaintext: string,
  fields: Pick<ApiKeyEntity, 'user_id' | 'project_id' | 'name' | 'read_only' | 'expires_at'> &
    Partial<Pick<ApiKeyEntity, 'created_by_user_id'>>,
): Promise<ApiKeyEntity> {
  const result = await manager.insert(ApiKeyEntity, {
    ...fields,
    prefix: plaintext.slice(0, 8),
    key_hash: sha256Hex(plaintext),
    revoked_at: null,
    last_used_at: null,
    rolled_at: null,
  });
  return manager.findOneByOrFail(ApiKeyEntity, { id: result.identifiers[0].id as number });
}

export const requireGlobalKey = (principal: ApiPrincipal): void => {
  if (principal.projectId !== null) throw new ApiError(HttpStatus.FORBIDDEN, GLOBAL_KEY_REQUIRED);
  // A member limited to some projects is to the account what a scoped key is.
  if (principal.projectIds !== null) throw new ApiError(HttpStatus.FORBIDDEN, WHOLE_ACCOUNT_REQUIRED);
};

export const WHOLE_ACCOUNT_REQUIRED =
  'Your membership is limited to some projects: this action needs access to the whole account.';
