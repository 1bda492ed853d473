/*! Bundles @noble/hashes (scrypt, pbkdf2, sha2): The MIT License, Copyright (c) 2022 Paul Miller (https://paulmillr.com) */
/**
 * scrypt (RFC 7914), which WebCrypto lacks: @noble/hashes's audited implementation, inlined into
 * dist/ by the build (sdk/scripts/build.mjs) so that the SDK installs with no dependency. This
 * module keeps the SDK's contract around it: the LG1 parameters, a string taken as UTF-8, and
 * RangeErrors for parameters out of range. With the LG1 parameters (N = 16384, r = 8, p = 1) a call
 * needs 16 MiB and roughly 0.1–0.3 s on the calling thread.
 */
import { scrypt as nobleScrypt } from '@noble/hashes/scrypt.js';
import { utf8 } from './webcrypto.js';

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

/**
 * scrypt(password, salt, N, r, p, dkLen). A string password is taken as its UTF-8 bytes.
 * Matches node:crypto `scryptSync(password, salt, dkLen, { N, r, p })`.
 */
// eslint-disable-next-line @typescript-eslint/require-await -- async so that bad parameters reject, as callers await them
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
  return nobleScrypt(pw, s, { N, r, p, dkLen, maxmem });
}
