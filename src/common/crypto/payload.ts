import { createCipheriv, createHash, randomBytes, scrypt } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

/** The payload format's parameters (docs/decisions.md#injectables); a client needs nothing but its platform's standard crypto to undo them. */
export const PAYLOAD_MAGIC = Buffer.from('LG1', 'ascii');
export const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/** blob = "LG1" ‖ salt(16) ‖ iv(12) ‖ tag(16) ‖ AES-256-GCM(scrypt(secret, salt), iv, payload) */
export async function encryptPayload(secret: string, payload: Buffer): Promise<Buffer> {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = await scryptAsync(secret, salt, 32, SCRYPT);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(payload), cipher.final()]);
  return Buffer.concat([PAYLOAD_MAGIC, salt, iv, cipher.getAuthTag(), ciphertext]);
}

/** What the blob adds to the payload: "LG1", salt, iv and tag (AES-GCM's ciphertext is as long as its plaintext). */
const BLOB_OVERHEAD = PAYLOAD_MAGIC.length + 16 + 12 + 16;

/** The payload's size in bytes, from the length of its blob in base64 and that base64's last two characters. */
export function payloadSize(base64Length: number, tail: string): number {
  const padding = tail.endsWith('==') ? 2 : tail.endsWith('=') ? 1 : 0;
  return (base64Length / 4) * 3 - padding - BLOB_OVERHEAD;
}

export const contentHash = (blob: Buffer): string => createHash('sha256').update(blob).digest('hex');

/** The exact bytes the Ed25519 signature covers (docs/decisions.md#injectables). */
export function signedMessage(fields: {
  project_id: number;
  slug: string;
  type: string;
  mode: string;
  target_path: string | null;
  content_hash: string;
}): string {
  return [
    'LG1-SIG',
    String(fields.project_id),
    fields.slug,
    fields.type,
    fields.mode,
    fields.target_path ?? '',
    fields.content_hash,
  ].join('\n');
}
