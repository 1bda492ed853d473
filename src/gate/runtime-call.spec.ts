import { describe, expect, it } from '@jest/globals';
import type { Request } from 'express';
import { ManualClock } from '../../test/utils/clock.js';
import type { AnalyticsCounts } from '../analytics/analytics-counts.service.js';
import { RuntimeRefusal, type ApiError } from '../common/http/errors.js';
import { sha256Hex } from '../common/crypto/crypto.js';
import type { AppConfig } from '../config/app-config.js';
import type { DomainEntity } from '../domains/domain.entity.js';
import type { InjectablesService } from '../injectables/injectables.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { RuntimeAnswerCounting } from './answer-counting.js';
import type { AnswerSigning } from './answer-signing.js';
import { HEADER_NOT_A_HOST, NO_DOMAIN, PARAMETER_NOT_A_HOST } from './calling-domain.js';
import type { Activations } from '../licenses/activations.js';
import type { UsageCounter } from './usage-counter.js';
import { RuntimeAnswers } from './runtime-answers.service.js';
import { ACTION_INVALID, INVALID_INCLUDE, type RuntimeCall, RuntimeCalls } from './runtime-call.js';
import type { RuntimeLookupService } from './runtime-lookup.service.js';

const KEY = '8f14e45f-ceea-467a-9575-3b0a6c5b1f4e';

function request(
  headers: Record<string, string | string[]>,
  query: Record<string, unknown> = {},
  body?: unknown,
): Request {
  return {
    headers: { 'x-license-key': KEY, ...headers },
    query,
    body,
    ip: '203.0.113.9',
  } as unknown as Request;
}

const calls = new RuntimeCalls({ env: { COUNTRY_HEADER: 'CF-IPCountry' } } as unknown as AppConfig);

/** The 422 `run` throws, as field and message. */
function refusal(run: () => unknown): [string, string] {
  try {
    run();
  } catch (error) {
    const errors = (error as ApiError).errors ?? {};
    const [field] = Object.keys(errors);
    return [field, errors[field][0]];
  }
  throw new Error('not refused');
}

describe('RuntimeCalls', () => {
  it('reads a has-paid call once: key, address, country, action, include and domain', () => {
    const req = request(
      { 'x-service-domain': 'Shop.Example.com', 'cf-ipcountry': ['us', 'FR'] },
      { action: 'check_project', include: 'token,injectables' },
    );
    const call = calls.hasPaid(req, false);
    expect(call).toEqual({
      key: { key: KEY, hash: sha256Hex(KEY) },
      address: '203.0.113.9',
      country: 'us',
      action: 'check_project',
      include: { injectables: true, token: true },
      domain: { host: 'shop.example.com', local: false },
      noDomain: null,
    });
    // The exception filter counts a refusal from the same call.
    expect(calls.caller(req)).toBe(call);
  });

  it("takes action, include and domain from an allow_configs license's config, and only from it", () => {
    const body = { config: { domain: 'config.example.com' }, domain: 'body.example.com' };
    const query = { action: 'check_project', include: 'injectables', domain: 'query.example.com' };
    const steered = calls.hasPaid(request({ origin: 'https://origin.example.com' }, query, body), true);
    expect([steered.action, steered.include, steered.domain.host]).toEqual([
      undefined,
      undefined,
      'config.example.com',
    ]);
    const unsteered = calls.hasPaid(request({}, query, body), false);
    expect([unsteered.action, unsteered.include, unsteered.domain.host]).toEqual([
      'check_project',
      { injectables: true, token: false },
      'query.example.com',
    ]);
    // A config that is no object steers nothing.
    expect(calls.hasPaid(request({}, query, { config: ['x'] }), true).domain.host).toBe('query.example.com');
  });

  it('refuses an unknown action or include, in the query or the config, with a 422 naming it', () => {
    expect(refusal(() => calls.hasPaid(request({}, { action: 'other' }), false))).toEqual([
      'action',
      ACTION_INVALID,
    ]);
    expect(refusal(() => calls.hasPaid(request({}, { include: 'injectables,all' }), false))).toEqual([
      'include',
      INVALID_INCLUDE,
    ]);
    expect(refusal(() => calls.byApiKey(request({}, { include: ['token'] })))).toEqual([
      'include',
      INVALID_INCLUDE,
    ]);
    expect(refusal(() => calls.hasPaid(request({}, {}, { config: { include: 'tokens' } }), true))).toEqual([
      'include',
      INVALID_INCLUDE,
    ]);
  });

  it('says why no host was found: the header, the parameter, or nothing sent', () => {
    expect(calls.hasPaid(request({ 'x-service-domain': '203.0.113.7' }), false).noDomain).toBe(
      HEADER_NOT_A_HOST,
    );
    expect(calls.hasPaid(request({}, { domain: 'not a host!' }), false).noDomain).toBe(PARAMETER_NOT_A_HOST);
    expect(calls.hasPaid(request({}, {}, { domain: 7 }), false).noDomain).toBe(PARAMETER_NOT_A_HOST);
    expect(calls.hasPaid(request({}), false)).toMatchObject({
      domain: { host: null, local: false },
      noDomain: NO_DOMAIN,
    });
    expect(calls.byApiKey(request({ 'x-service-domain': 'shop.example.com' }))).toMatchObject({
      key: null,
      domain: { host: 'shop.example.com' },
    });
  });

  it('reads the caller of a call without a key, and keeps it', () => {
    const req = { headers: {}, query: {}, ip: undefined } as unknown as Request;
    const caller = calls.caller(req);
    expect(caller).toEqual({ key: null, address: '', country: undefined });
    expect(calls.caller(req)).toBe(caller);
  });
});

/** RuntimeAnswers and RuntimeAnswerCounting over one license and project, answering from plain calls. */
function runtime(license: Partial<LicenseEntity> = {}) {
  const counted: unknown[][] = [];
  const activated: string[][] = [];
  const counts = {
    enabled: true,
    count: (...args: unknown[]) => void counted.push(args),
  } as unknown as AnalyticsCounts;
  const answers = new RuntimeAnswerCounting(counts, {
    projectOf: () => 7,
  } as unknown as RuntimeLookupService);
  const usage = { takeUsage: () => 'ok' } as unknown as UsageCounter;
  const activations = {
    activate: (_entry: unknown, domain: string, host: string) => {
      activated.push([domain, host]);
      return 'ok';
    },
  } as unknown as Activations;
  const payments = new RuntimeAnswers(
    usage,
    activations,
    {} as InjectablesService,
    {} as AnswerSigning,
    answers,
    new ManualClock(),
  );
  const project = {
    id: 7,
    has_paid: true,
    grace_until: null,
    default_redirect_url: 'https://example.com/pay',
  } as ProjectEntity;
  const domain = { id: 3, domain: 'example.com', has_paid: false, grace_until: null } as DomainEntity;
  const entry = {
    license: {
      id: 1,
      domain_id: null,
      is_test_license: false,
      allow_configs: false,
      allowed_ips: null,
      allowed_countries: null,
      ...license,
    } as LicenseEntity,
    project,
    domains: new Map([['example.com', domain]]),
    pinned: null,
    redirectUrl: null,
    generation: null,
  };
  return { payments, answers, entry, counted, activated };
}

function call(values: Partial<RuntimeCall>): RuntimeCall {
  return {
    key: { key: KEY, hash: sha256Hex(KEY) },
    address: '198.51.100.4',
    country: undefined,
    action: undefined,
    include: undefined,
    domain: { host: 'shop.example.com', local: false },
    noDomain: null,
    ...values,
  };
}

function thrown(run: () => unknown): RuntimeRefusal {
  try {
    run();
  } catch (error) {
    if (error instanceof RuntimeRefusal) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('RuntimeAnswers on a RuntimeCall', () => {
  it("answers the calling domain's has_paid, counted under it with the country sent", () => {
    const { payments, entry, counted, activated } = runtime();
    expect(payments.checkLicense(entry, call({ country: ' de ' }))).toEqual({
      has_paid: false,
      redirect_url: 'https://example.com/pay',
      is_test_license: false,
    });
    expect(activated).toEqual([['example.com', 'shop.example.com']]);
    expect(counted).toEqual([[7, 'unpaid', '', 3, 'DE']]);
  });

  it('with check_project and no domain sent, answers the project without activating anything', () => {
    const { payments, entry, activated } = runtime();
    const project = call({
      action: 'check_project',
      domain: { host: null, local: false },
      noDomain: NO_DOMAIN,
    });
    expect(payments.checkLicense(entry, project)).toEqual({ has_paid: true, is_test_license: false });
    expect(activated).toEqual([]);
  });

  it('refuses a domain sent that names no host, with check_project too, saying which', () => {
    const { payments, entry } = runtime();
    const unnamed = { domain: { host: null, local: false }, noDomain: HEADER_NOT_A_HOST };
    for (const action of [undefined, 'check_project'] as const) {
      const refused = thrown(() => payments.checkLicense(entry, call({ ...unnamed, action })));
      expect([refused.getStatus(), refused.message, refused.reason]).toEqual([
        400,
        HEADER_NOT_A_HOST,
        'domain_missing',
      ]);
    }
  });

  it('refuses by the address and country the call carries, in that order', () => {
    const { payments, entry } = runtime({ allowed_ips: '203.0.113.0/24', allowed_countries: 'DE,FR' });
    expect(thrown(() => payments.checkLicense(entry, call({ country: 'de' }))).reason).toBe('ip');
    expect(thrown(() => payments.checkLicense(entry, call({ address: '203.0.113.8' }))).reason).toBe(
      'country',
    );
    expect(
      payments.checkLicense(entry, call({ address: '203.0.113.8', country: 'fr', action: 'check_project' })),
    ).toEqual({ has_paid: true, is_test_license: false });
  });

  it('counts a rate-limit refusal under the project of the key the caller sent', () => {
    const { answers, counted } = runtime();
    answers.refused(
      new RuntimeRefusal({ reason: 'rate_limited', status: 429, message: 'Too many requests.' }),
      call({ country: 'nl' }),
    );
    answers.refused(
      new RuntimeRefusal({ reason: 'rate_limited', status: 429, message: 'Too many requests.' }),
      call({ key: null }),
    );
    expect(counted).toEqual([[7, 'refused', 'rate_limited', 0, 'NL']]);
  });
});
