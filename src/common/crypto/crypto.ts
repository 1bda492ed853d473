import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hash,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/** One-shot SHA-256 (crypto.hash: no Hash object per call, which matters on the runtime path). */
export const sha256Hex = (value: string | Buffer): string => hash('sha256', value, 'hex');

/** A key for one purpose, derived from APP_KEY so that no two uses share key material. */
export const deriveKey = (appKey: Buffer, purpose: string): Buffer =>
  Buffer.from(hkdfSync('sha256', appKey, Buffer.alloc(0), `licensegate:${purpose}`, 32));

const BOX_PREFIX = 'lgbox1:';

/** Encrypts a secret at rest with AES-256-GCM under a key derived from APP_KEY. */
export function sealSecret(appKey: Buffer, plaintext: string): string {
  const key = deriveKey(appKey, 'secret-box');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return BOX_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
}

export function openSecret(appKey: Buffer, sealed: string): string {
  if (!sealed.startsWith(BOX_PREFIX)) throw new Error('not a sealed secret');
  const raw = Buffer.from(sealed.slice(BOX_PREFIX.length), 'base64');
  const key = deriveKey(appKey, 'secret-box');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

export const hmac = (key: Buffer, value: string): Buffer => createHmac('sha256', key).update(value).digest();

export const safeEqual = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);
