/**
 * Base64 (RFC 4648 §4) and hex helpers with no platform dependency (no Buffer, no atob).
 * Decoding ignores ASCII whitespace (PEM bodies wrap at 64 columns), accepts missing padding and the
 * URL-safe alphabet, and throws on anything else.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;
LOOKUP['-'.charCodeAt(0)] = 62;
LOOKUP['_'.charCodeAt(0)] = 63;

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Decodes base64 to bytes; throws `TypeError` on characters outside the alphabet or bad padding. */
export function fromBase64(input: string): Uint8Array {
  if (typeof input !== 'string') throw new TypeError('base64: expected a string');
  const codes: number[] = [];
  let padding = 0;
  for (let i = 0; i < input.length; i++) {
    const c = input.charCodeAt(i);
    if (isSpace(c)) continue;
    if (c === 0x3d /* = */) {
      padding++;
      continue;
    }
    if (padding > 0) throw new TypeError('base64: data after padding');
    const v = c < 128 ? LOOKUP[c] : -1;
    if (v < 0) throw new TypeError(`base64: invalid character at ${i}`);
    codes.push(v);
  }
  const rem = codes.length % 4;
  if (rem === 1 || padding > 2 || (padding > 0 && (codes.length + padding) % 4 !== 0)) {
    throw new TypeError('base64: invalid length');
  }
  const out = new Uint8Array(Math.floor((codes.length * 3) / 4));
  let o = 0;
  let i = 0;
  for (; i + 4 <= codes.length; i += 4) {
    const n = (codes[i] << 18) | (codes[i + 1] << 12) | (codes[i + 2] << 6) | codes[i + 3];
    out[o++] = n >>> 16;
    out[o++] = (n >>> 8) & 0xff;
    out[o++] = n & 0xff;
  }
  if (rem === 2) {
    out[o] = ((codes[i] << 2) | (codes[i + 1] >>> 4)) & 0xff;
  } else if (rem === 3) {
    const n = (codes[i] << 10) | (codes[i + 1] << 4) | (codes[i + 2] >>> 2);
    out[o] = (n >>> 8) & 0xff;
    out[o + 1] = n & 0xff;
  }
  return out;
}

/** Encodes bytes as standard, padded base64. */
export function toBase64(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 3 <= bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[n >>> 18] + ALPHABET[(n >>> 12) & 63] + ALPHABET[(n >>> 6) & 63] + ALPHABET[n & 63];
  }
  const rem = bytes.length - i;
  if (rem === 1) {
    const n = bytes[i] << 16;
    out += `${ALPHABET[n >>> 18]}${ALPHABET[(n >>> 12) & 63]}==`;
  } else if (rem === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += `${ALPHABET[n >>> 18]}${ALPHABET[(n >>> 12) & 63]}${ALPHABET[(n >>> 6) & 63]}=`;
  }
  return out;
}

/** Lowercase hex. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
  return out;
}

/** Hex to bytes; throws `TypeError` on odd length or a non-hex character. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new TypeError('hex: invalid input');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
