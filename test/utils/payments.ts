import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Provider, providerNamed, PROVIDERS } from '../../src/payments/providers/registry.js';
import type { TestApp } from './test-app.js';

export type ProviderName = Provider;
export const PROVIDER_LIST: ProviderName[] = [...PROVIDERS];

/** A signing secret of the form the provider issues. */
export function secretFor(provider: ProviderName): string {
  const random = randomBytes(24);
  switch (provider) {
    case 'stripe':
      return `whsec_${random.toString('hex')}`;
    case 'paddle':
      return `pdl_ntfset_01hv8x_${random.toString('base64url')}`;
    case 'lemonsqueezy':
      return random.toString('hex').slice(0, 32);
    case 'polar':
      return `polar_whs_${random.toString('base64url')}`;
    case 'standard':
      return `whsec_${random.toString('base64')}`;
  }
}

/** A provider's JSON payload, read and changed field by field by the tests. */
export type Payload = Record<string, any>;

/** A fixture from test/fixtures/payments/<provider>/<event>.json, parsed (a fresh copy each call). */
export function fixture(provider: ProviderName, event: string): Payload {
  return JSON.parse(
    readFileSync(join(__dirname, '..', 'fixtures', 'payments', provider, `${event}.json`), 'utf8'),
  ) as Payload;
}

/** The fixtures' own time (test/fixtures/payments/README.md). */
const FIXTURE_TIME_MS = Date.parse('2026-01-15T12:00:00Z');

/** `payload` dated `seconds` after the fixtures' time, where its provider dates its events. */
export function dated(provider: ProviderName, payload: Payload, seconds: number): Payload {
  const ms = FIXTURE_TIME_MS + seconds * 1000;
  const iso = new Date(ms).toISOString();
  if (provider === 'stripe') payload.created = ms / 1000;
  else if (provider === 'paddle') payload.occurred_at = iso;
  else if (provider === 'lemonsqueezy') payload.data.attributes.updated_at = iso;
  else payload.timestamp = iso;
  return payload;
}

/** A provider's fixture, dated, with an event id of its own where the provider's payload carries one. */
export function fixtureEvent(
  provider: ProviderName,
  name: string,
  seconds: number,
  change?: (p: Payload) => void,
): Payload {
  const payload = dated(provider, fixture(provider, name), seconds);
  const id = `evt_${name}_${seconds}_${randomBytes(4).toString('hex')}`;
  if (provider === 'stripe') payload.id = id;
  if (provider === 'paddle') payload.event_id = id;
  change?.(payload);
  return payload;
}

/**
 * The signature headers the provider sends with `body`: its adapter's sign, which the adapters' spec
 * holds to what the providers' own libraries make. `ts`: unix seconds; `id`: Standard Webhooks' webhook-id.
 */
export function signatureHeaders(
  provider: ProviderName,
  secret: string,
  body: string,
  ts: number,
  id?: string,
): Record<string, string> {
  return providerNamed(provider)!.sign(secret, body, ts * 1000, id);
}

export interface Connector {
  id: number;
  provider: ProviderName;
  endpoint_url: string;
  secret: string;
  [field: string]: unknown;
}

/** POST …/payment-connectors; the answer with the secret it was made with (`overrides.signing_secret`, or a fresh one). */
export async function makeConnector(
  t: TestApp,
  key: string,
  projectId: number,
  provider: ProviderName,
  overrides: Record<string, unknown> = {},
): Promise<Connector> {
  const secret = (overrides.signing_secret as string | undefined) ?? secretFor(provider);
  const res = await t
    .http()
    .post(`/api/v1/project/${projectId}/payment-connectors`)
    .set('X-API-KEY', key)
    .send({ provider, signing_secret: secret, ...overrides });
  if (res.status !== 201) throw new Error(`makeConnector: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...(res.body.data as Connector), secret };
}

/** The path of a connector's endpoint_url (its origin is PUBLIC_URL, not the test server). */
export const endpointPath = (connector: { endpoint_url: string }) => new URL(connector.endpoint_url).pathname;

export interface Delivery {
  /** Unix seconds of the signature (default: the clock's now). */
  ts?: number;
  secret?: string;
  id?: string;
  /** Replaces the signed body on the wire (a body changed after signing). */
  sentBody?: string | Buffer;
  headers?: Record<string, string>;
  omitSignature?: boolean;
  contentType?: string;
}

/** Delivers `payload` to the connector, signed as its provider signs. */
export function deliver(
  t: TestApp,
  connector: Connector,
  payload: object | string,
  nowMs: number,
  options: Delivery = {},
) {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const ts = options.ts ?? Math.floor(nowMs / 1000);
  const signed = signatureHeaders(
    connector.provider,
    options.secret ?? connector.secret,
    body,
    ts,
    options.id,
  );
  const req = t
    .http()
    .post(endpointPath(connector))
    .set('Content-Type', options.contentType ?? 'application/json');
  if (!options.omitSignature) for (const [name, value] of Object.entries(signed)) req.set(name, value);
  for (const [name, value] of Object.entries(options.headers ?? {})) req.set(name, value);
  return req.send(options.sentBody ?? body);
}
