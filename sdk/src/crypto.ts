/**
 * The LG1 format (docs/api.md in the repository, "Injectables: payload format") on the client: decrypting blobs and verifying Ed25519
 * signatures with WebCrypto only.
 *
 *   blob         = "LG1" ‖ salt(16) ‖ iv(12) ‖ tag(16) ‖ ciphertext
 *   key          = scrypt(secret_utf8, salt, 32, N=16384, r=8, p=1);  AES-256-GCM
 *   content_hash = hex(SHA-256(blob))
 *   signature    = Ed25519 over "LG1-SIG\n" + project_id + "\n" + slug + "\n" + type + "\n" + mode + "\n" + (target_path ?? "") + "\n" + content_hash
 */
import { fromBase64, toHex } from './base64.js';
import { DecryptionError } from './errors.js';
import { LG1_SCRYPT, scrypt } from './scrypt.js';
import type { SealedItem, SigningKey } from './types.js';
import { fromUtf8, KeyHandle, subtle, utf8 } from './webcrypto.js';

const MAGIC = [0x4c, 0x47, 0x31]; // "LG1"
const SALT = 16;
const IV = 12;
const TAG = 16;
const HEADER = MAGIC.length + SALT + IV + TAG;
/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

/** The base64 blob of an item: `encrypted_content` (stream, full record) or `content` (has-paid item), or a bare string. */
function blobText(item: SealedItem | string): string | null {
  if (typeof item === 'string') return item;
  return item.encrypted_content ?? item.content ?? null;
}

function decodeBlob(b64: string): Uint8Array {
  let blob: Uint8Array;
  try {
    blob = fromBase64(b64);
  } catch (err) {
    throw new DecryptionError('Not an LG1 payload: invalid base64.', { cause: err });
  }
  if (blob.length < HEADER || MAGIC.some((b, i) => blob[i] !== b))
    throw new DecryptionError('Not an LG1 payload.');
  return blob;
}

/** Decrypts one LG1 blob given as base64. */
export async function decryptBlob(b64: string, secret: string | Uint8Array): Promise<Uint8Array> {
  const blob = decodeBlob(b64);
  const salt = blob.subarray(3, 3 + SALT);
  const iv = blob.subarray(3 + SALT, 3 + SALT + IV);
  const tag = blob.subarray(3 + SALT + IV, HEADER);
  const ciphertext = blob.subarray(HEADER);
  const keyBytes = await scrypt(secret, salt, 32, LG1_SCRYPT);
  // WebCrypto takes ciphertext ‖ tag.
  const sealed = new Uint8Array(ciphertext.length + TAG);
  sealed.set(ciphertext, 0);
  sealed.set(tag, ciphertext.length);
  const s = subtle();
  const key = await s.importKey('raw', keyBytes, { name: 'AES-GCM' }, false, ['decrypt']);
  try {
    return new Uint8Array(await s.decrypt({ name: 'AES-GCM', iv, tagLength: 128 }, key, sealed));
  } catch (err) {
    throw new DecryptionError('Could not decrypt the payload: wrong secret or tampered data.', {
      cause: err,
    });
  }
}

/**
 * Decrypts an injectable's payload (`encrypted_content`, else `content`) with its secret.
 * Throws `DecryptionError` on a wrong secret, a tampered blob or anything that is not an LG1 blob.
 */
export async function decrypt(item: SealedItem | string, secret: string | Uint8Array): Promise<Uint8Array> {
  const b64 = blobText(item);
  if (b64 === null) throw new DecryptionError('The item carries no encrypted content.');
  return decryptBlob(b64, secret);
}

/** `decrypt()` as UTF-8 text (for snippet, html, script and style injectables). */
export async function decryptText(item: SealedItem | string, secret: string | Uint8Array): Promise<string> {
  return fromUtf8(await decrypt(item, secret));
}

/** The original file name of a `file` injectable (its encrypted `file_path`); null when the item has none. */
export async function decryptFileName(item: SealedItem, secret: string | Uint8Array): Promise<string | null> {
  if (item.file_path === null || item.file_path === undefined) return null;
  return fromUtf8(await decryptBlob(item.file_path, secret));
}

/** Lowercase hex SHA-256 of bytes. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await subtle().digest('SHA-256', bytes)));
}

/** The `content_hash` of an item computed from its blob (stream items do not carry one). */
export async function contentHash(item: SealedItem | string): Promise<string> {
  const b64 = blobText(item);
  if (b64 === null) throw new DecryptionError('The item carries no encrypted content.');
  return sha256Hex(fromBase64(b64));
}

/** The exact text the signature covers. */
export function signedMessage(projectId: number | string, item: SealedItem, hash: string): string {
  return `LG1-SIG\n${projectId}\n${item.slug ?? ''}\n${item.type ?? ''}\n${item.mode ?? ''}\n${item.target_path ?? ''}\n${hash}`;
}

/** A project's public key in any of its forms. */
export type PublicKeyInput = string | Uint8Array | SigningKey;

function pemBody(pem: string): Uint8Array {
  const m = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/.exec(pem);
  if (!m) throw new TypeError('Public key: expected a "PUBLIC KEY" PEM block.');
  return fromBase64(m[1]);
}

const startsWith = (bytes: Uint8Array, prefix: number[]) =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);

/** Imports an Ed25519 public key: PEM (SPKI), base64 of the raw 32 bytes or of the SPKI DER, raw bytes, or a signing-key object. */
export async function importPublicKey(input: PublicKeyInput): Promise<KeyHandle> {
  let format: 'raw' | 'spki';
  let bytes: Uint8Array;
  if (typeof input === 'string' || input instanceof Uint8Array) {
    bytes =
      typeof input === 'string'
        ? input.includes('-----BEGIN')
          ? pemBody(input)
          : fromBase64(input.trim())
        : input;
  } else if (input && typeof input.public_key === 'string') {
    bytes = fromBase64(input.public_key);
  } else if (input && typeof input.public_key_pem === 'string') {
    bytes = pemBody(input.public_key_pem);
  } else {
    throw new TypeError(
      'Public key: pass the PEM, the base64 public_key, raw bytes or the signing-key object.',
    );
  }
  if (bytes.length === 32) format = 'raw';
  else if (bytes.length === 44 && startsWith(bytes, ED25519_SPKI_PREFIX)) format = 'spki';
  else throw new TypeError('Public key: not an Ed25519 public key.');
  try {
    return await subtle().importKey(format, bytes, { name: 'Ed25519' }, false, ['verify']);
  } catch (err) {
    if ((err as { name?: string })?.name === 'NotSupportedError') {
      throw new Error(
        "This runtime's WebCrypto does not support Ed25519 (needs Node >= 20, Chrome/Edge >= 137, Firefox >= 129, Safari >= 17).",
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * Verifies an injectable's Ed25519 signature with the project's public key. `projectId` is the id
 * of the injectable's project (stream items do not carry it). Resolves false when the signature
 * does not match, when the item has no signature, or when its `content_hash` (if present) is not
 * the SHA-256 of its blob. Throws only for an unusable public key or a runtime without Ed25519.
 */
export async function verify(
  item: SealedItem,
  publicKey: PublicKeyInput,
  projectId: number | string,
): Promise<boolean> {
  const key = await importPublicKey(publicKey);
  const b64 = blobText(item);
  if (b64 === null || typeof item.signature !== 'string') return false;
  let blob: Uint8Array;
  let signature: Uint8Array;
  try {
    blob = fromBase64(b64);
    signature = fromBase64(item.signature);
  } catch {
    return false;
  }
  if (signature.length !== 64) return false;
  const hash = await sha256Hex(blob);
  if (item.content_hash !== undefined && item.content_hash !== null && item.content_hash !== hash)
    return false;
  return subtle().verify({ name: 'Ed25519' }, key, signature, utf8(signedMessage(projectId, item, hash)));
}
