import { describe, expect, it } from '@jest/globals';
import { randomBytes, scryptSync } from 'node:crypto';
import { fromHex, LG1_SCRYPT, scrypt, toHex } from '../src/index.js';

const hex = (s: string) => s.replace(/\s+/g, '');

describe('scrypt (RFC 7914, from @noble/hashes)', () => {
  it('runs on the WebCrypto of this runtime', () => {
    expect(typeof globalThis.crypto?.subtle?.deriveBits).toBe('function');
  });

  // RFC 7914 §12 test vectors (the 1 GiB N=1048576 one is left out).
  const vectors: Array<{ P: string; S: string; N: number; r: number; p: number; dk: string }> = [
    {
      P: '',
      S: '',
      N: 16,
      r: 1,
      p: 1,
      dk: `77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42
           fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06`,
    },
    {
      P: 'password',
      S: 'NaCl',
      N: 1024,
      r: 8,
      p: 16,
      dk: `fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62
           2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40`,
    },
    {
      P: 'pleaseletmein',
      S: 'SodiumChloride',
      N: 16384,
      r: 8,
      p: 1,
      dk: `70 23 bd cb 3a fd 73 48 46 1c 06 cd 81 fd 38 eb fd a8 fb ba 90 4f 8e 3e a9 b5 43 f6 54 5d a1 f2
           d5 43 29 55 61 3f 0f cf 62 d4 97 05 24 2a 9a f9 e6 1e 85 dc 0d 65 1e 40 df cf 01 7b 45 57 58 87`,
    },
  ];

  it.each(vectors)('RFC 7914 vector P=$P S=$S N=$N r=$r p=$p', async ({ P, S, N, r, p, dk }) => {
    const want = hex(dk);
    // The vectors as written, and node:crypto agreeing with them.
    expect(scryptSync(P, S, 64, { N, r, p, maxmem: 256 * 1024 * 1024 }).toString('hex')).toBe(want);
    expect(toHex(await scrypt(P, S, 64, { N, r, p }))).toBe(want);
    expect(
      toHex(await scrypt(new TextEncoder().encode(P), new TextEncoder().encode(S), 64, { N, r, p })),
    ).toBe(want);
  });

  it('matches node:crypto scryptSync on random inputs and parameter sets', async () => {
    const cases = [
      { N: 2, r: 1, p: 1, dkLen: 1 },
      { N: 16, r: 1, p: 1, dkLen: 32 },
      { N: 32, r: 2, p: 3, dkLen: 33 },
      { N: 64, r: 3, p: 2, dkLen: 100 },
      { N: 256, r: 8, p: 1, dkLen: 32 },
      { N: 1024, r: 4, p: 1, dkLen: 65 },
      { N: 16384, r: 8, p: 1, dkLen: 32 },
    ];
    for (const c of cases) {
      for (let i = 0; i < 3; i++) {
        const password = randomBytes(i * 17);
        const salt = randomBytes(16);
        const want = scryptSync(password, salt, c.dkLen, { N: c.N, r: c.r, p: c.p }).toString('hex');
        const got = toHex(
          await scrypt(new Uint8Array(password), new Uint8Array(salt), c.dkLen, { N: c.N, r: c.r, p: c.p }),
        );
        expect({ ...c, got }).toEqual({ ...c, got: want });
      }
    }
  });

  it('takes a string password as UTF-8 and defaults to the LG1 parameters', async () => {
    const secret = 'pässwörd ☃ 𝄞';
    const salt = randomBytes(16);
    const want = scryptSync(Buffer.from(secret, 'utf8'), salt, 32, { N: 16384, r: 8, p: 1 }).toString('hex');
    expect(LG1_SCRYPT).toEqual({ N: 16384, r: 8, p: 1 });
    expect(toHex(await scrypt(secret, new Uint8Array(salt), 32))).toBe(want);
    // a salt that is a view into a larger buffer
    const big = new Uint8Array(64);
    big.set(salt, 7);
    expect(toHex(await scrypt(secret, big.subarray(7, 23), 32))).toBe(want);
  });

  it('refuses bad parameters', async () => {
    await expect(scrypt('a', 'b', 32, { N: 1000, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(scrypt('a', 'b', 32, { N: 1, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(scrypt('a', 'b', 32, { N: 16, r: 0, p: 1 })).rejects.toThrow(RangeError);
    await expect(scrypt('a', 'b', 32, { N: 16, r: 1, p: 0 })).rejects.toThrow(RangeError);
    await expect(scrypt('a', 'b', 0, { N: 16, r: 1, p: 1 })).rejects.toThrow(RangeError);
    await expect(scrypt('a', 'b', 32, { N: 2 ** 20, r: 8, p: 1 })).rejects.toThrow(/maxmem/);
    expect(fromHex('00ff')).toEqual(new Uint8Array([0, 255]));
  });
});
