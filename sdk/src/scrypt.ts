/**
 * scrypt (RFC 7914) on WebCrypto, which has PBKDF2 but no scrypt:
 *
 *   B  = PBKDF2-HMAC-SHA256(P, S, 1, p · 128 · r)
 *   Bi = ROMix_r(Bi, N)            for each of the p blocks (Salsa20/8 BlockMix, in Uint32Arrays)
 *   DK = PBKDF2-HMAC-SHA256(P, B, 1, dkLen)
 *
 * The memory-hard middle runs synchronously on the calling thread; with the LicenseGate parameters
 * (N = 16384, r = 8, p = 1) that is 16 MiB and roughly 0.1–0.3 s per call.
 */
import { subtle, utf8 } from './webcrypto.js';

export interface ScryptParams {
  /** CPU/memory cost: a power of two > 1. */
  N: number;
  /** Block size. */
  r: number;
  /** Parallelisation. */
  p: number;
  /** Refuse parameters needing more than this many bytes of working memory (default 256 MiB). */
  maxmem?: number;
}

/** The parameters the LG1 format fixes for injectable payloads. */
export const LG1_SCRYPT: Readonly<ScryptParams> = Object.freeze({ N: 16384, r: 8, p: 1 });

async function pbkdf2Sha256(password: Uint8Array, salt: Uint8Array, length: number): Promise<Uint8Array> {
  const s = subtle();
  const key = await s.importKey('raw', password, 'PBKDF2', false, ['deriveBits']);
  const bits = await s.deriveBits({ name: 'PBKDF2', salt, iterations: 1, hash: 'SHA-256' }, key, length * 8);
  return new Uint8Array(bits);
}

const rotl = (a: number, b: number) => (a << b) | (a >>> (32 - b));

/** Salsa20/8 core (RFC 7914 §3), in place on 16 words. */
function salsa208(x: Uint32Array): void {
  const j0 = x[0],
    j1 = x[1],
    j2 = x[2],
    j3 = x[3],
    j4 = x[4],
    j5 = x[5],
    j6 = x[6],
    j7 = x[7];
  const j8 = x[8],
    j9 = x[9],
    j10 = x[10],
    j11 = x[11],
    j12 = x[12],
    j13 = x[13],
    j14 = x[14],
    j15 = x[15];
  let x0 = j0,
    x1 = j1,
    x2 = j2,
    x3 = j3,
    x4 = j4,
    x5 = j5,
    x6 = j6,
    x7 = j7;
  let x8 = j8,
    x9 = j9,
    x10 = j10,
    x11 = j11,
    x12 = j12,
    x13 = j13,
    x14 = j14,
    x15 = j15;
  for (let i = 0; i < 8; i += 2) {
    // columns
    x4 ^= rotl(x0 + x12, 7);
    x8 ^= rotl(x4 + x0, 9);
    x12 ^= rotl(x8 + x4, 13);
    x0 ^= rotl(x12 + x8, 18);
    x9 ^= rotl(x5 + x1, 7);
    x13 ^= rotl(x9 + x5, 9);
    x1 ^= rotl(x13 + x9, 13);
    x5 ^= rotl(x1 + x13, 18);
    x14 ^= rotl(x10 + x6, 7);
    x2 ^= rotl(x14 + x10, 9);
    x6 ^= rotl(x2 + x14, 13);
    x10 ^= rotl(x6 + x2, 18);
    x3 ^= rotl(x15 + x11, 7);
    x7 ^= rotl(x3 + x15, 9);
    x11 ^= rotl(x7 + x3, 13);
    x15 ^= rotl(x11 + x7, 18);
    // rows
    x1 ^= rotl(x0 + x3, 7);
    x2 ^= rotl(x1 + x0, 9);
    x3 ^= rotl(x2 + x1, 13);
    x0 ^= rotl(x3 + x2, 18);
    x6 ^= rotl(x5 + x4, 7);
    x7 ^= rotl(x6 + x5, 9);
    x4 ^= rotl(x7 + x6, 13);
    x5 ^= rotl(x4 + x7, 18);
    x11 ^= rotl(x10 + x9, 7);
    x8 ^= rotl(x11 + x10, 9);
    x9 ^= rotl(x8 + x11, 13);
    x10 ^= rotl(x9 + x8, 18);
    x12 ^= rotl(x15 + x14, 7);
    x13 ^= rotl(x12 + x15, 9);
    x14 ^= rotl(x13 + x12, 13);
    x15 ^= rotl(x14 + x13, 18);
  }
  x[0] = x0 + j0;
  x[1] = x1 + j1;
  x[2] = x2 + j2;
  x[3] = x3 + j3;
  x[4] = x4 + j4;
  x[5] = x5 + j5;
  x[6] = x6 + j6;
  x[7] = x7 + j7;
  x[8] = x8 + j8;
  x[9] = x9 + j9;
  x[10] = x10 + j10;
  x[11] = x11 + j11;
  x[12] = x12 + j12;
  x[13] = x13 + j13;
  x[14] = x14 + j14;
  x[15] = x15 + j15;
}

/** scryptBlockMix (RFC 7914 §4): `out` = BlockMix(`b`), with the even/odd output interleaving. `t` is 16 words of scratch. */
function blockMix(b: Uint32Array, out: Uint32Array, r: number, t: Uint32Array): void {
  t.set(b.subarray((2 * r - 1) * 16, 2 * r * 16));
  for (let i = 0; i < 2 * r; i++) {
    const bi = i * 16;
    for (let k = 0; k < 16; k++) t[k] ^= b[bi + k];
    salsa208(t);
    out.set(t, ((i & 1) === 0 ? i >> 1 : r + (i >> 1)) * 16);
  }
}

/** scryptROMix (RFC 7914 §5) on one 128·r-byte block of `bytes` at `offset`, in place. */
function roMix(bytes: Uint8Array, offset: number, r: number, N: number): void {
  const words = 32 * r;
  let x = new Uint32Array(words);
  let y = new Uint32Array(words);
  const t = new Uint32Array(16);
  const v = new Uint32Array(words * N);
  for (let k = 0; k < words; k++) {
    const o = offset + k * 4;
    x[k] = bytes[o] | (bytes[o + 1] << 8) | (bytes[o + 2] << 16) | (bytes[o + 3] << 24);
  }
  for (let i = 0; i < N; i++) {
    v.set(x, i * words);
    blockMix(x, y, r, t);
    const swap = x;
    x = y;
    y = swap;
  }
  const last = (2 * r - 1) * 16;
  for (let i = 0; i < N; i++) {
    // Integerify: the first word of the last 64-byte block; N is a power of two ≤ 2^32.
    const j = (x[last] & (N - 1)) >>> 0;
    const vj = j * words;
    for (let k = 0; k < words; k++) x[k] ^= v[vj + k];
    blockMix(x, y, r, t);
    const swap = x;
    x = y;
    y = swap;
  }
  for (let k = 0; k < words; k++) {
    const o = offset + k * 4;
    const w = x[k];
    bytes[o] = w & 0xff;
    bytes[o + 1] = (w >>> 8) & 0xff;
    bytes[o + 2] = (w >>> 16) & 0xff;
    bytes[o + 3] = w >>> 24;
  }
}

/**
 * scrypt(password, salt, N, r, p, dkLen). A string password is taken as its UTF-8 bytes.
 * Matches node:crypto `scryptSync(password, salt, dkLen, { N, r, p })`.
 */
export async function scrypt(
  password: string | Uint8Array,
  salt: string | Uint8Array,
  dkLen: number,
  params: ScryptParams = LG1_SCRYPT,
): Promise<Uint8Array> {
  const { N, r, p } = params;
  const maxmem = params.maxmem ?? 256 * 1024 * 1024;
  if (!Number.isInteger(N) || N < 2 || N > 2 ** 32 || (N & (N - 1)) !== 0)
    throw new RangeError('scrypt: N must be a power of two greater than 1');
  if (!Number.isInteger(r) || r < 1 || !Number.isInteger(p) || p < 1 || r * p >= 2 ** 30)
    throw new RangeError('scrypt: invalid r or p');
  if (!Number.isInteger(dkLen) || dkLen < 1) throw new RangeError('scrypt: dkLen must be a positive integer');
  if (128 * r * (N + p + 2) > maxmem)
    throw new RangeError(`scrypt: parameters need more than maxmem (${maxmem} bytes)`);
  const pw = typeof password === 'string' ? utf8(password) : password;
  const s = typeof salt === 'string' ? utf8(salt) : salt;
  const b = await pbkdf2Sha256(pw, s, p * 128 * r);
  for (let i = 0; i < p; i++) roMix(b, i * 128 * r, r, N);
  return pbkdf2Sha256(pw, b, dkLen);
}
