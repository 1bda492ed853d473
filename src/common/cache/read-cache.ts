import {
  CallHandler,
  ExecutionContext,
  Inject,
  Injectable,
  NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { CACHE_MANAGER, Cache } from '@nestjs/cache-manager';
import { Reflector } from '@nestjs/core';
import { instanceToPlain } from 'class-transformer';
import type { Request } from 'express';
import { from, Observable, of, switchMap, tap } from 'rxjs';
import type { ApiPrincipal, AuthedRequest } from '../../auth/principal.js';
import { AppConfig } from '../../config/app-config.js';
import { ProjectGenerations } from './generations.js';

const CACHED_READ = 'licensegate:cached-read';
/** This read is cached per API key, path and query, and made stale by any write (docs/decisions.md#caching). */
export const CachedRead = () => SetMetadata(CACHED_READ, true);

@Injectable()
export class ReadCacheInterceptor implements NestInterceptor {
  private readonly ttlMs: number;

  constructor(
    private readonly reflector: Reflector,
    private readonly generations: ProjectGenerations,
    @Inject(CACHE_MANAGER) private readonly cache: Cache,
    config: AppConfig,
  ) {
    this.ttlMs = config.env.CACHE_TTL_SECONDS * 1000;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request & AuthedRequest>();
    const projectId = Number(req.params.project);
    if (
      !this.reflector.get<boolean>(CACHED_READ, context.getHandler()) ||
      !req.principal ||
      !Number.isInteger(projectId)
    ) {
      return next.handle();
    }
    const principal = req.principal;
    // The generation is read before the database: a write that lands meanwhile bumps it, so what
    // this read stores is filed under a generation nobody asks for any more.
    return from(this.generations.shared(projectId)).pipe(
      switchMap((generation) => {
        if (generation === null) return next.handle();
        const key = `read:${projectId}:${generation}:${principalKey(principal)}:${req.originalUrl}`;
        return from(this.cache.get(key).catch(() => undefined)).pipe(
          switchMap((hit) => {
            if (hit !== undefined && hit !== null) return of(hit);
            return next.handle().pipe(
              tap((data) => {
                void this.cache.set(key, instanceToPlain(data), this.ttlMs).catch(() => undefined);
              }),
            );
          }),
        );
      }),
    );
  }
}

/**
 * Whose reads a cached answer may be served to: one API key, or one membership as it stands (its
 * version rises with every change of role or projects, so an answer cached before is never served after).
 */
function principalKey(principal: ApiPrincipal): string {
  if (principal.key) return `k${principal.key.id}`;
  const membership = principal.member!.membership;
  return `m${membership.id}.${membership.version}`;
}

/**
 * For controllers under /project/{project}: @CachedRead() reads are served from the cache. Their writes
 * make the project's cached reads stale through ProjectChanges.run(), which every one of them goes
 * through and which bumps the generation once after its commit, or after a failure whose COMMIT may have
 * landed (test/e2e/audit-log counts one bump per write). Routes elsewhere do without the cache (the
 * runtime path above all); test/e2e/route-audit checks that no project route lacks it.
 */
export const ProjectResource = () => UseInterceptors(ReadCacheInterceptor);
