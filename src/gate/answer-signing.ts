import { Injectable, Logger } from '@nestjs/common';
import { growingLru } from '../common/cache/growing-lru.js';
import { hash, KeyObject } from 'node:crypto';
import { AnswerSigner } from './answer-signer.js';
import { headerText } from './calling-domain.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SharedLoads } from '../common/cache/generation-cache.js';
import { openPrivateKey } from '../common/crypto/signing.js';
import { fieldError } from '../common/http/errors.js';
import { licenseKey } from '../common/http/license-key.js';
import { AppConfig } from '../config/app-config.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import { ProjectsService } from '../projects/projects.service.js';

export const NONCE_HEADER = 'X-Service-Nonce';
export const DATE_HEADER = 'X-Service-Date';
export const SIGNATURE_HEADER = 'X-Service-Signature';
export const INVALID_NONCE =
  'The X-Service-Nonce header must be 16 to 128 characters of letters, digits, "-" and "_".';

const NONCE = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * The text a signed answer's `X-Service-Signature` covers (docs/decisions.md#signed-answers-and-offline-tokens).
 * `keySha256` is the hex SHA-256 of the license key as sent, `domain` the X-Service-Domain header as
 * sent (or ''), `bodySha256` the hex SHA-256 of the answer's body bytes.
 */
export function answerText(
  date: string,
  nonce: string,
  method: string,
  target: string,
  keySha256: string,
  domain: string,
  bodySha256: string,
): string {
  return `LG1-ANSWER\n${date}\n${nonce}\n${method} ${target}\n${keySha256}\n${domain}\n${bodySha256}`;
}

/** A runtime request that asked for a signed answer; `key` is set once its license's project is known. */
export interface PendingSignature {
  nonce: string;
  key: KeyObject | null;
  /** end() was called and the answer waits for its signature. */
  ending?: true;
}

type End = ServerResponse['end'];
type RuntimeRequest = IncomingMessage & { originalUrl?: string };

/**
 * Signed answers on the runtime routes, and the projects' private keys as KeyObjects.
 *
 * LicenseKeyGuard calls `arm` on every runtime request (the guard is what makes a route a runtime
 * route, so a new one is signed by carrying `@LicenseKeyAuth()`): a request without X-Service-Nonce
 * costs nothing more; with one, the response's `end` is wrapped so that whatever body goes out
 * (success, refusal or error, on the fast path or through Express) is signed as written, once the
 * guard has read the license and bound its project's key (`bind`). Before that (no key, an unknown
 * key, the rate limit, a malformed nonce) no project is known and the answer goes unsigned.
 */
@Injectable()
export class AnswerSigning {
  /** Project id → its private key, opened once (keys never change; the public PEM is checked anyway). */
  private readonly keys = growingLru<number, { publicPem: string; key: KeyObject }>(10_000);
  private readonly loading = new SharedLoads<number, KeyObject>();
  private readonly logger = new Logger('AnswerSigning');
  private second = 0;
  private date = '';

  constructor(
    private readonly projects: ProjectsService,
    private readonly config: AppConfig,
    private readonly signer: AnswerSigner,
  ) {}

  /**
   * Null when the request sent no nonce; 422 on `nonce` when it is malformed. Otherwise the answer
   * will be signed once `bind` gives it a key.
   */
  arm(req: IncomingMessage, res: ServerResponse): PendingSignature | null {
    const sent = req.headers['x-service-nonce'];
    if (sent === undefined) return null;
    if (typeof sent !== 'string' || !NONCE.test(sent)) throw fieldError('nonce', INVALID_NONCE);
    const pending: PendingSignature = { nonce: sent, key: null };
    // eslint-disable-next-line @typescript-eslint/unbound-method -- wrapped below and called with the response as this
    const end = res.end as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
    const stamp = this.stamp.bind(this);
    res.end = function (this: ServerResponse, ...args: unknown[]) {
      if (pending.key === null || this.headersSent) return end.apply(this, args);
      if (pending.ending) return this; // the answer is already on its way
      pending.ending = true;
      stamp(req, this, pending, args[0], args[1], () => end.apply(this, args));
      return this;
    } as End;
    return pending;
  }

  /** Binds the project's key to a pending signature; a promise only the first time a project signs. */
  bind(pending: PendingSignature, project: ProjectEntity): void | Promise<void> {
    const known = this.keyOf(project);
    if (known instanceof KeyObject) pending.key = known;
    else return known.then((key) => void (pending.key = key));
  }

  /** The project's private key: at once when opened before, else a promise of it. */
  keyOf(project: Pick<ProjectEntity, 'id' | 'signing_public_key'>): KeyObject | Promise<KeyObject> {
    const cached = this.keys.get(project.id);
    if (cached && cached.publicPem === project.signing_public_key) return cached.key;
    return this.loading.run(project.id, () => this.load(project));
  }

  private async load(project: Pick<ProjectEntity, 'id' | 'signing_public_key'>): Promise<KeyObject> {
    const sealed = await this.projects.sealedSigningKey(project.id);
    if (sealed === null) throw new Error(`Project ${project.id} has no signing key to open`);
    const key = openPrivateKey(this.config.appKey, sealed);
    this.keys.set(project.id, { publicPem: project.signing_public_key, key });
    return key;
  }

  /**
   * Sets X-Service-Date and X-Service-Signature for the body about to be written, then `done()` writes
   * it. The Ed25519 signature, the one costly step of a signed answer, is made by AnswerSigner off the
   * event loop.
   */
  private stamp(
    req: RuntimeRequest,
    res: ServerResponse,
    pending: PendingSignature,
    chunk: unknown,
    encoding: unknown,
    done: () => void,
  ): void {
    // The bytes end() writes: a string in its encoding (UTF-8 unless told), bytes as they are, else none.
    let body: string | Uint8Array = '';
    if (typeof chunk === 'string')
      body =
        typeof encoding !== 'string' || encoding === 'utf8' || encoding === 'utf-8'
          ? chunk
          : Buffer.from(chunk, encoding as BufferEncoding);
    else if (chunk instanceof Uint8Array) body = chunk;
    const domain = req.headers['x-service-domain'];
    const date = this.now();
    const text = answerText(
      date,
      pending.nonce,
      req.method ?? '',
      req.originalUrl ?? req.url ?? '',
      (licenseKey(req as never) as { hash: string }).hash,
      // The name's text as the gate read it: what a client that sent it as UTF-8 (or latin1) signs.
      typeof domain === 'string' ? headerText(domain) : '',
      hash('sha256', body, 'hex'),
    );
    this.signer.sign(pending.key as KeyObject, text, (error, signature) => {
      // A key that cannot sign leaves the answer unsigned (a client then refuses it), never unanswered.
      try {
        if (!error && !res.headersSent) {
          res.setHeader(DATE_HEADER, date);
          res.setHeader(SIGNATURE_HEADER, `v1,${(signature as Buffer).toString('base64')}`);
        }
        done();
      } catch (writing) {
        // Nothing above this callback would catch it: the call ends here instead of the process.
        this.logger.error({ err: writing }, 'Could not write a signed answer');
        res.destroy();
      }
    });
  }

  /** The ISO-8601 UTC time in whole seconds, made once a second. */
  private now(): string {
    const ms = Date.now();
    const second = Math.floor(ms / 1000);
    if (second !== this.second) {
      this.second = second;
      this.date = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    }
    return this.date;
  }
}
