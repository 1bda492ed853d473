import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { RequestMethod } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { ReadCacheInterceptor } from '../../src/common/cache/read-cache.js';
import { ROUTE_CLASS } from '../../src/common/throttling/throttling.js';
import { createTestApp, TestApp } from '../utils/test-app.js';

interface Route {
  path: string;
  method: string;
  interceptors: unknown[];
  /** The rate-limit class (ThrottleAs): undefined when the route names none. */
  routeClass: unknown;
}

/** Every route the app serves, with the interceptors Nest applies to it besides the global ones. */
function routes(t: TestApp): Route[] {
  const out: Route[] = [];
  for (const module of t.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new (...args: never[]) => object) | null;
      if (!controller) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
      const onClass = (Reflect.getMetadata(INTERCEPTORS_METADATA, controller) as unknown[] | undefined) ?? [];
      for (const name of Object.getOwnPropertyNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, unknown>)[name];
        if (
          name === 'constructor' ||
          typeof handler !== 'function' ||
          Reflect.getMetadata(PATH_METADATA, handler) === undefined
        )
          continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        const onMethod = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) as unknown[] | undefined) ?? [];
        const routeClass =
          Reflect.getMetadata(ROUTE_CLASS, handler) ?? Reflect.getMetadata(ROUTE_CLASS, controller);
        const path = `${base}/${String(Reflect.getMetadata(PATH_METADATA, handler))}`
          .replace(/\/+/g, '/')
          .replace(/^\/|\/$/g, '');
        out.push({ path, method, interceptors: [...onClass, ...onMethod], routeClass });
      }
    }
  }
  return out;
}

describe('route audit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  // Their writes make the cache stale through ProjectChanges.run(): audit-log.e2e-spec counts one bump per write.
  it('puts the read cache on every route under /project/{project}', () => {
    const all = routes(t);
    const scoped = all.filter((r) => r.path.includes(':project'));
    expect(scoped.filter((r) => r.method !== 'GET').length).toBeGreaterThan(15);
    for (const route of scoped) {
      // GET …/has-paid reads through the runtime caches, which follow the same generations.
      if (route.path.endsWith('has-paid')) continue;
      expect({
        route: `${route.method} ${route.path}`,
        cached: route.interceptors.includes(ReadCacheInterceptor),
      }).toEqual({
        route: `${route.method} ${route.path}`,
        cached: true,
      });
    }
  });

  it('keeps the runtime routes free of the management interceptors', () => {
    const runtime = routes(t).filter((r) => r.path === 'project/has-paid' || r.path === 'injectable/stream');
    expect(runtime.map((r) => r.method).sort()).toEqual(['GET', 'POST']);
    for (const route of runtime) expect(route.interceptors).not.toContain(ReadCacheInterceptor);
  });

  it('gives every route its rate-limit class: the runtime per license, management per key, the root and payment deliveries per address, health and metrics none', () => {
    const classes = Object.fromEntries(routes(t).map((r) => [`${r.method} ${r.path}`, r.routeClass]));
    expect(Object.entries(classes).filter(([, routeClass]) => routeClass === undefined)).toEqual([]);
    expect(classes['POST project/has-paid']).toBe('runtime');
    expect(classes['GET injectable/stream']).toBe('runtime');
    expect(classes['POST payments/:provider/:token']).toBe('payments');
    expect(classes['GET ']).toBe('root');
    expect(classes['GET project/:project']).toBe('api');
    expect(classes['GET health/live']).toBeNull();
  });
});
