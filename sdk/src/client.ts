/**
 * The runtime client: license-key calls only (has-paid, the injectable stream, deactivation), over
 * `globalThis.fetch` or a fetch passed in.
 */
import { FieldErrors, LicenseGateError } from './errors.js';
import type { DeactivateResult, HasPaidResult, PaidInjectable, StreamInjectable } from './types.js';

/** What the client needs of a fetch response; the platform `Response` fits. */
export interface FetchResponseLike {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** What the client passes to fetch. */
export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
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
  /** A fetch to use instead of `globalThis.fetch` (tests, proxies, timeouts). */
  fetch?: FetchLike;
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
  /** `POST /project/has-paid`. Throws `LicenseGateError` on any refusal (401, 403, 400, 429…). */
  hasPaid(options?: HasPaidOptions): Promise<HasPaidResult>;
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
}

/** Normalises a base address to `…/api/v1` without a trailing slash. */
export function normalizeBaseUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || baseUrl.trim() === '') throw new TypeError('createClient: baseUrl is required');
  const here = (globalThis as unknown as { location?: { href?: string } }).location?.href;
  let url: URL;
  try {
    url = new URL(baseUrl.trim(), here);
  } catch {
    throw new TypeError(`createClient: baseUrl is not a valid URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`createClient: baseUrl must be http or https: ${baseUrl}`);
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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function errorFrom(res: FetchResponseLike, body: Envelope | null): LicenseGateError {
  const data = isObject(body?.data) ? body.data : null;
  const message =
    typeof body?.message === 'string' && body.message !== '' ? body.message : `LicenseGate answered HTTP ${res.status} without a readable message.`;
  return new LicenseGateError({
    status: res.status,
    message,
    redirectUrl: typeof data?.redirect_url === 'string' ? data.redirect_url : null,
    retryAfter: parseRetryAfter(res.headers.get('retry-after')),
    errors: isObject(body?.errors) ? (body.errors as FieldErrors) : null,
    requestId: res.headers.get('x-request-id'),
  });
}

class Client implements LicenseGateClient {
  readonly baseUrl: string;
  private readonly licenseKey: string;
  private readonly domain: string | undefined;
  private readonly doFetch: FetchLike;

  constructor(options: ClientOptions) {
    if (!options || typeof options !== 'object') throw new TypeError('createClient: options are required');
    if (typeof options.licenseKey !== 'string' || options.licenseKey === '') throw new TypeError('createClient: licenseKey is required');
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.licenseKey = options.licenseKey;
    this.domain = options.domain || undefined;
    if (options.fetch) {
      this.doFetch = options.fetch;
    } else {
      const platform = (globalThis as unknown as { fetch?: FetchLike }).fetch;
      if (typeof platform !== 'function') throw new TypeError('createClient: no globalThis.fetch here; pass options.fetch');
      // Called detached from globalThis, browsers throw "Illegal invocation".
      this.doFetch = (url, init) => platform.call(globalThis, url, init);
    }
  }

  /** One call; resolves the envelope's `data`, throws `LicenseGateError` otherwise. */
  private async call(method: 'GET' | 'POST', path: string, query: Record<string, string | number | undefined>, domain?: string): Promise<unknown> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    const url = `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
    const headers: Record<string, string> = { Accept: 'application/json', 'X-LICENSE-KEY': this.licenseKey };
    const callingDomain = domain || this.domain;
    if (callingDomain) headers['X-Service-Domain'] = callingDomain;
    // The check's options travel in the query, so a POST carries no body: the service then has none
    // to read or parse, and answers it faster.
    const init: FetchInit = { method, headers };

    let res: FetchResponseLike;
    let text: string;
    try {
      res = await this.doFetch(url, init);
      text = await res.text();
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new LicenseGateError({ status: 0, message: `Could not reach LicenseGate at ${this.baseUrl}: ${why}`, cause: err });
    }

    let body: Envelope | null = null;
    try {
      const parsed: unknown = text === '' ? null : JSON.parse(text);
      body = isObject(parsed) ? parsed : null;
    } catch {
      body = null;
    }
    if (res.status >= 200 && res.status < 300 && body?.status === 'success') return body.data;
    if (res.status >= 200 && res.status < 300) {
      throw new LicenseGateError({ status: res.status, message: 'LicenseGate answered with something other than its JSON envelope.', requestId: res.headers.get('x-request-id') });
    }
    throw errorFrom(res, body);
  }

  async hasPaid(options: HasPaidOptions = {}): Promise<HasPaidResult> {
    const data = await this.call(
      'POST',
      '/project/has-paid',
      { action: options.checkProject ? 'check_project' : undefined, include: options.includeInjectables ? 'injectables' : undefined },
      options.domain,
    );
    const d = isObject(data) ? data : {};
    return {
      hasPaid: d.has_paid === true,
      isTestLicense: d.is_test_license === true,
      redirectUrl: typeof d.redirect_url === 'string' ? d.redirect_url : null,
      injectables: Array.isArray(d.injectables) ? (d.injectables as PaidInjectable[]) : [],
    };
  }

  async deactivate(options: DeactivateOptions = {}): Promise<DeactivateResult> {
    const page = (globalThis as unknown as { location?: { hostname?: string } }).location?.hostname;
    const data = await this.call('POST', '/license/deactivate', {}, options.domain || this.domain || page || undefined);
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
      const next = typeof page.next_cursor === 'string' && page.next_cursor !== '' ? page.next_cursor : undefined;
      if (page.has_more !== true || next === undefined || next === cursor) return;
      cursor = next;
    }
  }

  async withSignatures<T extends PaidInjectable>(items: T[]): Promise<Array<T & { signature: string | null }>> {
    const wanted = new Map<string, T>();
    for (const item of items) wanted.set(item.slug, item);
    const found = new Map<string, string>();
    if (wanted.size > 0) {
      for await (const s of this.streamInjectables()) {
        const item = wanted.get(s.slug);
        if (item && !found.has(s.slug) && s.encrypted_content === item.content) found.set(s.slug, s.signature);
        if (found.size === wanted.size) break;
      }
    }
    return items.map((item) => ({ ...item, signature: found.get(item.slug) ?? null }));
  }
}

/** A client for one license key. */
export function createClient(options: ClientOptions): LicenseGateClient {
  return new Client(options);
}
