import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { fromBase64, fromHex, toBase64, toHex } from '../src/index.js';

describe('base64 and hex', () => {
  it('round-trips every length 0..300 and agrees with Buffer', () => {
    for (let n = 0; n <= 300; n++) {
      const bytes = randomBytes(n);
      const b64 = bytes.toString('base64');
      expect(toBase64(new Uint8Array(bytes))).toBe(b64);
      expect(Buffer.from(fromBase64(b64)).equals(bytes)).toBe(true);
      expect(toHex(new Uint8Array(bytes))).toBe(bytes.toString('hex'));
      expect(Buffer.from(fromHex(bytes.toString('hex'))).equals(bytes)).toBe(true);
    }
  });

  it('RFC 4648 vectors', () => {
    const cases: Array<[string, string]> = [
      ['', ''],
      ['f', 'Zg=='],
      ['fo', 'Zm8='],
      ['foo', 'Zm9v'],
      ['foob', 'Zm9vYg=='],
      ['fooba', 'Zm9vYmE='],
      ['foobar', 'Zm9vYmFy'],
    ];
    for (const [text, b64] of cases) {
      expect(toBase64(new TextEncoder().encode(text))).toBe(b64);
      expect(new TextDecoder().decode(fromBase64(b64))).toBe(text);
    }
  });

  it('accepts whitespace (PEM), missing padding and the URL-safe alphabet', () => {
    const bytes = new Uint8Array(randomBytes(100));
    const b64 = Buffer.from(bytes).toString('base64');
    const wrapped = b64.replace(/(.{64})/g, '$1\n');
    expect(fromBase64(wrapped)).toEqual(bytes);
    expect(fromBase64(` ${b64}\r\n`)).toEqual(bytes);
    expect(fromBase64(Buffer.from(bytes).toString('base64url'))).toEqual(bytes);
    expect(fromBase64('Zm9vYg')).toEqual(new TextEncoder().encode('foob'));
  });

  it('rejects garbage', () => {
    for (const bad of ['Zm9v!', 'Z', 'Zm9vY', 'Zg=a', 'Zg===', 'Zm9=v', 'é==='])
      expect(() => fromBase64(bad)).toThrow(TypeError);
    for (const bad of ['0', 'zz', '0g']) expect(() => fromHex(bad)).toThrow(TypeError);
  });
});
