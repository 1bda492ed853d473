import { describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { PAYMENT_PROVIDERS, Provider, providerNamed, PROVIDERS } from './registry.js';

/** The adapter of `provider`'s verify, as the receipt calls it. */
const verifySignature = (
  provider: Provider,
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
  nowMs: number,
) => providerNamed(provider)!.verify(secret, headers, body, nowMs);

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const TS = NOW / 1000;
const BODY = Buffer.from('{"id":"evt_1","type":"invoice.paid"}');
const hex = (secret: string | Buffer, data: string) =>
  createHmac('sha256', secret).update(data).digest('hex');

describe('verifySignature', () => {
  it('stripe: any of several v1 signatures, and the timestamp within 300 s either way', () => {
    const secret = 'whsec_stripe';
    const good = hex(secret, `${TS}.${BODY.toString()}`);
    const header = (t: number, ...v1: string[]) => ({
      'stripe-signature': [`t=${t}`, ...v1.map((v) => `v1=${v}`), 'v0=ignored'].join(','),
    });
    expect(verifySignature('stripe', secret, header(TS, 'ab'.repeat(32), good), BODY, NOW)).toEqual({
      ok: true,
    });
    expect(
      verifySignature(
        'stripe',
        secret,
        header(TS - 300, hex(secret, `${TS - 300}.${BODY.toString()}`)),
        BODY,
        NOW,
      ).ok,
    ).toBe(true);
    expect(
      verifySignature(
        'stripe',
        secret,
        header(TS - 301, hex(secret, `${TS - 301}.${BODY.toString()}`)),
        BODY,
        NOW,
      ),
    ).toEqual({
      ok: false,
      reason: 'the signed timestamp is more than 300 seconds from now',
    });
    // Not hex, odd lengths, a signature cut short: refused, never thrown.
    for (const bad of ['zz', 'abc', good.slice(0, 62), ''])
      expect(verifySignature('stripe', secret, header(TS, bad), BODY, NOW).ok).toBe(false);
    expect(verifySignature('stripe', secret, { 'stripe-signature': `v1=${good}` }, BODY, NOW)).toEqual({
      ok: false,
      reason: 'the signed timestamp is missing or not a number',
    });
  });

  it('paddle: ts and several h1 separated by semicolons', () => {
    const secret = 'pdl_ntfset_secret';
    const good = hex(secret, `${TS}:${BODY.toString()}`);
    expect(
      verifySignature(
        'paddle',
        secret,
        { 'paddle-signature': `ts=${TS};h1=${'0'.repeat(64)};h1=${good}` },
        BODY,
        NOW,
      ),
    ).toEqual({ ok: true });
    expect(
      verifySignature('paddle', secret, { 'paddle-signature': `ts=${TS + 301};h1=${good}` }, BODY, NOW).ok,
    ).toBe(false);
    expect(
      verifySignature('paddle', 'another', { 'paddle-signature': `ts=${TS};h1=${good}` }, BODY, NOW).ok,
    ).toBe(false);
  });

  it('lemonsqueezy: the hex HMAC of the body, upper or lower case', () => {
    const good = hex('ls-secret', BODY.toString());
    expect(
      verifySignature('lemonsqueezy', 'ls-secret', { 'x-signature': good.toUpperCase() }, BODY, NOW),
    ).toEqual({ ok: true });
    expect(verifySignature('lemonsqueezy', 'ls-secret', {}, BODY, NOW)).toEqual({
      ok: false,
      reason: 'the X-Signature header is missing',
    });
  });

  it('standard and polar: Standard Webhooks, several signatures, the webhook-id as the event id', () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const signed = new Webhook(secret).sign('msg_1', new Date(NOW), BODY.toString());
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(TS),
      'webhook-signature': `v1,${randomBytes(32).toString('base64')} ${signed} v2,ignored`,
    };
    expect(verifySignature('standard', secret, headers, BODY, NOW)).toEqual({
      ok: true,
      headerEventId: 'msg_1',
    });
    expect(verifySignature('standard', secret, { ...headers, 'webhook-id': 'msg_2' }, BODY, NOW).ok).toBe(
      false,
    );
    // Polar's secrets are not base64: their UTF-8 bytes are the key (its SDK base64-encodes them for standardwebhooks).
    const polar = 'polar_whs_abc';
    const polarSigned = new Webhook(Buffer.from(polar).toString('base64')).sign(
      'msg_3',
      new Date(NOW),
      BODY.toString(),
    );
    expect(
      verifySignature(
        'polar',
        polar,
        { 'webhook-id': 'msg_3', 'webhook-timestamp': String(TS), 'webhook-signature': polarSigned },
        BODY,
        NOW,
      ),
    ).toEqual({ ok: true, headerEventId: 'msg_3' });
  });
});

describe('the provider registry', () => {
  it('names each provider once, in lower-case letters that fit the 16-character column and a path', () => {
    expect(PROVIDERS).toEqual(['stripe', 'paddle', 'lemonsqueezy', 'polar', 'standard']);
    expect(new Set(PROVIDERS).size).toBe(PROVIDERS.length);
    for (const name of PROVIDERS) expect(name).toMatch(/^[a-z]{1,16}$/);
  });

  it('knows no provider by a name that is not its own, inherited ones included', () => {
    for (const name of ['', 'Stripe', 'unknown', 'constructor', '__proto__', 'toString'])
      expect(providerNamed(name)).toBeUndefined();
  });

  it("reads an event type named like an object's own members as one that moves nothing", () => {
    for (const type of ['constructor', '__proto__', 'hasOwnProperty'])
      expect(providerNamed('stripe')!.read({ id: 'evt_1', type, data: {} }, BODY, undefined)).toEqual({
        id: 'evt_1',
        type,
        verdict: { kind: 'ignored', detail: `The event type ${type} is not one that moves has_paid.` },
        domain: undefined,
        reference: null,
        email: null,
        // Nothing about a purchase either: a type outside the table records none.
        occurredAt: null,
        purchase: null,
        paymentIds: [],
        refund: null,
        customerId: null,
        customerName: null,
        productIds: null,
        status: null,
        cancelAtPeriodEnd: null,
        currentPeriodEnd: null,
        ends: false,
        revives: false,
        notes: false,
      });
  });
});

describe('sign', () => {
  const headersOf = (signed: Record<string, string>): IncomingHttpHeaders =>
    Object.fromEntries(Object.entries(signed).map(([name, value]) => [name.toLowerCase(), value]));

  it.each(PROVIDERS)('%s: what sign makes, verify accepts; another body or secret it refuses', (name) => {
    const adapter = providerNamed(name)!;
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const headers = headersOf(adapter.sign(secret, BODY, NOW));
    expect(adapter.verify(secret, headers, BODY, NOW).ok).toBe(true);
    expect(adapter.verify(secret, headers, Buffer.from(`${BODY.toString()} `), NOW).ok).toBe(false);
    expect(adapter.verify(`whsec_${randomBytes(32).toString('base64')}`, headers, BODY, NOW).ok).toBe(false);
  });

  it("makes the headers the providers' own libraries make", () => {
    const stripeSecret = 'whsec_stripe';
    expect(providerNamed('stripe')!.sign(stripeSecret, BODY, NOW)).toEqual({
      'Stripe-Signature': new Stripe('sk_test_x').webhooks.generateTestHeaderString({
        payload: BODY.toString(),
        secret: stripeSecret,
        timestamp: TS,
      }),
    });
    expect(providerNamed('paddle')!.sign('pdl_ntfset_secret', BODY, NOW)).toEqual({
      'Paddle-Signature': `ts=${TS};h1=${hex('pdl_ntfset_secret', `${TS}:${BODY.toString()}`)}`,
    });
    expect(providerNamed('lemonsqueezy')!.sign('ls-secret', BODY, NOW)).toEqual({
      'X-Signature': hex('ls-secret', BODY.toString()),
    });
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    expect(providerNamed('standard')!.sign(secret, BODY, NOW, 'msg_1')).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(TS),
      'webhook-signature': new Webhook(secret).sign('msg_1', new Date(NOW), BODY.toString()),
    });
    const polar = 'polar_whs_abc';
    expect(providerNamed('polar')!.sign(polar, BODY, NOW, 'msg_2')['webhook-signature']).toBe(
      new Webhook(Buffer.from(polar).toString('base64')).sign('msg_2', new Date(NOW), BODY.toString()),
    );
    // Without an id, each delivery gets one of its own.
    const [a, b] = [1, 2].map(() => providerNamed('standard')!.sign(secret, BODY, NOW)['webhook-id']);
    expect(a).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(a).not.toBe(b);
  });
});

describe('sampleEvent', () => {
  it.each(PAYMENT_PROVIDERS.map((p) => [p.name, p] as const))(
    '%s: read as an event of its type that moves nothing, a new id each time',
    (_name, adapter) => {
      const read = () => {
        const body = Buffer.from(JSON.stringify(adapter.sampleEvent(new Date(NOW))));
        const headers = Object.fromEntries(
          Object.entries(adapter.sign('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', body, NOW)).map(
            ([k, v]) => [k.toLowerCase(), v],
          ),
        );
        const verified = adapter.verify('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', headers, body, NOW);
        expect(verified.ok).toBe(true);
        const payload = JSON.parse(body.toString()) as Record<string, unknown>;
        return adapter.read(payload, body, verified.ok ? verified.headerEventId : undefined)!;
      };
      const first = read();
      expect(first.verdict).toEqual({
        kind: 'ignored',
        detail: `The event type ${first.type} is not one that moves has_paid.`,
      });
      expect(first.type).not.toBe('');
      expect(first.domain).toBeUndefined();
      expect(first.reference).toBeNull();
      expect(read().id).not.toBe(first.id);
    },
  );
});

describe('samplePayment', () => {
  it.each(PAYMENT_PROVIDERS.map((p) => [p.name, p] as const))(
    '%s: read as a paid one-time order carrying its target and product, a new order each time',
    (_name, adapter) => {
      const secret = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0';
      const read = (metadata: Record<string, string>, product: string | null) => {
        const body = Buffer.from(JSON.stringify(adapter.samplePayment(new Date(NOW), { metadata, product })));
        const headers = Object.fromEntries(
          Object.entries(adapter.sign(secret, body, NOW)).map(([k, v]) => [k.toLowerCase(), v]),
        );
        const verified = adapter.verify(secret, headers, body, NOW);
        expect(verified.ok).toBe(true);
        const payload = JSON.parse(body.toString()) as Record<string, unknown>;
        return adapter.read(payload, body, verified.ok ? verified.headerEventId : undefined)!;
      };
      const forLicense = read({ licensegate_license: '42' }, 'prod_1');
      expect(forLicense.verdict).toEqual({ kind: 'paid' });
      expect(forLicense.license).toBe('42');
      expect(forLicense.domain).toBeUndefined();
      expect(forLicense.purchase?.kind).toBe('order');
      expect(forLicense.productIds).toContain('prod_1');
      expect(forLicense.occurredAt?.getTime()).toBe(Math.floor(NOW / 1000) * 1000);
      const forDomain = read({ licensegate_domain: 'shop.example.com' }, null);
      expect([forDomain.domain, forDomain.license, forDomain.productIds]).toEqual([
        'shop.example.com',
        undefined,
        null,
      ]);
      expect(forDomain.purchase?.reference).not.toBe(forLicense.purchase?.reference);
      expect(forDomain.id).not.toBe(forLicense.id);
    },
  );
});
