import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiError, fieldError, forbidden, notFound } from '../common/http/errors.js';
import { toIsoTimestamp } from '../common/http/serialization.js';
import { IdPipe } from '../common/http/id.pipe.js';
import {
  ApiBodyErrors,
  ApiEnvelope,
  ApiErrors,
  ApiIdParam,
  DATABASE_AWAY,
  FORBIDDEN,
} from '../common/openapi/decorators.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyAuth } from './api-key.guard.js';
import { AuthService, requireGlobalKey } from './auth.service.js';
import { ApiKeyCreatedResponse, ApiKeyResponse, ApiKeyRolledResponse } from './dto/api-key.response.js';
import { CreateApiKeyDto, RollApiKeyDto } from './dto/create-api-key.dto.js';
import { ApiPrincipal, CurrentPrincipal } from './principal.js';

/** API keys of the caller's account; global keys only (docs/decisions.md#accounts-and-api-keys). */
@ApiTags('api-keys')
@ApiKeyAuth()
@ApiErrors(500, DATABASE_AWAY)
@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly auth: AuthService) {}

  @Get()
  @ApiOperation({
    summary: "List the account's API keys",
    description:
      'Global key only. Every key of the account, revoked and expired ones included; never the key itself.',
  })
  @ApiEnvelope(ApiKeyResponse, { isArray: true })
  @ApiErrors(FORBIDDEN.global)
  async list(@CurrentPrincipal() principal: ApiPrincipal): Promise<ApiKeyEntity[]> {
    requireGlobalKey(principal);
    return this.auth.listKeys(principal.user.id);
  }

  @Get('current')
  @ApiOperation({
    summary: 'The calling API key',
    operationId: 'getCurrentApiKey',
    description:
      'Any valid key, scoped or read-only: the key that made this call, so that a client (the console) ' +
      'can learn its own scope (project_id) and read_only; never the key itself.',
  })
  @ApiEnvelope(ApiKeyResponse)
  current(@CurrentPrincipal() principal: ApiPrincipal): ApiKeyEntity {
    if (!principal.key) throw new ApiError(404, NO_KEY_IN_SESSION);
    return principal.key;
  }

  @Post()
  @ApiOperation({
    summary: 'Create an API key',
    description:
      'Global key only. Omit project_id for a global key; the plaintext `key` is in this answer only.',
  })
  @ApiBody({ type: CreateApiKeyDto, required: false })
  @ApiEnvelope(ApiKeyCreatedResponse, { status: 201 })
  @ApiBodyErrors({
    ...FORBIDDEN.global,
    description:
      'Invalid, revoked or expired key; a project-scoped key (this action needs a global key); or project_id names a project of another account',
  })
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Body() body: CreateApiKeyDto) {
    requireKeyManager(principal);
    // A key makes no key that outlives it (docs/security.md): without expires_at, the creator's.
    const limit = principal.key?.expires_at ?? null;
    if (limit && body.expires_at === undefined) body.expires_at = limit;
    if (limit && (body.expires_at === null || (body.expires_at as Date).getTime() > limit.getTime())) {
      throw fieldError(
        'expires_at',
        `The expires at field must be a date no later than ${toIsoTimestamp(limit)}, when this API key expires.`,
      );
    }
    const { key, plaintext } = await this.auth.createKey(principal.user, {
      ...body,
      created_by_user_id: principal.member?.user.id ?? null,
    });
    key.key = plaintext;
    return key;
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Revoke an API key',
    description: 'Global key only.',
    operationId: 'revokeApiKey',
  })
  @ApiIdParam('id', 'API key id')
  @ApiEnvelope(ApiKeyResponse, { description: 'The key, with revoked_at set' })
  @ApiErrors(404, FORBIDDEN.global)
  async revoke(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('id', IdPipe) id: number,
  ): Promise<ApiKeyEntity> {
    requireKeyManager(principal);
    const key = await this.auth.revokeKey(id, principal.user.id);
    if (!key) throw notFound('API key');
    return key;
  }

  @Post(':id/roll')
  @ApiOperation({
    summary: 'Roll an API key',
    description:
      'Global key only. A new key of the same name, scope, read_only and expiry replaces this one, whose plaintext `key` is in this answer only; ' +
      'the old key keeps working for grace_seconds (default 86400), then answers 403.',
  })
  @ApiIdParam('id', 'API key id')
  @ApiBody({ type: RollApiKeyDto, required: false })
  @ApiEnvelope(ApiKeyRolledResponse, {
    status: 201,
    description: 'The new key, and the old one with the end of its grace as expires_at',
  })
  @ApiBodyErrors(404, FORBIDDEN.global, {
    status: 409,
    description: 'The key is revoked, expired, already rolled, or its project was deleted',
    message: 'This API key has already been rolled: roll its replacement instead.',
  })
  async roll(
    @CurrentPrincipal() principal: ApiPrincipal,
    @Param('id', IdPipe) id: number,
    @Body() body: RollApiKeyDto,
  ) {
    requireKeyManager(principal);
    const rolled = await this.auth.rollKey(id, principal.user.id, body.grace_seconds ?? undefined, {
      notAfter: principal.key?.expires_at ?? null,
    });
    if (!rolled) throw notFound('API key');
    return {
      ...instanceToPlain(rolled.key),
      key: rolled.plaintext,
      previous_key: instanceToPlain(rolled.previous),
    };
  }
}

export const NO_KEY_IN_SESSION =
  'This call was made with a session, not an API key: see GET /api/v1/auth/me.';
export const ROLLED_KEY_MANAGES_NO_KEYS = 'This API key has been rolled: it may no longer manage API keys.';

/** Creating, rolling and revoking keys: a global key, and not one in its rolled grace period. */
function requireKeyManager(principal: ApiPrincipal): void {
  requireGlobalKey(principal);
  if (principal.key?.rolled_at) throw forbidden(ROLLED_KEY_MANAGES_NO_KEYS);
}
