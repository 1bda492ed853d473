import { Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { growingLru } from '../common/cache/growing-lru.js';
import { KeyObject, sign } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { builtFile } from '../common/built-file.js';

/** What signs: libsodium or node:crypto on the signing thread, or node:crypto on the event loop. */
export type SignerImplementation = 'libsodium' | 'node:crypto' | 'event loop';

/** One message to the signing thread: keys it has not seen, ids it may forget, then the texts. */
export interface SignBatch {
  /** Numbers the batches in order: the answer names the batch it answers. */
  seq: number;
  add: [number, KeyObject][];
  forget: number[];
  texts: string[];
  keyIds: number[];
}

/** The thread's answer to a batch: 64 bytes per text, in order; `failed` lists texts it could not sign. */
export interface SignedBatch {
  seq: number;
  signatures: ArrayBuffer;
  failed: number[];
  /** Keys the thread holds after this batch. */
  keys: number;
}

export type ThreadMessage = SignedBatch | { ready: Exclude<SignerImplementation, 'event loop'> };

export interface SignerThreadData {
  /** node:crypto even where libsodium loads (tests of the fallback). */
  implementation?: 'node:crypto';
}

export type Signed = (error: Error | null, signature: Buffer | null) => void;

export const ANSWER_SIGNER_OPTIONS = Symbol('AnswerSignerOptions');

export interface AnswerSignerOptions {
  /** The compiled thread (default: beside the running build); null signs on the event loop. */
  file?: string | null;
  thread?: SignerThreadData;
  /** Keys the thread holds at most (default 10 000, as many as AnswerSigning keeps open). */
  maxKeys?: number;
}

interface Job {
  key: KeyObject;
  text: string;
  done: Signed;
}

/**
 * Texts go to the thread in batches of this many, or fewer at the end of an event-loop turn.
 * Measured with the bench's signed pair: 4 gave the most answers a second (2 and 8 a few % fewer,
 * 16 about 5 % fewer): a batch's first answer waits for its last signature.
 */
const BATCH = 4;
/**
 * A batch takes the thread well under a millisecond; one unanswered this long means the thread is
 * stuck, and what it holds is signed on the loop rather than left hanging.
 */
const THREAD_DEADLINE_MS = 2000;
const THREAD_FILE = 'answer-signer.thread.cjs';
/**
 * The thread keeps little (a secret key per project signing, a batch at a time): small heaps hold its
 * memory to about 11 MB (docs/benchmarks.md#signed-answers). Should they ever be outgrown, the thread
 * stops and the event loop signs instead.
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 16 };

/** The compiled thread beside the running build (common/built-file.ts). */
export const threadFile = (entry?: string): string => builtFile('gate', THREAD_FILE, entry);

function signNow(job: Job, logger: Logger): void {
  let signature: Buffer;
  try {
    signature = sign(null, Buffer.from(job.text, 'utf8'), job.key);
  } catch (error) {
    return call(job, error as Error, logger);
  }
  call(job, signature, logger);
}

/** Hands a job its signature or error; a callback that throws costs only its own answer, logged. */
function call(job: Job, result: Buffer | Error, logger: Logger): void {
  try {
    if (result instanceof Error) job.done(result, null);
    else job.done(null, result);
  } catch (error) {
    logger.error({ err: error }, 'A signed answer could not be written');
  }
}

/**
 * The Ed25519 signatures of signed answers (AnswerSigning), made on a thread of their own.
 *
 * A signature is the one costly step of a signed answer: on the event loop it took as long as the
 * whole warm check, and through node:crypto's thread pool (a libuv job per signature) nearly twice
 * that. Here the texts of one event-loop turn go to one thread in a message or a few, and libsodium
 * signs them (docs/benchmarks.md#signed-answers). The event loop keeps only building the texts.
 *
 * The thread starts with the first signature; until it is ready, and for good if it ever fails,
 * signatures are made on the event loop instead: slower, never missing. A text the thread could not
 * sign is signed on the loop too, so an error reaches `done` only when the key itself cannot sign.
 */
@Injectable()
export class AnswerSigner implements OnApplicationShutdown {
  private readonly logger = new Logger('AnswerSigner');
  private readonly file: string | null;
  private thread: Worker | null = null;
  private state: 'idle' | 'starting' | 'ready' | 'gone' = 'idle';
  private ready: Promise<SignerImplementation> | null = null;
  private queued: Job[] = [];
  private readonly inFlight: { seq: number; jobs: Job[] }[] = [];
  private seq = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private flushScheduled = false;
  /** Ids the thread knows its keys by; a key leaving `sent` is forgotten by the thread with the next batch. */
  private readonly ids = new WeakMap<KeyObject, number>();
  private nextId = 1;
  private readonly sent: LRUCache<number, true>;
  private forget: number[] = [];
  /** Signatures made on the event loop so far (the thread not ready, failed, or unable to sign one). */
  onLoop = 0;
  /** Keys the thread said it held, with its last answer. */
  threadKeys = 0;

  constructor(@Optional() @Inject(ANSWER_SIGNER_OPTIONS) private readonly options: AnswerSignerOptions = {}) {
    this.file = options.file === undefined ? threadFile() : options.file;
    // At least a batch's worth: a key sent and pushed out by the next key of the same batch would stay
    // on the thread, which forgets before it adds.
    this.sent = growingLru<number, true>(Math.max(BATCH, options.maxKeys ?? 10_000), {
      dispose: (_, id) => void this.forget.push(id),
    });
  }

  /**
   * Signs `text` with `key` and calls `done` with the 64-byte signature: on a later turn of the loop
   * from the thread, at once when the event loop signs.
   */
  sign(key: KeyObject, text: string, done: Signed): void {
    const job = { key, text, done };
    if (this.state !== 'ready') {
      if (this.state === 'idle') void this.start();
      return this.signOnLoop(job);
    }
    this.queued.push(job);
    if (this.queued.length >= BATCH) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  /** What signs once the thread has started (or failed to): starts it if nothing has signed yet. */
  implementation(): Promise<SignerImplementation> {
    return this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    const thread = this.thread;
    this.gone(null);
    await thread?.terminate(); // gone() asked already; this waits for it
  }

  private start(): Promise<SignerImplementation> {
    if (this.ready) return this.ready;
    if (this.state === 'gone') return Promise.resolve('event loop'); // shut down before it ever started
    this.state = 'starting';
    this.ready = new Promise<SignerImplementation>((settle) => {
      if (this.file === null || !existsSync(this.file)) {
        if (this.file !== null)
          this.logger.warn(`No signing thread at ${this.file}: signing on the event loop.`);
        this.state = 'gone';
        return settle('event loop');
      }
      const thread = new Worker(this.file, {
        workerData: this.options.thread ?? {},
        resourceLimits: THREAD_LIMITS,
      });
      thread.unref(); // an idle signer never keeps the process up
      this.thread = thread;
      thread.on('message', (message: ThreadMessage) => {
        if ('ready' in message) {
          if (this.state === 'starting') this.state = 'ready';
          if (message.ready === 'node:crypto' && !this.options.thread?.implementation)
            this.logger.warn(
              'libsodium did not load: the signing thread signs with node:crypto, more slowly.',
            );
          return settle(message.ready);
        }
        this.settle(message);
      });
      thread.on('error', (error) => this.gone(error));
      thread.on('exit', (code) => {
        if (this.state !== 'gone') this.gone(new Error(`The signing thread exited with code ${code}`));
        settle('event loop');
      });
    });
    return this.ready;
  }

  private flush(): void {
    const jobs = this.queued;
    if (jobs.length === 0 || this.thread === null) return;
    this.queued = [];
    const batch: SignBatch = { seq: ++this.seq, add: [], forget: [], texts: [], keyIds: [] };
    for (const job of jobs) {
      let id = this.ids.get(job.key);
      if (id === undefined) this.ids.set(job.key, (id = this.nextId++));
      if (this.sent.get(id) === undefined) {
        this.sent.set(id, true);
        batch.add.push([id, job.key]);
      }
      batch.texts.push(job.text);
      batch.keyIds.push(id);
    }
    // Evicted ids go out after this batch's keys were added, and the thread forgets before it adds:
    // a key evicted and sent again in one batch stays known.
    batch.forget = this.forget;
    this.forget = [];
    try {
      this.thread.postMessage(batch);
    } catch (error) {
      this.queued = jobs; // signed on the loop by gone(), with the rest
      return this.gone(error as Error);
    }
    this.inFlight.push({ seq: batch.seq, jobs });
    if (this.watchdog === null) this.watch();
  }

  /** Gives up on the thread when the oldest batch in flight is still unanswered after the deadline. */
  private watch(): void {
    const waiting = this.inFlight[0]?.seq;
    if (waiting === undefined) return void (this.watchdog = null);
    this.watchdog = setTimeout(() => {
      if (this.inFlight[0]?.seq === waiting)
        this.gone(
          new Error(`The signing thread did not answer batch ${waiting} within ${THREAD_DEADLINE_MS} ms`),
        );
      else this.watch();
    }, THREAD_DEADLINE_MS);
    this.watchdog.unref();
  }

  private settle(signed: SignedBatch): void {
    const batch = this.inFlight[0];
    // Answers come in the order batches went; one that does not fit its batch means the thread
    // cannot be trusted to pair signatures with answers any more.
    if (batch?.seq !== signed.seq || signed.signatures.byteLength !== batch.jobs.length * 64)
      return this.gone(new Error(`The signing thread answered batch ${signed.seq} out of turn`));
    this.inFlight.shift();
    this.threadKeys = signed.keys;
    for (let i = 0; i < batch.jobs.length; i++) {
      if (signed.failed.includes(i)) this.signOnLoop(batch.jobs[i]);
      else call(batch.jobs[i], Buffer.from(signed.signatures, i * 64, 64), this.logger);
    }
  }

  private signOnLoop(job: Job): void {
    this.onLoop++;
    signNow(job, this.logger);
  }

  /** The thread is gone (shut down when `error` is null): what it still held is signed on the loop. */
  private gone(error: Error | null): void {
    if (this.state === 'gone') return;
    if (error)
      this.logger.error({ err: error }, 'The signing thread failed: signing on the event loop from now on.');
    this.state = 'gone';
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    void this.thread?.terminate();
    this.thread = null;
    const pending = [...this.inFlight.splice(0).flatMap((batch) => batch.jobs), ...this.queued.splice(0)];
    for (const job of pending) this.signOnLoop(job);
  }
}
