import {
  CallHandler,
  ExecutionContext,
  HttpException,
  HttpStatus,
  Inject,
  Injectable,
  Logger,
  NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { CACHE_MANAGER, Cache } from '@nestjs/cache-manager';
import { Reflector } from '@nestjs/core';
import { instanceToPlain } from 'class-transformer';
import type { Request } from 'express';
import { from, Observable, of, switchMap, tap } from 'rxjs';
import type { AuthedRequest } from '../../auth/principal.js';
import { AppConfig } from '../../config/app-config.js';
import { RedisService } from './redis.js';

/**
 * A generation per project. Every write to a project (or anything in it) bumps it, and every cached
 * read carries it in its key, so a read after a write never sees the old state. With Redis the
 * numbers live there and every instance agrees; otherwise they live in this process.
 *
 * Redis outages: while Redis is unreachable `get` answers null (callers then skip the cache and read
 * the database) and a bump cannot be recorded. So an instance that saw Redis fail bumps a global
 * epoch, part of every generation, in its first `get` that reaches Redis again: everything cached
 * before the outage is stale at once, and nothing written during it can hide behind an old entry.
 */
@Injectable()
export class ProjectGenerations {
  private readonly local = new Map<number, number>();
  private readonly logger = new Logger('ProjectGenerations');
  private sawOutage = false;

  constructor(private readonly redis: RedisService) {}

  /**
   * The current generation when this process alone keeps it (no Redis), without waiting; undefined
   * when it must be asked with get().
   */
  known(projectId: number): string | undefined {
    return this.redis.client ? undefined : String(this.local.get(projectId) ?? 0);
  }

  /** The current generation, or null when it cannot be known (Redis down): do not use the cache then. */
  async get(projectId: number): Promise<string | null> {
    const client = this.redis.client;
    if (!client) return String(this.local.get(projectId) ?? 0);
    try {
      if (this.sawOutage) {
        // First answer after a failure (the connection dropped, or a bump was refused while it stayed
        // up): bump the epoch before trusting anything cached.
        await client.incr(this.redis.key('gen:epoch'));
        this.sawOutage = false;
        this.logger.warn('Redis answers again: bumped the cache epoch, so nothing cached before the failure is served');
      }
      const [epoch, generation] = await client.mget(this.redis.key('gen:epoch'), this.redis.key(`gen:${projectId}`));
      return `${epoch ?? 0}.${generation ?? 0}`;
    } catch {
      this.sawOutage = true;
      return null;
    }
  }

  async bump(projectId: number): Promise<void> {
    this.local.set(projectId, (this.local.get(projectId) ?? 0) + 1);
    const client = this.redis.client;
    if (!client) return;
    try {
      await client.incr(this.redis.key(`gen:${projectId}`));
    } catch (error) {
      this.sawOutage = true;
      this.logger.warn(`could not bump generation of project ${projectId}: ${(error as Error).message}`);
    }
  }
}

const CACHED_READ = 'licensegate:cached-read';
/** Seed 4.5–4.9: this read is cached per API key, path and query, and made stale by any write. */
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
    if (!this.reflector.get<boolean>(CACHED_READ, context.getHandler()) || !req.principal || !Number.isInteger(projectId)) {
      return next.handle();
    }
    const principal = req.principal;
    // The generation is read before the database: a write that lands meanwhile bumps it, so what
    // this read stores is filed under a generation nobody asks for any more.
    return from(this.generations.get(projectId)).pipe(
      switchMap((generation) => {
        if (generation === null) return next.handle();
        const key = `read:${projectId}:${generation}:${principal.key.id}:${req.originalUrl}`;
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

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Answers that mean the caller never reached the project: no key, not theirs, or no such project.
 * Ownership is checked before any write, so nothing changed and nothing needs to go stale (and a
 * caller cannot make other owners' caches stale, or grow the generation map, with made-up ids).
 */
const REFUSED = new Set([HttpStatus.UNAUTHORIZED, HttpStatus.FORBIDDEN, HttpStatus.NOT_FOUND]);

/** Every write under /project/{project} makes that project's cached reads stale, success or failure. */
@Injectable()
export class InvalidateOnWriteInterceptor implements NestInterceptor {
  constructor(private readonly generations: ProjectGenerations) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request>();
    const projectId = Number(req.params?.project);
    if (SAFE_METHODS.has(req.method) || !Number.isInteger(projectId) || projectId <= 0) return next.handle();
    const bump = () => this.generations.bump(projectId);
    return next.handle().pipe(
      switchMap((data) => from(bump().then(() => data))),
      tap({ error: (error: unknown) => (error instanceof HttpException && REFUSED.has(error.getStatus()) ? undefined : void bump()) }),
    );
  }
}

/**
 * For controllers under /project/{project}: writes make the project's cached reads stale and
 * @CachedRead() reads are served from the cache. Routes elsewhere do without both interceptors
 * (the runtime path above all); test/e2e/route-audit checks that no project route lacks them.
 */
export const ProjectResource = () => UseInterceptors(InvalidateOnWriteInterceptor, ReadCacheInterceptor);
