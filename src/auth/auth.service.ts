import { HttpStatus, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { Repository } from 'typeorm';
import { sha256Hex } from '../common/crypto/crypto.js';
import { ApiError, EMAIL_TAKEN, fieldError, forbidden, GLOBAL_KEY_REQUIRED } from '../common/http/errors.js';
import { ProjectEntity } from '../projects/project.entity.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiPrincipal } from './principal.js';
import { UserEntity } from './user.entity.js';

export interface NewUser {
  email: string;
  name?: string | null;
  max_projects?: number | null;
  can_create_licenses?: boolean;
  webhooks_enabled?: boolean;
}

export interface NewApiKey {
  name?: string;
  project_id?: number | null;
  expires_at?: Date | null;
}

/** How often last_used_at is written at most, so that a busy key does not write on every call. */
const LAST_USED_RESOLUTION_MS = 60_000;

@Injectable()
export class AuthService {
  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
  ) {}

  /**
   * The project a scoped key names, deleted ones included. Read through the entity manager: every
   * project feature guards its routes with ApiKeyGuard, so this module cannot import ProjectsModule.
   */
  private project(id: number): Promise<ProjectEntity | null> {
    return this.keys.manager.findOne(ProjectEntity, { where: { id }, withDeleted: true, select: { id: true, user_id: true, deleted_at: true } });
  }

  async createUser(input: NewUser): Promise<UserEntity> {
    const email = input.email.trim().toLowerCase();
    if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 255) throw fieldError('email', 'The email must be a valid email address.');
    if (await this.users.existsBy({ email })) throw fieldError('email', EMAIL_TAKEN);
    // insert(), not save(): save() opens a transaction of its own (see database/unit-of-work.ts).
    const result = await this.users.insert({
      email,
      name: input.name ?? null,
      max_projects: input.max_projects ?? null,
      can_create_licenses: input.can_create_licenses ?? true,
      webhooks_enabled: input.webhooks_enabled ?? true,
      license_defaults: null,
    });
    return this.users.findOneByOrFail({ id: result.identifiers[0].id as number });
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
      if (!project || project.deleted_at) throw fieldError('project_id', 'The selected project id is invalid.');
      if (project.user_id !== user.id) throw forbidden('The project is not owned by this account.');
    }
    if (input.expires_at && input.expires_at.getTime() <= Date.now()) {
      throw fieldError('expires_at', 'The expires at field must be a date after now.');
    }
    const plaintext = `lg_${randomBytes(32).toString('base64url')}`;
    const result = await this.keys.insert({
      user_id: user.id,
      project_id: input.project_id ?? null,
      name: input.name?.trim() || 'default',
      prefix: plaintext.slice(0, 8),
      key_hash: sha256Hex(plaintext),
      expires_at: input.expires_at ?? null,
      revoked_at: null,
      last_used_at: null,
    });
    const key = await this.keys.findOneByOrFail({ id: result.identifiers[0].id as number });
    return { key, plaintext };
  }

  listKeys(userId: number): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { user_id: userId }, order: { id: 'ASC' } });
  }

  async revokeKey(id: number, userId?: number): Promise<ApiKeyEntity | null> {
    const key = await this.keys.findOneBy(userId === undefined ? { id } : { id, user_id: userId });
    if (!key) return null;
    if (!key.revoked_at) {
      key.revoked_at = new Date();
      await this.keys.update({ id: key.id }, { revoked_at: key.revoked_at });
    }
    return key;
  }

  /**
   * Resolves an API key. The lookup goes by SHA-256 of what was sent, so the stored value is never
   * compared byte by byte against the input (no timing oracle). Unknown, revoked or expired → 403.
   */
  async authenticate(plaintext: string): Promise<ApiPrincipal> {
    const key = await this.keys.findOneBy({ key_hash: sha256Hex(plaintext) });
    if (!key) throw forbidden('Invalid API key.');
    if (key.revoked_at) throw forbidden('This API key has been revoked.');
    if (key.expires_at && key.expires_at.getTime() <= Date.now()) throw forbidden('This API key has expired.');
    if (key.project_id !== null) {
      const project = await this.project(key.project_id);
      if (!project || project.deleted_at) throw forbidden("This API key's project has been deleted.");
    }
    const user = await this.users.findOneBy({ id: key.user_id });
    if (!user) throw forbidden('Invalid API key.');
    this.touch(key);
    return { key, user, projectId: key.project_id };
  }

  private touch(key: ApiKeyEntity): void {
    const now = Date.now();
    if (key.last_used_at && now - key.last_used_at.getTime() < LAST_USED_RESOLUTION_MS) return;
    key.last_used_at = new Date(now);
    this.keys.update({ id: key.id }, { last_used_at: key.last_used_at }).catch(() => undefined);
  }
}

export const requireGlobalKey = (principal: ApiPrincipal): void => {
  if (principal.projectId !== null) throw new ApiError(HttpStatus.FORBIDDEN, GLOBAL_KEY_REQUIRED);
};
