import { describe, expect, it, jest } from '@jest/globals';
import { ExecutionContext, ForbiddenException, Logger, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { lastValueFrom, of, throwError } from 'rxjs';
import { EntityNotFoundError } from 'typeorm';
import { ValidationFailed } from '../http/errors.js';
import { ProjectGenerations } from './generations.js';
import { InvalidateOnWriteInterceptor } from './read-cache.js';
import type { RedisService } from './redis.js';

/** A Redis stand-in: a map of counters, and a switch that makes INCR fail while "connected". */
function fakeRedis() {
  const store = new Map<string, number>();
  const state = { failIncr: false };
  const client = {
    incr: async (key: string) => {
      if (state.failIncr) throw new Error('READONLY You can not write against a read only replica.');
      store.set(key, (store.get(key) ?? 0) + 1);
      return store.get(key);
    },
    mget: async (...keys: string[]) => keys.map((k) => (store.has(k) ? String(store.get(k)) : null)),
  };
  const redis = { client, key: (name: string) => `t:${name}` } as unknown as RedisService;
  return { redis, state };
}

describe('ProjectGenerations with Redis', () => {
  it('never hands out a pre-failure generation after a bump Redis refused while connected, and says so', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { redis, state } = fakeRedis();
    const generations = new ProjectGenerations(redis);
    const before = await generations.get(7);
    state.failIncr = true;
    await generations.bump(7); // the write committed, but its bump was refused
    state.failIncr = false;
    const after = await generations.get(7);
    expect(after).not.toBeNull();
    expect(after).not.toBe(before);
    // Once bumped, the generation is stable again until the next write.
    expect(await generations.get(7)).toBe(after);
    expect(warned.mock.calls.map(([message]) => message)).toEqual([
      'could not bump generation of project 7: READONLY You can not write against a read only replica.',
      'Redis answers again: bumped the cache epoch, so nothing cached before the failure is served',
    ]);
    warned.mockRestore();
  });
});

describe('InvalidateOnWriteInterceptor', () => {
  /** Runs one write to /project/42 through the interceptor; returns how many bumps project 42 got. */
  async function bumpsAfter(method: string, outcome: 'ok' | Error): Promise<number> {
    const bumped: number[] = [];
    const generations = { bump: async (id: number) => void bumped.push(id) } as unknown as ProjectGenerations;
    const context = { switchToHttp: () => ({ getRequest: () => ({ method, params: { project: '42' } }) }) } as unknown as ExecutionContext;
    const handler = { handle: () => (outcome === 'ok' ? of({ id: 42 }) : throwError(() => outcome)) };
    await lastValueFrom(new InvalidateOnWriteInterceptor(generations).intercept(context, handler)).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(bumped.every((id) => id === 42)).toBe(true);
    return bumped.length;
  }

  it('makes the project stale after a write that succeeded, failed validation or failed on the way', async () => {
    expect(await bumpsAfter('PATCH', 'ok')).toBe(1);
    expect(await bumpsAfter('DELETE', 'ok')).toBe(1);
    expect(await bumpsAfter('PATCH', new ValidationFailed({ name: ['The name field is required.'] }))).toBe(1);
    expect(await bumpsAfter('POST', new Error('connection lost after commit?'))).toBe(1);
    expect(await bumpsAfter('PATCH', new EntityNotFoundError('DomainEntity', { id: 5 }))).toBe(1);
  });

  it('leaves it alone when the caller never reached the project (401, 403, 404) and on reads', async () => {
    expect(await bumpsAfter('PATCH', new UnauthorizedException())).toBe(0);
    expect(await bumpsAfter('PATCH', new ForbiddenException())).toBe(0);
    expect(await bumpsAfter('DELETE', new NotFoundException())).toBe(0);
    expect(await bumpsAfter('GET', 'ok')).toBe(0);
  });
});
