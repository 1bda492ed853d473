/** The payload format (docs/decisions.md#injectables) on the service side, with nothing but node:crypto: what the SDK must open. */
import { expect } from '@jest/globals';
import {
  createCipheriv,
  createHash,
  generateKeyPairSync,
  KeyObject,
  randomBytes,
  scryptSync,
  sign,
} from 'node:crypto';
import { LicenseGateError } from '../src/index.js';

/** blob = "LG1" ‖ salt(16) ‖ iv(12) ‖ tag(16) ‖ AES-256-GCM(scrypt(secret, salt, 32, N=16384, r=8, p=1), iv, payload) */
export function seal(payload: string | Buffer, secret: string): Buffer {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = scryptSync(Buffer.from(secret, 'utf8'), salt, 32, { N: 16384, r: 8, p: 1 });
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([
    cipher.update(typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload),
    cipher.final(),
  ]);
  return Buffer.concat([Buffer.from('LG1', 'latin1'), salt, iv, cipher.getAuthTag(), ciphertext]);
}

export interface ProjectKeys {
  privateKey: KeyObject;
  /** base64 of the raw 32 bytes, as `public_key` */
  raw: string;
  /** SPKI PEM, as `public_key_pem` */
  pem: string;
}

export function projectKeys(): ProjectKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return {
    privateKey,
    raw: der.subarray(12).toString('base64'),
    pem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

export interface Fields {
  slug: string;
  type: string;
  mode: string;
  target_path: string | null;
}

export function signedText(projectId: number, f: Fields, hash: string): string {
  return `LG1-SIG\n${projectId}\n${f.slug}\n${f.type}\n${f.mode}\n${f.target_path ?? ''}\n${hash}`;
}

/** A full management record (seed 2) for a payload, sealed and signed like the service does. */
export function record(
  keys: ProjectKeys,
  projectId: number,
  fields: Fields,
  payload: string | Buffer,
  secret: string,
  fileName?: string,
) {
  const blob = seal(payload, secret);
  const contentHash = createHash('sha256').update(blob).digest('hex');
  const signature = sign(
    null,
    Buffer.from(signedText(projectId, fields, contentHash), 'utf8'),
    keys.privateKey,
  ).toString('base64');
  const b64 = blob.toString('base64');
  return {
    id: 1,
    project_id: projectId,
    ...fields,
    title: null,
    validate_endpoint: null,
    content: b64,
    encrypted_content: b64,
    file_path: fileName === undefined ? null : seal(fileName, secret).toString('base64'),
    content_hash: contentHash,
    signature,
    is_active: true,
    only_if_paid: true,
    meta: {},
  };
}

/** The stream form (docs/decisions.md#injectables) of a record. */
export const streamItem = (r: ReturnType<typeof record>) => ({
  slug: r.slug,
  type: r.type,
  mode: r.mode,
  encrypted_content: r.encrypted_content,
  file_path: r.file_path,
  target_path: r.target_path,
  signature: r.signature,
  meta: r.meta,
});

/** The has-paid form (docs/api.md#runtime-checks) of a record: no signature, no hash. */
export const paidItem = (r: ReturnType<typeof record>) => ({
  id: r.id,
  slug: r.slug,
  title: r.title,
  type: r.type,
  mode: r.mode,
  target_path: r.target_path,
  content: r.content,
  file_path: r.file_path,
  is_active: r.is_active,
  only_if_paid: r.only_if_paid,
  meta: r.meta,
});

/** The LicenseGateError `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function caught(p: Promise<unknown>): Promise<LicenseGateError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(LicenseGateError);
    expect(err).toBeInstanceOf(Error);
    return err as LicenseGateError;
  }
  throw new Error('expected a LicenseGateError');
}
