import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, sign } from 'node:crypto';
import { openSecret, sealSecret } from './crypto.js';

/** A fresh Ed25519 pair for a project: the public key as SPKI PEM, the private key sealed with APP_KEY. */
export function newSigningKeyPair(appKey: Buffer): { publicPem: string; sealedPrivate: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    sealedPrivate: sealSecret(appKey, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
  };
}

/** The raw 32-byte Ed25519 public key, base64 (what WebCrypto's importKey('raw') takes). */
export function rawPublicKey(publicPem: string): string {
  const der = createPublicKey(publicPem).export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32).toString('base64');
}

export function openPrivateKey(appKey: Buffer, sealed: string): KeyObject {
  return createPrivateKey(openSecret(appKey, sealed));
}

export function signEd25519(key: KeyObject, message: string): string {
  return sign(null, Buffer.from(message, 'utf8'), key).toString('base64');
}
