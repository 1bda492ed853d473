import type { Request } from 'express';
import { isIP } from 'node:net';
import { hostOfUrl, normalizeDomain } from '../common/domain-name.js';

export interface CallingDomain {
  /** The normalised host name, or null when none could be determined. */
  host: string | null;
  /** A local development host: localhost, 127.0.0.1, ::1, *.localhost, *.test (SPEC 7). */
  local: boolean;
}

const LOCAL_IPS = new Set(['127.0.0.1', '::1', '[::1]', '::ffff:127.0.0.1']);

/** Accepts `shop.example.com`, `shop.example.com:8443` or a full URL as SDKs sometimes send it. */
function hostPart(value: string): string {
  const trimmed = value.trim();
  if (trimmed.includes('://')) return hostOfUrl(trimmed) ?? trimmed;
  const withPort = /^([^:/\s]+):\d{1,5}$/.exec(trimmed);
  return withPort ? withPort[1] : trimmed;
}

/**
 * The calling domain (SPEC 7 step 3): X-Service-Domain, else the `domain` parameter (config, query or
 * body), else the host of Origin, else of Referer; normalised as domains are stored.
 */
export function callingDomain(req: Request, configDomain?: unknown): CallingDomain {
  const header = req.headers['x-service-domain'];
  const body = req.body as { domain?: unknown } | undefined;
  const sources: unknown[] = [
    Array.isArray(header) ? header[0] : header,
    configDomain,
    req.query?.domain,
    body?.domain,
    hostOfUrl(req.headers.origin),
    hostOfUrl(req.headers.referer),
  ];
  const raw = sources.find((v): v is string => typeof v === 'string' && v.trim() !== '');
  if (raw === undefined) return { host: null, local: false };
  const host = hostPart(raw).toLowerCase().replace(/\.$/, '');
  if (LOCAL_IPS.has(host) || (isIP(host) === 0 && (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.test')))) {
    return { host: normalizeDomain(host), local: true };
  }
  return { host: normalizeDomain(host), local: false };
}

/** The registered domain `host` belongs to: itself or its nearest registered parent. */
export function findRegistered<T>(domains: Map<string, T>, host: string): T | undefined {
  for (let name = host; ; ) {
    const found = domains.get(name);
    if (found) return found;
    const dot = name.indexOf('.');
    if (dot < 0) return undefined;
    name = name.slice(dot + 1);
  }
}

export const isSameOrSubdomain = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);
