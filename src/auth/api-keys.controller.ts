import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { notFound } from '../common/errors.js';
import { IdPipe } from '../common/id.pipe.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyAuth } from './api-key.guard.js';
import { AuthService, requireGlobalKey } from './auth.service.js';
import { CreateApiKeyDto } from './dto/create-api-key.dto.js';
import { ApiPrincipal, CurrentPrincipal } from './principal.js';

/** API keys of the caller's account; global keys only (SPEC 2). */
@ApiTags('api-keys')
@ApiKeyAuth()
@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly auth: AuthService) {}

  @Get()
  async list(@CurrentPrincipal() principal: ApiPrincipal): Promise<ApiKeyEntity[]> {
    requireGlobalKey(principal);
    return this.auth.listKeys(principal.user.id);
  }

  @Post()
  async create(@CurrentPrincipal() principal: ApiPrincipal, @Body() body: CreateApiKeyDto) {
    requireGlobalKey(principal);
    const { key, plaintext } = await this.auth.createKey(principal.user, body);
    key.key = plaintext;
    return key;
  }

  @Delete(':id')
  async revoke(@CurrentPrincipal() principal: ApiPrincipal, @Param('id', IdPipe) id: number): Promise<ApiKeyEntity> {
    requireGlobalKey(principal);
    const key = await this.auth.revokeKey(id, principal.user.id);
    if (!key) throw notFound('API key');
    return key;
  }
}
