import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { fieldError } from '../common/http/errors.js';
import { licenseKey, type SentLicenseKey } from '../common/http/license-key.js';
import { AppConfig } from '../config/app-config.js';
import { type CallingDomain, callingDomain, noDomainMessage } from './calling-domain.js';

/** What `include` asked for: `injectables`, `token`, or both, comma-separated. */
export interface Include {
  injectables: boolean;
  token: boolean;
}

/** Who makes a runtime call and from where: what every runtime answer and refusal reads of its request. */
export interface RuntimeCaller {
  /** The license key as sent; null on a call LicenseKeyGuard refuses for want of one, and with an API key. */
  readonly key: SentLicenseKey | null;
  /** The client address, honouring TRUST_PROXY ('' when unknown). */
  readonly address: string;
  /** COUNTRY_HEADER as sent (its first value), unchecked: each reader applies its own rule. */
  readonly country: string | undefined;
}

/** A has-paid call, parsed once: the services answer it from these plain values (docs/architecture.md). */
export interface RuntimeCall extends RuntimeCaller {
  readonly action: 'check_project' | undefined;
  readonly include: Include | undefined;
  /** The calling domain as read (calling-domain.ts): X-Service-Domain, `domain` (config, query, body), Origin, Referer. */
  readonly domain: CallingDomain;
  /** When `domain` names no host: the 400 saying why (what was sent names none, or nothing was); else null. */
  readonly noDomain: string | null;
}

export const ACTION_INVALID = 'The selected action is invalid: the only action is check_project.';
export const INVALID_INCLUDE =
  'The selected include is invalid: include takes injectables, token, or both comma-separated.';

function parseAction(value: unknown): 'check_project' | undefined {
  if (value !== undefined && value !== 'check_project') throw fieldError('action', ACTION_INVALID);
  return value;
}

/** `include`: a comma-separated list of `injectables` and `token`; anything else is a 422. */
function parseInclude(value: unknown): Include | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw fieldError('include', INVALID_INCLUDE);
  if (value === 'injectables') return ONLY_INJECTABLES;
  const include: Include = { injectables: false, token: false };
  for (const item of value.split(',')) {
    if (item !== 'injectables' && item !== 'token') throw fieldError('include', INVALID_INCLUDE);
    include[item] = true;
  }
  return include;
}
const ONLY_INJECTABLES: Include = Object.freeze({ injectables: true, token: false });

type Parameters = Record<string, unknown> | undefined;

const MEMO = Symbol('runtimeCall');
type Memo = Request & { [MEMO]?: RuntimeCaller };

/**
 * Reads a runtime call off its request, once: the controllers hand the services plain values, and the
 * exception filter counts a refusal from the call the controller read (kept on the request, as
 * licenseKey() keeps the key).
 */
@Injectable()
export class RuntimeCalls {
  private readonly countryHeader: string;

  constructor(config: AppConfig) {
    this.countryHeader = config.env.COUNTRY_HEADER.toLowerCase();
  }

  /** The caller of any runtime route (the stream, a deactivation, a refusal): the call read so far, or its caller. */
  caller(req: Request): RuntimeCaller {
    const memo = req as Memo;
    return (memo[MEMO] ??= { key: licenseKey(req), address: req.ip ?? '', country: this.country(req) });
  }

  /**
   * POST has-paid, once the gate has passed the license's refusals: `action`, `include` and `domain` from
   * the query, or all three from the body's `config` when the license has allow_configs
   * (docs/decisions.md#runtime-checks); an unknown action or include is a 422 naming it.
   */
  hasPaid(req: Request, allowConfigs: boolean): RuntimeCall {
    const query = req.query as Parameters;
    let action = parseAction(query?.action);
    let include = parseInclude(query?.include);
    let configDomain = query?.domain;
    const config = (req.body as { config?: unknown } | undefined)?.config;
    if (allowConfigs && config && typeof config === 'object' && !Array.isArray(config)) {
      const steer = config as Record<string, unknown>;
      action = parseAction(steer.action);
      include = parseInclude(steer.include);
      configDomain = steer.domain;
    }
    const call = this.read(req, licenseKey(req), action, include, configDomain);
    (req as Memo)[MEMO] = call;
    return call;
  }

  /** GET :project/has-paid, asked with an API key: `action`, `include` and `domain` from the query. */
  byApiKey(req: Request): RuntimeCall {
    const query = req.query as Parameters;
    const action = parseAction(query?.action);
    return this.read(req, null, action, parseInclude(query?.include), query?.domain);
  }

  private read(
    req: Request,
    key: SentLicenseKey | null,
    action: 'check_project' | undefined,
    include: Include | undefined,
    configDomain: unknown,
  ): RuntimeCall {
    const domain = callingDomain(req, configDomain);
    return {
      key,
      address: req.ip ?? '',
      country: this.country(req),
      action,
      include,
      domain,
      noDomain: domain.host === null ? noDomainMessage(req, configDomain) : null,
    };
  }

  private country(req: Request): string | undefined {
    const sent = req.headers[this.countryHeader];
    return Array.isArray(sent) ? sent[0] : sent;
  }
}
