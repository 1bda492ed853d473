import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ValidationFailed } from '../common/http/errors.js';
import type { AppConfig } from '../config/app-config.js';
import type { ProjectsService } from '../projects/projects.service.js';
import { AnswerSigner } from './answer-signer.js';
import { AnswerSigning, answerText, INVALID_NONCE } from './answer-signing.js';
import { waitFor } from '../../test/utils/wait.js';

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const NONCE = 'n0nce-n0nce_n0nce-16';
const KEY = '0b5f7c1e-1111-4222-8333-444455556666';

/** A request and a response with just what AnswerSigning touches; `ended` records each write. */
function exchange(headers: Record<string, string>) {
  const req = {
    method: 'POST',
    url: '/api/v1/project/has-paid?include=token',
    headers: { 'x-license-key': KEY, ...headers },
  } as unknown as IncomingMessage;
  const sent: Record<string, string> = {};
  const ended: unknown[][] = [];
  const state = {
    headersSent: false,
    setHeader: (name: string, value: string) => void (sent[name] = value),
    end: (...args: unknown[]) => {
      ended.push(args);
      state.headersSent = true;
      return state;
    },
  };
  const res = state as unknown as ServerResponse;
  return { req, res, sent, ended };
}

const signer = new AnswerSigner();
const signing = () => new AnswerSigning({} as ProjectsService, {} as AppConfig, signer);
/** Until the answer is written: the signature is made on AnswerSigner's thread, which a busy machine makes slow. */
const written = (ended: unknown[][]) =>
  waitFor(() => ended.length > 0, 5000, 'the signed answer to be written');

describe('AnswerSigning', () => {
  afterAll(() => signer.onApplicationShutdown());

  it('leaves a request without a nonce alone, and refuses a malformed one with 422 on nonce', () => {
    const { req, res } = exchange({});
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared by identity, never called
    const end = res.end;
    expect(signing().arm(req, res)).toBeNull();
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared by identity, never called
    expect(res.end).toBe(end);
    for (const nonce of ['short', 'x'.repeat(129), `${'x'.repeat(16)}+`]) {
      const bad = exchange({ 'x-service-nonce': nonce });
      let thrown: unknown;
      try {
        signing().arm(bad.req, bad.res);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ValidationFailed);
      expect((thrown as ValidationFailed).errors).toEqual({ nonce: [INVALID_NONCE] });
    }
  });

  it('writes an answer unsigned, at once, while no key is bound (no project known)', () => {
    const { req, res, sent, ended } = exchange({ 'x-service-nonce': NONCE });
    signing().arm(req, res);
    res.end('{"status":"error"}');
    expect(ended).toEqual([['{"status":"error"}']]);
    expect(sent).toEqual({});
  });

  it('signs the bytes end() writes, off the event loop, then writes them once', async () => {
    await signer.implementation(); // the thread is up: before it is, signatures are made on the loop
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const { req, res, sent, ended } = exchange({
      'x-service-nonce': NONCE,
      'x-service-domain': 'Shop.Example.com',
    });
    const pending = signing().arm(req, res);
    (pending as { key: unknown }).key = privateKey;
    const body = '{"status":"success","data":{"has_paid":true,"note":"☃"}}';
    res.end(body, 'utf8');
    res.end('a second answer'); // ignored: one is already on its way
    expect(ended).toEqual([]);
    await written(ended);
    expect(ended).toEqual([[body, 'utf8']]);
    expect(sent['X-Service-Date']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const text = answerText(
      sent['X-Service-Date'],
      NONCE,
      'POST',
      '/api/v1/project/has-paid?include=token',
      sha256(KEY),
      'Shop.Example.com',
      sha256(body),
    );
    expect(text).toBe(
      `LG1-ANSWER\n${sent['X-Service-Date']}\n${NONCE}\nPOST /api/v1/project/has-paid?include=token\n${sha256(KEY)}\nShop.Example.com\n${sha256(body)}`,
    );
    expect(
      verify(
        null,
        Buffer.from(text),
        createPublicKey(publicKey.export({ format: 'pem', type: 'spki' })),
        Buffer.from(sent['X-Service-Signature'].slice(3), 'base64'),
      ),
    ).toBe(true);
  });

  it('signs a Buffer body as its bytes, and an end() without a body as empty', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    for (const [chunk, bytes] of [
      [Buffer.from([0x7b, 0x7d]), '{}'],
      [undefined, ''],
    ] as const) {
      const { req, res, sent, ended } = exchange({ 'x-service-nonce': NONCE });
      (signing().arm(req, res) as { key: unknown }).key = privateKey;
      res.end(chunk);
      await written(ended);
      const text = answerText(
        sent['X-Service-Date'],
        NONCE,
        'POST',
        '/api/v1/project/has-paid?include=token',
        sha256(KEY),
        '',
        sha256(bytes),
      );
      expect(
        verify(
          null,
          Buffer.from(text),
          publicKey,
          Buffer.from(sent['X-Service-Signature'].slice(3), 'base64'),
        ),
      ).toBe(true);
    }
  });
});
