import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { generateKeyPairSync, KeyObject, sign, verify } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnswerSigner, AnswerSignerOptions } from './answer-signer.js';

const keys = Array.from({ length: 3 }, () => generateKeyPairSync('ed25519').privateKey);
const texts = Array.from({ length: 23 }, (_, i) => `LG1-ANSWER\n${i}\n☃ ${'x'.repeat(i * 7)}`);

/** Every text signed by `signer` with keys in turn: the signatures, in the order asked for. */
function signAll(signer: AnswerSigner, useKeys: KeyObject[] = keys): Promise<Buffer[]> {
  return Promise.all(
    texts.map(
      (text, i) =>
        new Promise<Buffer>((resolve, reject) =>
          signer.sign(useKeys[i % useKeys.length], text, (error, signature) =>
            error ? reject(error) : resolve(signature as Buffer),
          ),
        ),
    ),
  );
}

/** What node:crypto signs on the spot: Ed25519 is deterministic, so every signer must give these bytes. */
const expected = (useKeys: KeyObject[] = keys) =>
  texts.map((text, i) => sign(null, Buffer.from(text, 'utf8'), useKeys[i % useKeys.length]));

/** libsodium ships prebuilt for this platform (linux-x64 in CI): the thread must use it here. */
const sodiumHere = existsSync(
  join('node_modules/sodium-native/prebuilds', `${process.platform}-${process.arch}`),
);

describe('AnswerSigner', () => {
  const signers: AnswerSigner[] = [];
  const make = (options: AnswerSignerOptions = {}) => {
    const signer = new AnswerSigner(options);
    signers.push(signer);
    return signer;
  };
  afterEach(async () => {
    await Promise.all(signers.splice(0).map((signer) => signer.onApplicationShutdown()));
    jest.restoreAllMocks();
  });

  it('signs on its thread with libsodium, the same bytes as node:crypto, in batches and in order', async () => {
    const signer = make();
    expect(await signer.implementation()).toBe(sodiumHere ? 'libsodium' : 'node:crypto');
    const signatures = await signAll(signer);
    expect(signatures).toEqual(expected());
    expect(signer.onLoop).toBe(0);
    // Answered on a later turn: the event loop does not wait for the signature.
    let called = false;
    signer.sign(keys[0], 'later', () => void (called = true));
    expect(called).toBe(false);
  });

  it('signs with node:crypto on the thread where libsodium is not used', async () => {
    const signer = make({ thread: { implementation: 'node:crypto' } });
    expect(await signer.implementation()).toBe('node:crypto');
    expect(await signAll(signer)).toEqual(expected());
    expect(signer.onLoop).toBe(0);
  });

  it('signs on the event loop until the thread is ready: the first answers do not wait for it', async () => {
    const signer = make();
    let signature: Buffer | null = null;
    signer.sign(keys[0], texts[0], (_error, signed) => void (signature = signed));
    expect(signature).toEqual(expected()[0]);
    expect(signer.onLoop).toBe(1);
    await signer.implementation();
  });

  it('keeps at most maxKeys keys on the thread and sends a forgotten key again when it is used', async () => {
    const signer = make({ maxKeys: 4 });
    await signer.implementation();
    const many = Array.from({ length: 7 }, () => generateKeyPairSync('ed25519').privateKey);
    // 7 keys over 23 texts: every batch adds keys the thread was just told to forget.
    expect(await signAll(signer, many)).toEqual(expected(many));
    expect(signer.threadKeys).toBe(4);
    expect(await signAll(signer, many.slice(0, 1))).toEqual(expected(many.slice(0, 1)));
    expect(signer.threadKeys).toBe(4);
    expect(signer.onLoop).toBe(0);
  });

  it('leaves a key that is no Ed25519 private key to node:crypto on the loop: its signature or its error', async () => {
    const signer = make();
    await signer.implementation();
    const ecdsa = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const x25519 = generateKeyPairSync('x25519').privateKey;
    const results = await Promise.all(
      [ecdsa, x25519, keys[0]].map(
        (key) =>
          new Promise<Error | Buffer | null>((resolve) =>
            signer.sign(key, texts[1], (error, signature) => resolve(error ?? signature)),
          ),
      ),
    );
    expect(verify('sha256', Buffer.from(texts[1]), ecdsa, results[0] as Buffer)).toBe(true);
    let refused: unknown; // what node:crypto says of an X25519 key
    try {
      sign(null, Buffer.from(texts[1]), x25519);
    } catch (error) {
      refused = error;
    }
    expect((results[1] as Error).message).toBe((refused as Error).message);
    expect(results[2]).toEqual(sign(null, Buffer.from(texts[1]), keys[0]));
    expect(signer.onLoop).toBe(2); // the Ed25519 one was signed on the thread
  });

  it('gives each callback its own answer: one that throws is logged and costs only itself', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const signer = make();
    await signer.implementation();
    const got: Buffer[] = [];
    await new Promise<void>((resolve) => {
      signer.sign(keys[0], texts[0], () => {
        throw new Error('the socket is gone');
      });
      signer.sign(keys[0], texts[1], (_e, signature) => void got.push(signature as Buffer));
      signer.sign(keys[0], texts[2], (_e, signature) => {
        got.push(signature as Buffer);
        resolve();
      });
    });
    expect(got).toEqual([texts[1], texts[2]].map((text) => sign(null, Buffer.from(text), keys[0])));
    expect(error).toHaveBeenCalledTimes(1);
    expect(error.mock.calls[0][1]).toBe('A signed answer could not be written');
  });

  it('signs what a failed thread held on the event loop, and everything after it, and says so once', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const signer = make();
    await signer.implementation();
    const pending = signAll(signer);
    await (signer as unknown as { thread: { terminate(): Promise<number> } }).thread.terminate();
    expect(await pending).toEqual(expected());
    expect(await signAll(signer)).toEqual(expected());
    expect(signer.onLoop).toBeGreaterThanOrEqual(texts.length);
    expect((signer as unknown as { thread: unknown }).thread).toBeNull();
    expect(error).toHaveBeenCalledTimes(1);
    expect(error.mock.calls[0][1]).toBe('The signing thread failed: signing on the event loop from now on.');
  });

  it('signs on the event loop when the thread cannot start, with the reason logged', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const dir = mkdtempSync(join(tmpdir(), 'lg-signer-'));
    const broken = join(dir, 'thread.mjs');
    writeFileSync(broken, 'throw new Error("no thread today");\n');
    const failing = make({ file: broken });
    expect(await failing.implementation()).toBe('event loop');
    expect(await signAll(failing)).toEqual(expected());
    expect(error).toHaveBeenCalledTimes(1);
    expect((error.mock.calls[0][0] as { err: Error }).err.message).toBe('no thread today');

    const missing = make({ file: join(dir, 'absent.js') });
    expect(await missing.implementation()).toBe('event loop');
    expect(await signAll(missing)).toEqual(expected());
    expect(warn).toHaveBeenCalledWith(
      `No signing thread at ${join(dir, 'absent.js')}: signing on the event loop.`,
    );
  });

  it('stops trusting a thread that answers a batch out of turn, and signs on the event loop', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const dir = mkdtempSync(join(tmpdir(), 'lg-signer-'));
    const liar = join(dir, 'thread.cjs');
    writeFileSync(
      liar,
      [
        "const { parentPort } = require('node:worker_threads');",
        "parentPort.postMessage({ ready: 'node:crypto' });",
        "parentPort.on('message', (b) => parentPort.postMessage({ seq: b.seq + 1, signatures: new ArrayBuffer(b.texts.length * 64), failed: [], keys: 0 }));",
      ].join('\n'),
    );
    const signer = make({ file: liar, thread: { implementation: 'node:crypto' } });
    expect(await signer.implementation()).toBe('node:crypto');
    expect(await signAll(signer)).toEqual(expected());
    expect(signer.onLoop).toBe(texts.length);
    expect(error).toHaveBeenCalledTimes(1);
    expect((error.mock.calls[0][0] as { err: Error }).err.message).toBe(
      'The signing thread answered batch 2 out of turn',
    );
  });

  it('signs on the event loop what a thread that stopped answering holds, after 2 s', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const dir = mkdtempSync(join(tmpdir(), 'lg-signer-'));
    const stuck = join(dir, 'thread.cjs');
    writeFileSync(
      stuck,
      "const { parentPort } = require('node:worker_threads');\nparentPort.postMessage({ ready: 'node:crypto' });\nparentPort.on('message', () => {});\n",
    );
    const signer = make({ file: stuck, thread: { implementation: 'node:crypto' } });
    expect(await signer.implementation()).toBe('node:crypto');
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const signed = signAll(signer);
      jest.advanceTimersByTime(1999);
      expect(signer.onLoop).toBe(0);
      jest.advanceTimersByTime(1);
      expect(await signed).toEqual(expected());
    } finally {
      jest.useRealTimers();
    }
    expect(signer.onLoop).toBe(texts.length);
    expect((error.mock.calls[0][0] as { err: Error }).err.message).toBe(
      'The signing thread did not answer batch 1 within 2000 ms',
    );
  });

  it('starts no thread once shut down', async () => {
    const signer = make();
    await signer.onApplicationShutdown();
    expect(await signer.implementation()).toBe('event loop');
    expect((signer as unknown as { thread: unknown }).thread).toBeNull();
  });

  it('stops its thread on shutdown and signs on the event loop after it', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const signer = make();
    await signer.implementation();
    await signer.onApplicationShutdown();
    expect((signer as unknown as { thread: unknown }).thread).toBeNull();
    expect(await signAll(signer)).toEqual(expected());
    expect(error).not.toHaveBeenCalled();
  });
});
