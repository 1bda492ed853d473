import type { Request } from 'express';
import { growingLru } from '../common/cache/growing-lru.js';
import { isUtf8 } from 'node:buffer';
import { isIP } from 'node:net';
import { getDomain } from 'tldts';
import { hostOfUrl, normalizeDomain } from '../common/net/domain-name.js';

export interface CallingDomain {
  /** The normalised host name, or null when none could be determined. */
  readonly host: string | null;
  /** A local development host: localhost, 127.0.0.1, ::1, *.localhost, *.test. */
  readonly local: boolean;
  /** An IP literal was sent (host is null then): a place, but not a host name. */
  readonly ip?: true;
}

const LOCAL_IPS = new Set(['127.0.0.1', '::1', '[::1]', '::ffff:127.0.0.1']);

/**
 * Accepts `shop.example.com`, `shop.example.com:8443` or a full URL as SDKs sometimes send it. A port
 * that is no port (0, over 65535) is left on the name, which then names no host.
 */
function hostPart(value: string): string {
  const trimmed = value.trim();
  if (trimmed.includes('://')) return hostOfUrl(trimmed) ?? trimmed;
  const withPort = /^([^:/\s]+):(\d{1,5})$/.exec(trimmed);
  return withPort && Number(withPort[2]) >= 1 && Number(withPort[2]) <= 65535 ? withPort[1] : trimmed;
}

const usable = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/** X-Service-Domain as received (Node joins a header sent twice into one list). */
function domainHeader(req: Request): string | undefined {
  const header = req.headers['x-service-domain'];
  const sent = Array.isArray(header) ? header[0] : header;
  return sent === undefined ? undefined : headerText(sent);
}

/**
 * Node reads a header's bytes as latin1, one character each: a name sent as UTF-8 (`bücher.de`, as
 * `curl -H` sends it) would arrive as `bÃ¼cher.de`. Bytes that are valid UTF-8 are read as UTF-8;
 * others stay latin1, as a browser's fetch sends `ü` (one byte, 0xFC).
 */
export function headerText(value: string): string {
  if (!/[^\u0020-\u007e\t]/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : value;
}

/** The first source of the calling domain that names a host, read lazily (the header is the common case). */
function rawCallingDomain(req: Request, configDomain: unknown): string | undefined {
  const sent = domainHeader(req);
  if (usable(sent)) return sent;
  if (usable(configDomain)) return configDomain;
  const query = req.query?.domain;
  if (usable(query)) return query;
  const body = (req.body as { domain?: unknown } | undefined)?.domain;
  if (usable(body)) return body;
  const origin = hostOfUrl(req.headers.origin);
  if (usable(origin)) return origin;
  const referer = hostOfUrl(req.headers.referer);
  return usable(referer) ? referer : undefined;
}

/** The IP literal a calling domain named (the calling domain itself carries only `ip: true`). */
const ipLiterals = new WeakMap<CallingDomain, string>();

function resolve(raw: string): CallingDomain {
  const named = hostPart(raw).toLowerCase();
  // One trailing dot is the root (normalizeDomain drops it); `example.com..` names no host.
  const host = named.replace(/\.$/, '');
  const local =
    LOCAL_IPS.has(host) ||
    (isIP(host) === 0 && (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.test')));
  const literal = host.replace(/^\[(.*)\]$/, '$1');
  const ip = isIP(literal) !== 0;
  const resolved: CallingDomain = Object.freeze({
    host: normalizeDomain(named),
    local,
    ...(ip ? { ip } : {}),
  });
  if (ip) ipLiterals.set(resolved, literal.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1'));
  return resolved;
}

/**
 * The place a `billing: license` license is called from: the host name, else the IP literal sent
 * (docs/api.md#licenses-that-carry-their-own-payment); null when neither was named.
 */
export function placeName(calling: CallingDomain): string | null {
  return calling.host ?? (calling.ip ? (ipLiterals.get(calling) ?? null) : null);
}

// Each name is looked up in the Public Suffix List once; bounded like `resolved`.
const registrable = growingLru<string, string>(10_000);

/**
 * The registrable domain of `name` by the Public Suffix List, private suffixes included
 * (`a.shop.example.co.uk` → `example.co.uk`; `me.github.io` and `you.github.io` are two); a name
 * without one (an IP literal, `localhost`, a single label, a public suffix) is its own domain.
 */
export function registrableDomain(name: string): string {
  let found = registrable.get(name);
  if (found === undefined) {
    found = (isIP(name) === 0 ? getDomain(name, { allowPrivateDomains: true }) : null) ?? name;
    registrable.set(name, found);
  }
  return found;
}

// A site sends the same few names over and over: each is normalised once. Bounded and only for
// names of a sane length, so that random values cannot grow it.
const resolved = growingLru<string, CallingDomain>(10_000);
const NONE: CallingDomain = Object.freeze({ host: null, local: false });

/**
 * The calling domain (docs/decisions.md#runtime-checks): X-Service-Domain, else the `domain` parameter (config, query or
 * body), else the host of Origin, else of Referer; normalised as domains are stored.
 */
export function callingDomain(req: Request, configDomain?: unknown): CallingDomain {
  const raw = rawCallingDomain(req, configDomain);
  if (raw === undefined) return NONE;
  let found = resolved.get(raw);
  if (found === undefined) {
    found = resolve(raw);
    if (raw.length <= 300) resolved.set(raw, found);
  }
  return found;
}

export const NO_DOMAIN =
  'The calling domain could not be determined: send it in the X-Service-Domain header.';
export const HEADER_NOT_A_HOST =
  'The X-Service-Domain header does not name a host: send it once, with one host name such as shop.example.com.';
export const PARAMETER_NOT_A_HOST =
  'The domain parameter does not name a host: send one host name such as shop.example.com.';

/**
 * Why callingDomain found no host, for the 400 that says so: the header, or the `domain` parameter,
 * was sent but names no host (sent twice, a list, an address, too long, not a string…), or nothing named one.
 * Only on that refusal: the runtime path's success costs nothing more.
 */
export function noDomainMessage(req: Request, configDomain?: unknown): string {
  if (usable(domainHeader(req))) return HEADER_NOT_A_HOST;
  const sent = (value: unknown) => value !== undefined && value !== null && value !== '';
  if (
    sent(configDomain) ||
    sent(req.query?.domain) ||
    sent((req.body as { domain?: unknown } | undefined)?.domain)
  )
    return PARAMETER_NOT_A_HOST;
  return NO_DOMAIN;
}

/**
 * The domain a request names itself — X-Service-Domain, else `domain` in the body, else in the query —
 * as sent (any JSON value for the body), or undefined when none is named. No Origin or Referer: a
 * deactivation names what it frees (docs/decisions.md#activations).
 */
export function namedDomain(req: Request): unknown {
  const sent = domainHeader(req);
  if (usable(sent)) return sent;
  const body = (req.body as { domain?: unknown } | undefined)?.domain;
  if (body !== undefined && body !== null && body !== '') return body;
  const query = req.query?.domain;
  return query === undefined || query === '' ? undefined : query;
}

/** A named domain normalised as stored domains are (a URL or host:port reduced to the host); null when it is no host name. */
export function hostName(raw: string): string | null {
  return resolve(raw).host;
}

/** The registered domain `host` belongs to: itself or its nearest registered parent. */
export function findRegistered<T>(domains: Map<string, T>, host: string): T | undefined {
  for (let name = host; ;) {
    const found = domains.get(name);
    if (found) return found;
    const dot = name.indexOf('.');
    if (dot < 0) return undefined;
    name = name.slice(dot + 1);
  }
}

export const isSameOrSubdomain = (host: string, domain: string) =>
  host === domain || host.endsWith(`.${domain}`);

/**
 * Where a test license's local host is counted, as a registered domain and a host under it:
 * `*.localhost` under `localhost`, `a.b.test` under `b.test`, anything else (localhost, an address,
 * `b.test`) as a domain of its own.
 */
export function localPlace(host: string): { domain: string; host: string } {
  if (host.endsWith('.localhost')) return { domain: 'localhost', host };
  const labels = host.split('.');
  if (isIP(host) === 0 && host.endsWith('.test') && labels.length > 2)
    return { domain: labels.slice(-2).join('.'), host };
  return { domain: host, host: '' };
}
