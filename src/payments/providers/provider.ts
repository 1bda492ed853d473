import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** How far a signed timestamp may be from now, either way (docs/payments.md). */
export const TOLERANCE_SECONDS = 300;

/** A signature that holds, with the event id a header carries (Standard Webhooks' webhook-id). */
export type Verified = { ok: true; headerEventId?: string } | { ok: false; reason: string };

/** What an event means for the gate: paid, unpaid, or nothing (with the reason). */
export type Verdict = { kind: 'paid' } | { kind: 'unpaid' } | { kind: 'ignored'; detail: string };

/** `subscription` or `order`: providers reuse one number for both, so a purchase is named by both. */
export type PurchaseKind = 'subscription' | 'order';

/** What a provider sold, as an event names it (docs/payments.md#subscriptions). */
export interface Purchase {
  kind: PurchaseKind;
  reference: string;
}

/** The status a purchase row takes (docs/payments.md#subscriptions). */
export type PurchaseStatus =
  'active' | 'trialing' | 'past_due' | 'paused' | 'canceled' | 'expired' | 'refunded' | 'disputed' | 'paid';

/**
 * A refund, a dispute or their reversal: it reaches its purchase through the payment ids kept from
 * the purchase's earlier events (or the purchase the event names), never by a reference of its own.
 */
export interface Refund {
  paymentIds: string[];
  /** The status the purchase takes; null: back to paid (a dispute won, a chargeback reversed). */
  status: 'refunded' | 'disputed' | null;
}

/** An event as the connector reads it (docs/payments.md, "What pays and what does not"). */
export interface ProviderEvent {
  id: string;
  type: string;
  verdict: Verdict;
  /** `licensegate_domain` from the provider's metadata, when set. */
  domain: unknown;
  /** `licensegate_license` from the same metadata, when set: the id of a license of the project. */
  license: unknown;
  /** The purchase's reference (the `reference` of `purchase`), or null. */
  reference: string | null;
  email: string | null;
  /** The provider's own time of the event (not of the delivery); null when the payload has none. */
  occurredAt: Date | null;
  /** The purchase the event records; null for a type that records nothing. */
  purchase: Purchase | null;
  /** Payment ids to keep for the purchase (how a later refund finds it). */
  paymentIds: string[];
  /** Set for refunds and disputes. */
  refund: Refund | null;
  /** The provider's id of the buyer, and the name it gives. */
  customerId: string | null;
  customerName: string | null;
  /** The provider's ids of what was bought (price, product, variant); null: the event names none. */
  productIds: string[] | null;
  /** The purchase's status after the event; null: unchanged. */
  status: PurchaseStatus | null;
  cancelAtPeriodEnd: boolean | null;
  currentPeriodEnd: Date | null;
  /** The provider ended the subscription: later paid events are stale, but for a revival. */
  ends: boolean;
  /** The provider's explicit revival of an ended subscription. */
  revives: boolean;
  /** A type that records its purchase though it neither pays nor stops payment (a cancellation at the period's end). */
  notes: boolean;
}

/** A provider's JSON payload: every field is the provider's, none is trusted to have a shape. */
export type Json = Record<string, unknown>;

/** A header the provider signs with, as the webhook route's OpenAPI operation lists it. */
export interface SignatureHeader {
  name: string;
  description: string;
}

/**
 * One payment provider (docs/architecture.md, "Payment providers"): how its deliveries are signed,
 * how its events read, and which of its event types move has_paid. Every member is pure: the
 * connector's secret and the time are handed in.
 */
export interface PaymentProvider<Name extends string = string> {
  /** The `provider` of a connector and of its endpoint's path: lower-case letters, at most 16. */
  readonly name: Name;
  readonly signatureHeaders: readonly SignatureHeader[];
  /** Checks the signature over the raw body bytes, before anything is parsed; constant-time. */
  verify(secret: string, headers: IncomingHttpHeaders, body: Buffer, nowMs: number): Verified;
  /** Reads a verified, parsed event; null when it carries no event id. */
  read(payload: Json, body: Buffer, headerEventId: string | undefined): ProviderEvent | null;
  /**
   * The headers the provider itself sends with `body` at `nowMs`, signed with `secret`; `eventId` is
   * the webhook-id of the providers whose header carries one (random when not given).
   */
  sign(secret: string, body: string | Buffer, nowMs: number, eventId?: string): Record<string, string>;
  /**
   * An example event as the provider sends it, of a type that is verified and stored but moves nothing
   * (outcome `ignored`); its ids are new on every call, so that it is never a duplicate.
   */
  sampleEvent(now: Date): Json;
  /**
   * An example of the provider's own paying event, one order of a single payment in test mode, whose
   * metadata carries `payment.metadata` where real events carry licensegate_domain; new ids on every call.
   */
  samplePayment(now: Date, payment: SamplePayment): Json;
  /**
   * Why `secret` cannot be this provider's signing secret (422 on signing_secret), or null: a short,
   * blank or misplaced one would let whoever guesses it pay a project (docs/security.md#payment-connectors).
   */
  secretProblem(secret: string): string | null;
}

/** What a payment test event carries (docs/payments.md#send-a-test-event). */
export interface SamplePayment {
  /** licensegate_domain or licensegate_license, or nothing (the project), as strings as providers keep metadata. */
  metadata: Record<string, string>;
  /** The first of the connector's products, so that a connector that lists products accepts it. */
  product: string | null;
}

export const SECRET_TOO_WEAK =
  'The signing secret field must be at least 16 characters and not only white space: paste the secret the provider shows.';

/** The common rule, and the prefix a provider's secrets carry with where the provider shows them. */
export function secretRule(
  title: string,
  prefix?: string,
  where?: string,
): (secret: string) => string | null {
  return (secret) => {
    if (secret.length < 16 || secret.trim() === '') return SECRET_TOO_WEAK;
    if (prefix && !secret.startsWith(prefix))
      return `The signing secret field must be a ${title} signing secret: it starts with ${prefix} (copy it from ${where}).`;
    return null;
  };
}

/** One row of a provider's table: what an event of that type moves, and the order it is about. */
export interface Move {
  verdict: Verdict;
  reference: string | null;
  /** Default: `subscription`. */
  kind?: PurchaseKind;
  status?: PurchaseStatus | null;
  refund?: Refund;
  ends?: boolean;
  revives?: boolean;
  notes?: boolean;
}

/** The fields of a ProviderEvent a move fills, the rest given by the adapter. */
export type EventFacts = Pick<
  ProviderEvent,
  | 'email'
  | 'customerId'
  | 'customerName'
  | 'productIds'
  | 'paymentIds'
  | 'cancelAtPeriodEnd'
  | 'currentPeriodEnd'
> & { occurredAt: Date | null; license: unknown };

/** The event of a move and the facts its adapter read. */
export function eventOf(
  id: string,
  type: string,
  domain: unknown,
  move: Move,
  facts: Partial<EventFacts>,
): ProviderEvent {
  const recorded = move.reference !== null && (move.verdict.kind !== 'ignored' || move.notes === true);
  return {
    id,
    type,
    verdict: move.verdict,
    domain,
    license: facts.license,
    reference: move.reference,
    email: facts.email ?? null,
    occurredAt: facts.occurredAt ?? null,
    purchase:
      move.reference !== null && (recorded || move.refund)
        ? { kind: move.kind ?? 'subscription', reference: move.reference.slice(0, 255) }
        : null,
    paymentIds: (facts.paymentIds ?? []).filter((p) => p.length <= 255),
    refund: move.refund ?? null,
    customerId: facts.customerId ?? null,
    customerName: facts.customerName ?? null,
    productIds: facts.productIds ?? null,
    status: move.status ?? null,
    cancelAtPeriodEnd: facts.cancelAtPeriodEnd ?? null,
    currentPeriodEnd: facts.currentPeriodEnd ?? null,
    ends: move.ends ?? false,
    revives: move.revives ?? false,
    notes: move.notes ?? false,
  };
}

/** An ISO-8601 time, or unix seconds, as a Date; null for anything else. */
export function timeOf(value: unknown): Date | null {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return new Date(value * 1000);
  if (typeof value !== 'string' || value.length > 64) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms);
}

/** Strings (and numbers) among `values`, once each. */
export const ids = (...values: unknown[]): string[] => [
  ...new Set(values.map(str).filter((v): v is string => v !== null)),
];

/** The id of a field that is an id, or an expanded object with one. */
export const idOf = (value: unknown): string | null => str(value) ?? str(obj(value).id);

/** A list field of the provider's, as an array of objects. */
export const list = (value: unknown): Json[] => (Array.isArray(value) ? value.map(obj) : []);

/** A partial refund: ignored on every provider (docs/payments.md#refunds-and-disputes). */
export const partialRefund = (type: string): Verdict => ({
  kind: 'ignored',
  detail: `${type} for part of the amount: only a full refund stops payment.`,
});

/** A provider's table of the event types it acts on; any other type moves nothing. */
export type Moves<Context> = Record<string, (context: Context) => Move>;

export const PAID: Verdict = { kind: 'paid' };
export const UNPAID: Verdict = { kind: 'unpaid' };

export const notActedOn = (type: string): Verdict => ({
  kind: 'ignored',
  detail: `The event type ${type} is not one that moves has_paid.`,
});

export const withStatus = (type: string, status: unknown): Verdict => ({
  kind: 'ignored',
  detail: `${type} with status ${shown(status)} neither pays nor stops payment.`,
});

/** The row of `type` in `table`; own rows only, so that `constructor` or `__proto__` is no event type. */
export function moveOf<Context>(table: Moves<Context>, type: string, context: Context): Move {
  return Object.hasOwn(table, type) ? table[type](context) : { verdict: notActedOn(type), reference: null };
}

/** A field of an object, whatever the input (payloads are the provider's, not ours). */
export const obj = (value: unknown): Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

export const str = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null;

/**
 * A value of the provider's payload as a detail quotes it: a string in JSON quotes (cut short), a
 * number or boolean as is, an array or object by its kind only. Never JSON.stringify on what may be
 * an array nested a hundred thousand deep: that overflows the stack.
 */
export function shown(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 255 ? `${value.slice(0, 255)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  return Array.isArray(value) ? 'an array' : 'an object';
}

export const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export const hmac = (key: string | Buffer, ...parts: Array<string | Buffer>): Buffer => {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** Constant-time: only buffers of equal length are compared, and every candidate is. */
export function anyEqual(expected: Buffer, candidates: Buffer[]): boolean {
  let found = false;
  for (const candidate of candidates)
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) found = true;
  return found;
}

const HEX = /^[0-9a-f]+$/i;
export const hexes = (values: string[]) =>
  values.filter((v) => HEX.test(v) && v.length % 2 === 0).map((v) => Buffer.from(v, 'hex'));

/**
 * Within TOLERANCE_SECONDS of now, in whole seconds as the providers' own libraries count (Stripe's,
 * standardwebhooks): with a fractional now, an event signed exactly 300 s ago would be refused.
 */
export function fresh(seconds: string | undefined, nowMs: number): string | null {
  if (seconds === undefined || !/^\d{1,12}$/.test(seconds))
    return 'the signed timestamp is missing or not a number';
  return Math.abs(Math.floor(nowMs / 1000) - Number(seconds)) > TOLERANCE_SECONDS
    ? `the signed timestamp is more than ${TOLERANCE_SECONDS} seconds from now`
    : null;
}

/** `k=v` pairs split by `separator`: every value of each key. */
export function pairs(value: string, separator: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of value.split(separator)) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    out.set(key, [...(out.get(key) ?? []), part.slice(at + 1).trim()]);
  }
  return out;
}

/** Unix seconds, as providers sign and date their events. */
export const unixSeconds = (ms: number) => Math.floor(ms / 1000);

/** `prefix` and `length` random characters of `alphabet` (sample ids in the provider's own form). */
export function randomId(prefix: string, length: number, alphabet = '0123456789abcdefghijklmnopqrstuvwxyz') {
  const bytes = randomBytes(length);
  let out = prefix;
  for (const byte of bytes) out += alphabet[byte % alphabet.length];
  return out;
}

/** Stripe's and Paddle's scheme: the header holds `<time>=<unix>` and `<signature>=<hex>` pairs. */
export interface TimestampedHmac {
  /** As the provider spells it; matched in lower case, as Node hands headers over. */
  header: string;
  separator: string;
  time: string;
  signature: string;
  /** Between the timestamp and the body in what is signed. */
  joiner: string;
}

/**
 * verify and sign of a TimestampedHmac scheme: HMAC-SHA256(secret, unix + joiner + body), several
 * signatures allowed (while a secret is rolled), the timestamp within TOLERANCE_SECONDS.
 */
export function timestampedHmac(
  scheme: TimestampedHmac,
): Pick<PaymentProvider, 'signatureHeaders' | 'verify' | 'sign'> {
  return {
    signatureHeaders: [
      {
        name: scheme.header,
        description: `${scheme.time}=<unix>${scheme.separator}${scheme.signature}=<hex>`,
      },
    ],
    verify(secret, headers, body, nowMs) {
      const sent = header(headers, scheme.header.toLowerCase());
      if (!sent) return { ok: false, reason: `the ${scheme.header} header is missing` };
      const fields = pairs(sent, scheme.separator);
      const time = fields.get(scheme.time)?.[0];
      const stale = fresh(time, nowMs);
      if (stale) return { ok: false, reason: stale };
      return anyEqual(
        hmac(secret, `${time}${scheme.joiner}`, body),
        hexes(fields.get(scheme.signature) ?? []),
      )
        ? { ok: true }
        : { ok: false, reason: `no ${scheme.signature} signature matches` };
    },
    sign(secret, body, nowMs) {
      const time = unixSeconds(nowMs);
      const mac = hmac(secret, `${time}${scheme.joiner}`, body).toString('hex');
      return { [scheme.header]: `${scheme.time}=${time}${scheme.separator}${scheme.signature}=${mac}` };
    },
  };
}
