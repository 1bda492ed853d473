import type { KeyObject } from 'node:crypto';
import type { SignBatch, SignedBatch, SignerThreadData, ThreadMessage } from './answer-signer.js' with {
  'resolution-mode': 'import',
};

/*
 * The signing thread of AnswerSigner (answer-signer.ts). Signs each batch's texts in order with the
 * keys the batch names and answers with the signatures, 64 bytes each, in one transferred buffer.
 * libsodium signs in about 60 % of OpenSSL's time here (docs/benchmarks.md#signed-answers); where its
 * prebuilt addon does not load, node:crypto signs instead. Both make the same bytes: Ed25519
 * signatures are deterministic.
 *
 * CommonJS, unlike the rest of the service: a thread started on an ES module loads Node's module
 * loader for it, a few MB of memory for the life of the process (docs/benchmarks.md#signed-answers).
 */

/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, see above */
const { sign } = require('node:crypto') as typeof import('node:crypto');
const threads = require('node:worker_threads') as typeof import('node:worker_threads');

type Sodium = typeof import('sodium-native');

function loadSodium(): Sodium | null {
  if ((threads.workerData as SignerThreadData | undefined)?.implementation === 'node:crypto') return null;
  try {
    return require('sodium-native') as Sodium;
  } catch {
    return null;
  }
}
/* eslint-enable @typescript-eslint/no-require-imports */

const sodium = loadSodium();
/**
 * Key id → libsodium's 64-byte secret key, or the KeyObject node:crypto signs with, or null for a key
 * that is no Ed25519 private key (its texts come back failed, for the event loop to sign or refuse).
 */
const keys = new Map<number, Buffer | KeyObject | null>();

/** An Ed25519 private key's PKCS#8 DER: a fixed 16-byte header, then the 32-byte seed. */
const SEED_AT = 16;

function secretKey(key: KeyObject): Buffer | KeyObject | null {
  if (key.type !== 'private' || key.asymmetricKeyType !== 'ed25519') return null;
  if (sodium === null) return key;
  const der = key.export({ format: 'der', type: 'pkcs8' });
  const secret = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  try {
    const seed = der.subarray(SEED_AT, SEED_AT + sodium.crypto_sign_SEEDBYTES);
    sodium.crypto_sign_seed_keypair(Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES), secret, seed);
  } finally {
    sodium.sodium_memzero(der);
  }
  return secret;
}

function forgetKey(id: number): void {
  const key = keys.get(id);
  if (Buffer.isBuffer(key)) (sodium as Sodium).sodium_memzero(key);
  keys.delete(id);
}

function signInto(signature: Buffer, text: string, key: Buffer | KeyObject): void {
  const message = Buffer.from(text, 'utf8');
  if (Buffer.isBuffer(key)) (sodium as Sodium).crypto_sign_detached(signature, message, key);
  else signature.set(sign(null, message, key));
}

const port = threads.parentPort;
if (port === null) throw new Error('answer-signer.thread.cjs runs as a worker thread of AnswerSigner.');
port.postMessage({ ready: sodium === null ? 'node:crypto' : 'libsodium' } satisfies ThreadMessage);
port.on('message', (batch: SignBatch) => {
  for (const id of batch.forget) forgetKey(id);
  for (const [id, key] of batch.add) {
    try {
      keys.set(id, secretKey(key));
    } catch {
      keys.set(id, null);
    }
  }
  const signatures = Buffer.alloc(batch.texts.length * 64);
  const failed: number[] = [];
  for (let i = 0; i < batch.texts.length; i++) {
    const key = keys.get(batch.keyIds[i]);
    try {
      if (!key) throw new Error(`No key ${batch.keyIds[i]} to sign with`);
      signInto(signatures.subarray(i * 64, i * 64 + 64), batch.texts[i], key);
    } catch {
      failed.push(i);
    }
  }
  // Buffer.alloc gives the signatures an ArrayBuffer of their own (never the shared pool's) to transfer.
  const signed: SignedBatch = { seq: batch.seq, signatures: signatures.buffer, failed, keys: keys.size };
  port.postMessage(signed satisfies ThreadMessage, [signatures.buffer]);
});
