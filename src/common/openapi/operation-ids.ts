import type { OpenAPIObject, OperationObject } from '@nestjs/swagger';

/*
 * operationIds a generated client reads as method names (`createProject`, `listLicenses`,
 * `revokeLicense`), derived from the method and the path so that every route gets one without
 * naming it. Nest names operations `Controller_method`; buildOpenApiDocument has it mark them with
 * DERIVE instead, and replaces each marked one with the rule below. An operationId given with
 * @ApiOperation({ operationId }) is kept as written: for the few routes the rule reads wrongly.
 *
 * The rule, on the path below /api/v1 (`{x}` is a path parameter):
 *   …/things/{thing}     GET getThing · PATCH updateThing · PUT replaceThing · DELETE deleteThing
 *   …/things             GET listThings when the answer is a list · POST createThing when the path
 *                        is a collection (it has items, …/things/{thing}, or is listed)
 *   …/thing/{thing}/act  POST actThing (an action on the resource before it: lockProject, rollApiKey)
 *   …/thing/detail       GET getThingDetail (getProjectSigningKey, getLicenseUsage)
 * Two operations that would share a name (GET /audit-log and GET /project/{project}/audit-log) are
 * told apart by the resource each is nested in: listAuditLog, listProjectAuditLog.
 */

export const DERIVE = 'derive:';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const ITEM_VERBS: Record<string, string> = {
  get: 'get',
  put: 'replace',
  patch: 'update',
  delete: 'delete',
  post: 'create',
};
/** Words a sentence writes in capitals ("API key not found."). */
const ACRONYMS = new Set(['api', 'id', 'ip', 'url']);

const isParam = (segment: string) => segment.startsWith('{');
const words = (segment: string) => segment.split(/[-_]/).filter(Boolean);
// camelCase treats acronyms as words (listApiKeys), as JavaScript and TypeScript clients name things.
const pascal = (segment: string) =>
  words(segment)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
const camel = (segment: string) => {
  const name = pascal(segment);
  return name[0].toLowerCase() + name.slice(1);
};

/** English singular of a path segment's last word: deliveries → delivery, licenses → license, api-keys → api-key. */
export function singular(segment: string): string {
  const last = segment.split('-').pop() as string;
  let one = last;
  if (/ies$/.test(last)) one = `${last.slice(0, -3)}y`;
  else if (/(ss|x|ch|sh)es$/.test(last)) one = last.slice(0, -2);
  else if (/(ss|us|is)$/.test(last)) one = last;
  else if (/s$/.test(last)) one = last.slice(0, -1);
  return segment.slice(0, segment.length - last.length) + one;
}

const plural = (segment: string) => {
  const one = singular(segment);
  return /[^aeiou]y$/.test(one)
    ? `${one.slice(0, -1)}ies`
    : /(s|x|ch|sh)$/.test(one)
      ? `${one}es`
      : `${one}s`;
};

/** A segment as a noun in a sentence: webhook-deliveries → "Webhook delivery", api-keys → "API key". */
export function resourceName(segment: string): string {
  const name = words(singular(segment))
    .map((w) => (ACRONYMS.has(w) ? w.toUpperCase() : w))
    .join(' ');
  return name[0].toUpperCase() + name.slice(1);
}

/** The path's segments below the API root (/api/v1); a path outside it keeps all of its own. */
export const segmentsOf = (path: string): string[] =>
  path
    .replace(/^\/api\/v1(?=\/|$)/, '')
    .split('/')
    .filter(Boolean);

/** Paths with items below them (…/things/{thing}: named in the plural when listed), and paths that answer a list. */
interface Collections {
  addressable: Set<string>;
  listed: Set<string>;
}

interface Route {
  method: string;
  path: string;
  op: OperationObject;
}

/** The few schema fields answersList reads. */
interface SchemaShape {
  $ref?: string;
  type?: string;
  allOf?: SchemaShape[];
  properties?: Record<string, SchemaShape | undefined>;
}

/** Whether the success answer's `data` is a list: an array, or a cursor page `{data: [...], next_cursor}`. */
function answersList(doc: OpenAPIObject, op: OperationObject): boolean {
  const success = Object.entries(op.responses ?? {}).find(([status]) => /^2/.test(status))?.[1] as
    { content?: Record<string, { schema?: SchemaShape }> } | undefined;
  const schema = success?.content?.['application/json']?.schema;
  const data = (schema?.allOf ?? []).map((part) => part.properties?.data).find(Boolean);
  const resolved = (
    data?.$ref ? doc.components?.schemas?.[String(data.$ref).split('/').pop() as string] : data
  ) as SchemaShape | undefined;
  return (
    resolved?.type === 'array' ||
    (resolved?.properties?.next_cursor !== undefined && resolved?.properties?.data?.type === 'array')
  );
}

/** The name the rule gives one route; `qualified` adds the resource it is nested in. */
function derive(doc: OpenAPIObject, route: Route, collections: Collections, qualified: boolean): string {
  const segments = segmentsOf(route.path);
  if (segments.length === 0) return `${route.method}Root`;
  const last = segments[segments.length - 1];
  const literals = segments.filter((s) => !isParam(s));
  // The resource a nested one belongs to: the literal before the parameter before the last literal.
  const owner = (before: number) => {
    const index = segments
      .slice(0, before)
      .findLastIndex((s, i, all) => !isParam(s) && i + 1 < all.length && isParam(all[i + 1]));
    return index >= 0 ? pascal(singular(segments[index])) : '';
  };

  if (isParam(last)) {
    const resource = segments[segments.length - 2];
    return `${ITEM_VERBS[route.method]}${qualified ? owner(segments.length - 2) : ''}${pascal(singular(resource))}`;
  }
  const prefix = `/${segments.join('/')}`;
  const nest = qualified ? owner(segments.length - 1) : '';
  if (route.method === 'get' && answersList(doc, route.op)) {
    return `list${nest}${pascal(collections.addressable.has(prefix) ? plural(last) : last)}`;
  }
  if (route.method === 'post' && (collections.addressable.has(prefix) || collections.listed.has(prefix)))
    return `create${nest}${pascal(singular(last))}`;
  const resource = literals.length > 1 ? pascal(singular(literals[literals.length - 2])) : '';
  if (route.method === 'post') return `${camel(last)}${resource}`;
  return `${route.method === 'get' ? 'get' : ITEM_VERBS[route.method]}${resource}${pascal(last)}`;
}

/** Replaces every operationId marked DERIVE by the rule; fails on two operations with one name. */
export function deriveOperationIds(doc: OpenAPIObject): void {
  const routes: Route[] = Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      method,
      path,
      op: item[method] as OperationObject,
    })),
  );
  const collections: Collections = { addressable: new Set(), listed: new Set() };
  for (const { method, path, op } of routes) {
    const segments = segmentsOf(path);
    segments.forEach((segment, i) => {
      if (isParam(segment) && i > 0) collections.addressable.add(`/${segments.slice(0, i).join('/')}`);
    });
    if (method === 'get' && answersList(doc, op)) collections.listed.add(`/${segments.join('/')}`);
  }

  const derived = routes.filter((route) => route.op.operationId?.startsWith(DERIVE));
  const names = new Map(derived.map((route) => [route, derive(doc, route, collections, false)]));
  const taken = (name: string, except: Route) =>
    routes.some((route) => route !== except && (names.get(route) ?? route.op.operationId) === name);
  for (const route of derived) {
    if (taken(names.get(route) as string, route)) names.set(route, derive(doc, route, collections, true));
  }
  for (const route of derived) route.op.operationId = names.get(route);

  const seen = new Map<string, string>();
  for (const { method, path, op } of routes) {
    const where = `${method.toUpperCase()} ${path}`;
    const other = seen.get(op.operationId as string);
    if (other) {
      throw new Error(
        `OpenAPI: ${other} and ${where} are both named ${op.operationId}; give one an operationId with @ApiOperation({ operationId }).`,
      );
    }
    seen.set(op.operationId as string, where);
  }
}
