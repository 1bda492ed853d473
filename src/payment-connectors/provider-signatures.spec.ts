import { describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { verifySignature } from './provider-signatures.js';

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
