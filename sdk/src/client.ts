/**
 * The runtime client: license-key calls only (has-paid, the injectable stream, deactivation), over
 * `globalThis.fetch` or a fetch passed in.
 */
import { importPublicKey, PublicKeyInput, sha256Hex } from './crypto.js';
import { FieldErrors, LicenseGateError } from './errors.js';
import { memoryStore, TokenStore } from './offline.js';
import { answerProblem, newNonce, normalizeDomain, openOfflineToken, OfflineTokenPayload } from './signed.js';
import type {
  DeactivateResult,
  Entitlements,
  HasPaidResult,
  PaidInjectable,
  StreamInjectable,
  UsageResult,
} from './types.js';
import { KeyHandle, utf8 } from './webcrypto.js';

/** What the client needs of a fetch response; the platform `Response` fits. */
export interface FetchResponseLike {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
  /** Used when present: a signature covers the body's exact bytes. */
  arrayBuffer?(): Promise<ArrayBuffer>;
}

/** What the client passes to fetch. */
export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Aborts the call after `timeoutMs`. */
  signal?: AbortSignal;
}

/** A fetch implementation; the platform `fetch` fits. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponseLike>;

export interface ClientOptions {
  /**
   * The service's address: `https://host/api/v1` (trailing slash optional), or a bare origin
   * `https://host` (then `/api/v1` is appended). In a browser a relative path such as `/api/v1` works too.
   */
  baseUrl: string;
  /** The license key: the license's `uuid`, sent as `X-LICENSE-KEY`. */
  licenseKey: string;
  /**
   * The calling domain, sent as `X-Service-Domain`. Optional: the service falls back to the
   * `domain` parameter, then the browser's `Origin`/`Referer`.
   */
  domain?: string;
  /** A fetch to use instead of `globalThis.fetch` (tests, proxies). */
  fetch?: FetchLike;
  /** Give up on a call after this many milliseconds (`LicenseGateError` code `timeout`, status 0). Default 10000. */
  timeoutMs?: number;
  /**
   * The project's public key (`public_key` or `public_key_pem` of `GET /project/{id}/signing-key`, or
   * that object). With it every call sends a fresh `X-Service-Nonce` and accepts an answer only when
   * its signature verifies, the nonce is its own and its date is within `maxSkewSeconds`; otherwise
   * it throws `LicenseGateError` with code `bad_signature`. Needs `projectId`.
   */
  publicKey?: PublicKeyInput;
  /** The project's id: offline tokens of another project are refused. Required with `publicKey`. */
  projectId?: number | string;
  /** How far a signed answer's date may be from this clock, in seconds. Default 300. */
  maxSkewSeconds?: number;
  /**
   * Offline mode (needs `publicKey`): has-paid asks for an offline token, keeps the newest valid one
   * per domain in `store` (memory by default; `localStorageStore()`, `fileStore(path)`), and when
   * the service cannot be reached (network error, timeout, 5xx) answers `{ hasPaid: true, offline:
   * true, expiresAt }` from a verified, unexpired token for that domain. A refusal (401, 403, 429) or
   * a verified unpaid answer deletes the token.
   */
  offline?: boolean | { store?: TokenStore };
}

export interface HasPaidOptions {
  /** `action=check_project`: the project's paid state, ignoring the domain. */
  checkProject?: boolean;
  /** `include=injectables`: also return the active paid-only injectables when paid. */
  includeInjectables?: boolean;
  /** Overrides the client's `domain` for this call. */
  domain?: string;
}

export interface DeactivateOptions {
  /**
   * The host to deactivate. Defaults to the client's `domain`, then (in a browser) the page's host
   * name. The service deactivates exactly this host: the registered domain's own activation, or the
   * subdomain's.
   */
  domain?: string;
}

export interface StreamOptions {
  /** Page size, 1–50 (the service's default is 50). */
  perPage?: number;
}

export interface LicenseGateClient {
  /** The normalised base address, e.g. `https://host/api/v1`. */
  readonly baseUrl: string;
  /**
   * `POST /project/has-paid`. Throws `LicenseGateError` on any refusal (401, 403, 400, 429…); in
   * offline mode answers from a stored token when the service cannot be reached.
   */
  hasPaid(options?: HasPaidOptions): Promise<HasPaidResult>;
  /** The same as `hasPaid()`: the runtime check, with `graceUntil` while a payment grace runs. */
  check(options?: HasPaidOptions): Promise<HasPaidResult>;
  /**
   * `POST /license/deactivate`: frees the slot this license holds for a host (before moving a site
   * to another domain, say) → `{ deactivated }`, the number of activations deleted (0 when there
   * were none). At most a few a day per license (429, `retryAfter` set, past them).
   */
  deactivate(options?: DeactivateOptions): Promise<DeactivateResult>;
  /** Every item of every page of `GET /injectable/stream`, following `next_cursor`. */
  streamInjectables(options?: StreamOptions): AsyncIterable<StreamInjectable>;
  /**
   * Adds `signature` to has-paid items (which carry none) from the injectable stream,
   * matched by slug and only when the stream's blob is the same; otherwise `signature` is null and
   * `verify()` answers false. Streams only until every slug is found.
   */
  withSignatures<T extends PaidInjectable>(items: T[]): Promise<Array<T & { signature: string | null }>>;
  /**
   * True when the last answer (verified when a public key is set, online or from an offline token)
   * grants `code`: `true`, a positive integer or a non-empty string. Checks once first when nothing
   * was checked yet; a failed check answers false (closed).
   */
  can(code: string): Promise<boolean>;
  /** The integer value of an entitlement in the last answer, else null (also when a check fails). */
  limit(code: string): Promise<number | null>;
  /**
   * `POST /license/usage`: counts `amount` (default 1) of a metered entitlement (`meter.*`) this UTC
   * month. The idempotency key makes a retry count once (a random one when omitted: pass your own to
   * retry safely). Past the quota: `LicenseGateError` 429 with the meter's counts in `data`, nothing
   * counted.
   */
  record(meter: string, amount?: number, idempotencyKey?: string): Promise<UsageResult>;
}

/** Normalises a base address to `…/api/v1` without a trailing slash. */
export function normalizeBaseUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || baseUrl.trim() === '')
    throw new TypeError('createClient: baseUrl is required');
  const here = (globalThis as unknown as { location?: { href?: string } }).location?.href;
  let url: URL;
  try {
    url = new URL(baseUrl.trim(), here);
  } catch {
    throw new TypeError(`createClient: baseUrl is not a valid URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`createClient: baseUrl must be http or https: ${baseUrl}`);
  let path = url.pathname.replace(/\/+$/, '');
  if (path === '') path = '/api/v1';
  else if (path.endsWith('/api')) path += '/v1';
  return `${url.origin}${path}`;
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

type Envelope = { status?: unknown; message?: unknown; data?: unknown; errors?: unknown };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function errorFrom(res: FetchResponseLike, body: Envelope | null): LicenseGateError {
  const data = isObject(body?.data) ? body.data : null;
  const message =
    typeof body?.message === 'string' && body.message !== ''
      ? body.message
      : `LicenseGate answered HTTP ${res.status} without a readable message.`;
  return new LicenseGateError({
    status: res.status,
    message,
    redirectUrl: typeof data?.redirect_url === 'string' ? data.redirect_url : null,
    retryAfter: parseRetryAfter(res.headers.get('retry-after')),
    errors: isObject(body?.errors) ? (body.errors as FieldErrors) : null,
    requestId: res.headers.get('x-request-id'),
    data,
  });
}

/** A signed-answers setup: the imported key and its settings. */
interface Verifier {
  key: Promise<KeyHandle>;
  projectId: number;
  maxSkewSeconds: number;
}

/** One answer as received: its status, headers and parsed envelope; `problem` says why it cannot be trusted. */
interface Answer {
  res: FetchResponseLike;
  body: Envelope | null;
  problem: string | null;
}

function badSignature(res: FetchResponseLike, problem: string): LicenseGateError {
  return new LicenseGateError({
    status: res.status,
    code: 'bad_signature',
    message: `LicenseGate's answer (HTTP ${res.status}) was refused: ${problem}.`,
    requestId: res.headers.get('x-request-id'),
  });
}

const DEFAULT_TIMEOUT_MS = 10_000;

class Client implements LicenseGateClient {
  readonly baseUrl: string;
  private readonly licenseKey: string;
  private readonly domain: string | undefined;
  private readonly doFetch: FetchLike;
  private readonly timeoutMs: number;
  private readonly verifier: Verifier | null;
  private readonly store: TokenStore | null;
  private keyHash: Promise<string> | null = null;
  /** The entitlements of the last answer (`{}` when unpaid or the answer carried none); null before any or after a refusal. */
  private last: Entitlements | null = null;

  constructor(options: ClientOptions) {
    if (!options || typeof options !== 'object') throw new TypeError('createClient: options are required');
    if (typeof options.licenseKey !== 'string' || options.licenseKey.trim() === '')
      throw new TypeError('createClient: licenseKey is required');
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    // Header values travel trimmed: the signed text must hold what the service received.
    this.licenseKey = options.licenseKey.trim();
    this.domain = options.domain?.trim() || undefined;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs <= 0)
      throw new TypeError('createClient: timeoutMs must be a positive number');
    if (options.publicKey !== undefined && options.publicKey !== null) {
      const projectId = Number(options.projectId);
      if (!Number.isSafeInteger(projectId) || projectId <= 0)
        throw new TypeError("createClient: projectId (the project's id) is required with publicKey");
      const maxSkewSeconds = options.maxSkewSeconds ?? 300;
      if (!Number.isFinite(maxSkewSeconds) || maxSkewSeconds < 0)
        throw new TypeError('createClient: maxSkewSeconds must be a number >= 0');
      const key = importPublicKey(options.publicKey);
      key.catch(() => undefined); // reported by the first call that needs it
      this.verifier = { key, projectId, maxSkewSeconds };
    } else {
      this.verifier = null;
    }
    if (options.offline) {
      if (!this.verifier)
        throw new TypeError(
          'createClient: offline mode needs publicKey and projectId (tokens are verified before they are trusted)',
        );
      this.store = (typeof options.offline === 'object' && options.offline.store) || memoryStore();
    } else {
      this.store = null;
    }
    if (options.fetch) {
      this.doFetch = options.fetch;
    } else {
      const platform = (globalThis as unknown as { fetch?: FetchLike }).fetch;
      if (typeof platform !== 'function')
        throw new TypeError('createClient: no globalThis.fetch here; pass options.fetch');
      // Called detached from globalThis, browsers throw "Illegal invocation".
      this.doFetch = (url, init) => platform.call(globalThis, url, init);
    }
  }

  /** One call; resolves the envelope's `data`, throws `LicenseGateError` otherwise. */
  private async call(
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string | number | undefined>,
    domain?: string,
    json?: string,
  ): Promise<unknown> {
    const { res, body, problem } = await this.send(method, path, query, domain, json);
    if (problem) throw badSignature(res, problem);
    if (res.status >= 200 && res.status < 300 && body?.status === 'success') return body.data;
    if (res.status >= 200 && res.status < 300) {
      throw new LicenseGateError({
        status: res.status,
        message: 'LicenseGate answered with something other than its JSON envelope.',
        requestId: res.headers.get('x-request-id'),
      });
    }
    throw errorFrom(res, body);
  }

  /**
   * Sends one request and reads its answer, verified when a public key is set: every answer but a
   * 5xx (which only ever leads to a retry or to offline mode) must carry a valid signature, else
   * `problem` says why not.
   */
  private async send(
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string | number | undefined>,
    domain?: string,
    json?: string,
  ): Promise<Answer> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    const url = `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
    const headers: Record<string, string> = { Accept: 'application/json', 'X-LICENSE-KEY': this.licenseKey };
    const callingDomain = domain?.trim() || this.domain;
    if (callingDomain) headers['X-Service-Domain'] = callingDomain;
    const nonce = this.verifier ? newNonce() : null;
    if (nonce) headers['X-Service-Nonce'] = nonce;
    // The check's options travel in the query, so a POST carries no body: the service then has none
    // to read or parse, and answers it faster.
    const init: FetchInit = { method, headers };
    if (json !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = json;
    }

    let res: FetchResponseLike;
    let bytes: Uint8Array | null = null;
    let text: string;
    const controller = typeof AbortController === 'function' ? new AbortController() : null;
    if (controller) init.signal = controller.signal;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller?.abort();
        reject(
          new LicenseGateError({
            status: 0,
            code: 'timeout',
            message: `LicenseGate at ${this.baseUrl} did not answer within ${this.timeoutMs} ms.`,
          }),
        );
      }, this.timeoutMs);
    });
    try {
      const read = (async () => {
        const r = await this.doFetch(url, init);
        if (nonce && r.arrayBuffer) {
          bytes = new Uint8Array(await r.arrayBuffer());
          return { r, text: decodeUtf8(bytes) };
        }
        return { r, text: await r.text() };
      })();
      read.catch(() => undefined);
      ({ r: res, text } = await Promise.race([read, timedOut]));
    } catch (err) {
      if (err instanceof LicenseGateError) throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new LicenseGateError({
        status: 0,
        message: `Could not reach LicenseGate at ${this.baseUrl}: ${why}`,
        cause: err,
      });
    } finally {
      clearTimeout(timer);
    }

    let body: Envelope | null;
    try {
      const parsed: unknown = text === '' ? null : JSON.parse(text);
      body = isObject(parsed) ? parsed : null;
    } catch {
      body = null;
    }
    let problem: string | null = null;
    if (this.verifier && nonce && res.status < 500) {
      const target = new URL(url);
      problem = await answerProblem(
        res.headers.get('x-service-signature'),
        {
          date: res.headers.get('x-service-date') ?? '',
          nonce,
          method,
          target: `${target.pathname}${target.search}`,
          licenseKey: this.licenseKey,
          domain: callingDomain ?? '',
          body: bytes ?? utf8(text),
        },
        await this.verifier.key,
        this.verifier.maxSkewSeconds,
      );
    }
    return { res, body, problem };
  }

  check(options: HasPaidOptions = {}): Promise<HasPaidResult> {
    return this.hasPaid(options);
  }

  async hasPaid(options: HasPaidOptions = {}): Promise<HasPaidResult> {
    try {
      const result = await this.answerHasPaid(options);
      this.last = result.hasPaid ? (result.entitlements ?? {}) : {};
      return result;
    } catch (err) {
      this.last = null;
      throw err;
    }
  }

  private async answerHasPaid(options: HasPaidOptions): Promise<HasPaidResult> {
    const include = [options.includeInjectables ? 'injectables' : null, this.store ? 'token' : null]
      .filter(Boolean)
      .join(',');
    const query = {
      action: options.checkProject ? 'check_project' : undefined,
      include: include || undefined,
    };
    if (!this.store) return toResult(await this.call('POST', '/project/has-paid', query, options.domain));

    // Offline mode: the token of this call's domain (null for a project check).
    const domain = options.checkProject
      ? null
      : (normalizeDomain(options.domain ?? this.domain) ?? normalizeDomain(browserHost()));
    const slot = `${await this.licenseKeyHash()}:${this.verifier?.projectId}:${domain ?? '*'}`;
    let answer: Answer;
    try {
      answer = await this.send('POST', '/project/has-paid', query, options.domain);
    } catch (err) {
      if (err instanceof LicenseGateError && (err.code === 'unreachable' || err.code === 'timeout'))
        return this.fromToken(slot, domain, err);
      throw err;
    }
    const { res, body, problem } = answer;
    if (res.status >= 500) return this.fromToken(slot, domain, errorFrom(res, body));
    if (res.status === 401 || res.status === 403 || res.status === 429) {
      // A refusal ends offline use, even one that cannot be verified (a key the service no longer
      // knows is refused unsigned): for a paywall, the safe side of doubt is closed.
      await this.store.delete(slot);
      throw problem ? badSignature(res, problem) : errorFrom(res, body);
    }
    if (problem) throw badSignature(res, problem);
    if (res.status < 200 || res.status >= 300 || body?.status !== 'success') {
      if (res.status >= 200 && res.status < 300) {
        throw new LicenseGateError({
          status: res.status,
          message: 'LicenseGate answered with something other than its JSON envelope.',
          requestId: res.headers.get('x-request-id'),
        });
      }
      throw errorFrom(res, body);
    }
    const result = toResult(body.data);
    const token = isObject(body.data) ? body.data.token : undefined;
    if (!result.hasPaid) await this.store.delete(slot);
    else if (typeof token === 'string' && (await this.usableToken(token, domain)))
      await this.keepNewest(slot, token, domain);
    return result;
  }

  private licenseKeyHash(): Promise<string> {
    this.keyHash ??= sha256Hex(utf8(this.licenseKey));
    return this.keyHash;
  }

  /** The token's payload when it verifies and belongs to this project, license and domain and is unexpired. */
  private async usableToken(token: string, domain: string | null): Promise<OfflineTokenPayload | null> {
    const verifier = this.verifier as Verifier;
    const payload = await openOfflineToken(token, await verifier.key);
    if (!payload) return null;
    if (
      payload.project_id !== verifier.projectId ||
      payload.key_sha256 !== (await this.licenseKeyHash()) ||
      payload.domain !== domain
    )
      return null;
    return payload.exp * 1000 > Date.now() ? payload : null;
  }

  /** Stores `token` unless the stored one is valid and newer. */
  private async keepNewest(slot: string, token: string, domain: string | null): Promise<void> {
    const store = this.store as TokenStore;
    const stored = await store.get(slot);
    if (stored && stored !== token) {
      const [held, fresh] = await Promise.all([
        this.usableToken(stored, domain),
        this.usableToken(token, domain),
      ]);
      if (held && fresh && held.iat > fresh.iat) return;
    }
    await store.set(slot, token);
  }

  /** The answer from a stored token while the service cannot be reached; `failure` when there is none. */
  private async fromToken(
    slot: string,
    domain: string | null,
    failure: LicenseGateError,
  ): Promise<HasPaidResult> {
    const store = this.store as TokenStore;
    const stored = await store.get(slot);
    const payload = stored ? await this.usableToken(stored, domain) : null;
    if (!payload) {
      // Expired or no longer valid: fail closed, and forget it.
      if (stored) await store.delete(slot);
      throw failure;
    }
    return {
      hasPaid: true,
      isTestLicense: payload.is_test_license,
      redirectUrl: null,
      injectables: [],
      offline: true,
      expiresAt: new Date(payload.exp * 1000),
      graceUntil: null,
      ...planOf(payload),
    };
  }

  async can(code: string): Promise<boolean> {
    const value = (await this.entitlements())?.[code];
    return (
      value === true ||
      (typeof value === 'number' && value > 0) ||
      (typeof value === 'string' && value !== '')
    );
  }

  async limit(code: string): Promise<number | null> {
    const value = (await this.entitlements())?.[code];
    return typeof value === 'number' && Number.isInteger(value) ? value : null;
  }

  /** The last answer's entitlements, checking once when there is none; null when that check fails. */
  private async entitlements(): Promise<Entitlements | null> {
    if (this.last === null) {
      try {
        await this.hasPaid();
      } catch (err) {
        if (err instanceof LicenseGateError) return null;
        throw err;
      }
    }
    return this.last;
  }

  async record(meter: string, amount = 1, idempotencyKey?: string): Promise<UsageResult> {
    const json = JSON.stringify({ meter, amount, idempotency_key: idempotencyKey ?? newNonce() });
    const data = await this.call('POST', '/license/usage', {}, undefined, json);
    const d = isObject(data) ? data : {};
    const resets = typeof d.resets_at === 'string' ? new Date(d.resets_at) : null;
    return {
      meter: typeof d.meter === 'string' ? d.meter : meter,
      used: typeof d.used === 'number' ? d.used : 0,
      limit: typeof d.limit === 'number' ? d.limit : 0,
      remaining: typeof d.remaining === 'number' ? d.remaining : 0,
      resetsAt: resets && !Number.isNaN(resets.getTime()) ? resets : null,
    };
  }

  async deactivate(options: DeactivateOptions = {}): Promise<DeactivateResult> {
    const page = (globalThis as unknown as { location?: { hostname?: string } }).location?.hostname;
    const data = await this.call(
      'POST',
      '/license/deactivate',
      {},
      options.domain || this.domain || page || undefined,
    );
    const d = isObject(data) ? data : {};
    return { deactivated: typeof d.deactivated === 'number' ? d.deactivated : 0 };
  }

  async *streamInjectables(options: StreamOptions = {}): AsyncGenerator<StreamInjectable, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const data = await this.call('GET', '/injectable/stream', { per_page: options.perPage, cursor });
      const page = isObject(data) ? data : {};
      const items = Array.isArray(page.injectables) ? (page.injectables as StreamInjectable[]) : [];
      for (const item of items) yield item;
      const next =
        typeof page.next_cursor === 'string' && page.next_cursor !== '' ? page.next_cursor : undefined;
      if (page.has_more !== true || next === undefined || next === cursor) return;
      cursor = next;
    }
  }

  async withSignatures<T extends PaidInjectable>(
    items: T[],
  ): Promise<Array<T & { signature: string | null }>> {
    const wanted = new Map<string, T>();
    for (const item of items) wanted.set(item.slug, item);
    const found = new Map<string, string>();
    if (wanted.size > 0) {
      for await (const s of this.streamInjectables()) {
        const item = wanted.get(s.slug);
        if (item && !found.has(s.slug) && s.encrypted_content === item.content)
          found.set(s.slug, s.signature);
        if (found.size === wanted.size) break;
      }
    }
    return items.map((item) => ({ ...item, signature: found.get(item.slug) ?? null }));
  }
}

/** The has-paid `data` as a result. */
function toResult(data: unknown): HasPaidResult {
  const d = isObject(data) ? data : {};
  return {
    hasPaid: d.has_paid === true,
    isTestLicense: d.is_test_license === true,
    redirectUrl: typeof d.redirect_url === 'string' ? d.redirect_url : null,
    injectables: Array.isArray(d.injectables) ? (d.injectables as PaidInjectable[]) : [],
    offline: false,
    expiresAt: null,
    graceUntil: graceUntil(d.grace_until),
    ...planOf(d),
  };
}

/** `plan` and `entitlements` when the answer (or token) carries them: a license with a plan or entitlements of its own. */
function planOf(d: { plan?: unknown; entitlements?: unknown }): Pick<HasPaidResult, 'plan' | 'entitlements'> {
  if (!('plan' in d) && !('entitlements' in d)) return {};
  return {
    plan: typeof d.plan === 'string' ? d.plan : null,
    entitlements: isObject(d.entitlements) ? (d.entitlements as Entitlements) : {},
  };
}

/** `data.grace_until` (ISO-8601) as a Date; null when absent or not a date. */
function graceUntil(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** The page's host in a browser (what the service reads from Origin when no domain is sent). */
function browserHost(): string | null {
  return (globalThis as unknown as { location?: { hostname?: string } }).location?.hostname ?? null;
}

function decodeUtf8(bytes: Uint8Array): string {
  const Decoder = (globalThis as unknown as { TextDecoder: new () => { decode(b: Uint8Array): string } })
    .TextDecoder;
  return new Decoder().decode(bytes);
}

/** A client for one license key. */
export function createClient(options: ClientOptions): LicenseGateClient {
  return new Client(options);
}
