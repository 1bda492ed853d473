import { describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import {
  contentHash,
  decrypt,
  DecryptionError,
  decryptFileName,
  decryptText,
  importPublicKey,
  signedMessage,
  verify,
} from '../src/index.js';
import { paidItem, projectKeys, record, seal, signedText, streamItem } from './helpers.js';

const PID = 42;
const keys = projectKeys();
const other = projectKeys();
const fields = { slug: 'banner_v2', type: 'html', mode: 'inject', target_path: '#footer' };

describe('decrypt (docs/decisions.md#injectables)', () => {
  it('opens text payloads from every item form: record, stream item (encrypted_content), has-paid item (content), bare base64', async () => {
    const secret = 'pässwörd-☃';
    const text = '<b>héllo ☃ 𝄞</b>\n"quoted"\ttab';
    const r = record(keys, PID, fields, text, secret);
    for (const item of [r, streamItem(r), paidItem(r), r.content]) {
      expect(await decryptText(item, secret)).toBe(text);
      expect(Buffer.from(await decrypt(item, secret)).equals(Buffer.from(text, 'utf8'))).toBe(true);
    }
  });

  it('opens binary and empty payloads, and a secret given as bytes', async () => {
    const bytes = Buffer.concat([Buffer.from([0, 1, 2, 255, 254, 0]), randomBytes(5000)]);
    const blob = seal(bytes, 's3cret').toString('base64');
    expect(Buffer.from(await decrypt(blob, 's3cret')).equals(bytes)).toBe(true);
    expect(Buffer.from(await decrypt(blob, new TextEncoder().encode('s3cret'))).equals(bytes)).toBe(true);
    expect((await decrypt(seal('', 'x').toString('base64'), 'x')).length).toBe(0);
  });

  it('decryptFileName opens file_path of a file injectable; null when there is none', async () => {
    const r = record(
      keys,
      PID,
      { slug: 'bundle', type: 'file', mode: 'write', target_path: 'assets/app.bin' },
      randomBytes(99),
      'k',
      'app-bündle.v2.bin',
    );
    expect(await decryptFileName(r, 'k')).toBe('app-bündle.v2.bin');
    expect(await decryptFileName(streamItem(r), 'k')).toBe('app-bündle.v2.bin');
    expect(await decryptFileName(record(keys, PID, fields, 'x', 'k'), 'k')).toBeNull();
  });

  it('wrong secret, tampering and non-LG1 input → DecryptionError', async () => {
    const blob = seal('payload', 'right');
    const b64 = blob.toString('base64');
    await expect(decrypt(b64, 'wrong')).rejects.toThrow(DecryptionError);
    await expect(decrypt(b64, 'wrong')).rejects.toThrow(/wrong secret/);
    for (const at of [3, 20, 35, blob.length - 1]) {
      const bad = Buffer.from(blob);
      bad[at] ^= 1;
      await expect(decrypt(bad.toString('base64'), 'right')).rejects.toThrow(DecryptionError);
    }
    const noMagic = Buffer.from(blob);
    noMagic[0] = 0x58;
    await expect(decrypt(noMagic.toString('base64'), 'right')).rejects.toThrow(/Not an LG1/);
    await expect(decrypt(blob.subarray(0, 40).toString('base64'), 'right')).rejects.toThrow(/Not an LG1/);
    await expect(decrypt('!!!not base64', 'right')).rejects.toThrow(DecryptionError);
    await expect(decrypt({ slug: 'x' }, 'right')).rejects.toThrow(/no encrypted content/);
  });
});

describe('verify (docs/decisions.md#injectables, Ed25519 via WebCrypto)', () => {
  const r = record(keys, PID, fields, 'hello', 'k');

  it('accepts every form of the public key and every item form carrying a signature', async () => {
    for (const key of [
      keys.raw,
      keys.pem,
      { public_key: keys.raw },
      { public_key_pem: keys.pem },
      { algorithm: 'Ed25519', public_key: keys.raw, public_key_pem: keys.pem },
      new Uint8Array(Buffer.from(keys.raw, 'base64')),
      Buffer.from(keys.pem.replace(/-----[^-]+-----|\s/g, ''), 'base64').toString('base64'),
    ]) {
      expect(await verify(r, key, PID)).toBe(true);
      expect(await verify(streamItem(r), key, PID)).toBe(true);
      expect(await verify(streamItem(r), key, String(PID))).toBe(true);
    }
  });

  it('computes content_hash from the blob for stream items, and signs exactly the SPEC text', async () => {
    expect(await contentHash(streamItem(r))).toBe(r.content_hash);
    expect(await contentHash(r.content)).toBe(
      createHash('sha256').update(Buffer.from(r.content, 'base64')).digest('hex'),
    );
    expect(signedMessage(PID, r, r.content_hash)).toBe(signedText(PID, fields, r.content_hash));
    expect(signedMessage(7, { slug: 's', type: 't', mode: 'm', target_path: null }, 'h')).toBe(
      'LG1-SIG\n7\ns\nt\nm\n\nh',
    );
  });

  it('target_path null is signed as the empty string', async () => {
    const n = record(keys, PID, { ...fields, target_path: null }, 'x', 'k');
    expect(await verify(n, keys.raw, PID)).toBe(true);
    expect(await verify({ ...streamItem(n), target_path: '' }, keys.raw, PID)).toBe(true);
  });

  it('false for any change to a signed field, the project, the key, the blob or the hash', async () => {
    const s = streamItem(r);
    expect(await verify(r, other.raw, PID)).toBe(false);
    expect(await verify(r, keys.raw, PID + 1)).toBe(false);
    for (const change of [
      { slug: 'banner_v3' },
      { type: 'script' },
      { mode: 'write' },
      { target_path: '#header' },
      { target_path: null },
    ]) {
      expect(await verify({ ...s, ...change }, keys.raw, PID)).toBe(false);
    }
    // a different blob (re-sealed same payload) no longer matches the signed hash
    expect(
      await verify({ ...s, encrypted_content: seal('hello', 'k').toString('base64') }, keys.raw, PID),
    ).toBe(false);
    // content_hash present but not the blob's hash → false, even though the signature covers the claimed hash
    const forged = record(keys, PID, fields, 'x', 'k');
    expect(
      await verify({ ...forged, content: r.content, encrypted_content: r.encrypted_content }, keys.raw, PID),
    ).toBe(false);
    expect(await verify({ ...r, content_hash: '0'.repeat(64) }, keys.raw, PID)).toBe(false);
    // signature problems
    const sig = Buffer.from(r.signature, 'base64');
    sig[0] ^= 1;
    expect(await verify({ ...s, signature: sig.toString('base64') }, keys.raw, PID)).toBe(false);
    expect(await verify({ ...s, signature: sig.subarray(1).toString('base64') }, keys.raw, PID)).toBe(false);
    expect(await verify({ ...s, signature: 'not base64!' }, keys.raw, PID)).toBe(false);
    expect(await verify({ ...s, signature: null }, keys.raw, PID)).toBe(false);
    // has-paid items carry no signature
    expect(await verify(paidItem(r), keys.raw, PID)).toBe(false);
    expect(await verify({ ...paidItem(r), signature: r.signature }, keys.raw, PID)).toBe(true);
    expect(await verify({ slug: 'x', signature: r.signature }, keys.raw, PID)).toBe(false);
    expect(await verify({ ...s, encrypted_content: '%%%' }, keys.raw, PID)).toBe(false);
  });

  it('throws on a key that is not an Ed25519 public key', async () => {
    await expect(importPublicKey('AAAA')).rejects.toThrow(/not an Ed25519/);
    await expect(
      importPublicKey('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'),
    ).rejects.toThrow(TypeError);
    await expect(importPublicKey({})).rejects.toThrow(TypeError);
    await expect(verify(r, 'AAAA', PID)).rejects.toThrow(TypeError);
  });
});
