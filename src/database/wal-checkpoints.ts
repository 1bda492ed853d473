import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
  Optional,
} from '@nestjs/common';
import { existsSync, statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DataSource } from 'typeorm';
import { JOBS } from '../common/jobs.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { builtFile } from '../common/built-file.js';

/** What the checkpointing thread is started with: the SQLite file. */
export interface CheckpointThreadData {
  file: string;
}

/** The thread's answer to each checkpoint asked for: SQLite's, in WAL frames (a page each). */
export interface CheckpointAnswer {
  log: number;
  checkpointed: number;
}

export const WAL_CHECKPOINT_OPTIONS = Symbol('WalCheckpointOptions');

export interface WalCheckpointOptions {
  /** The compiled thread (default: beside the running build); null leaves checkpoints to SQLite. */
  file?: string | null;
}

/**
 * SQLite's own bound, which the service's connection kept before: a checkpoint inside the COMMIT that
 * takes the WAL past this many frames. The fallback returns to it.
 */
const SQLITE_AUTOCHECKPOINT = 1000;
/**
 * A checkpoint is asked for after this many COMMITs of units (and by the periodic job): each one
 * copies what the commits since the last one wrote, a few hundred frames under the bench's load.
 */
export const COMMITS_PER_CHECKPOINT = 16;
/**
 * The WAL starts again from its beginning only when a checkpoint has copied all of it before the next
 * write; under a stream of writes with no pause the thread's checkpoints keep finishing just behind
 * them. So the WAL file is measured after each COMMIT of units, and one past this many pages (16 MB at
 * 4 KiB) is checkpointed on the service's own connection, which copies what the thread has not yet:
 * the next write starts the WAL again, and cuts the file back to this size (journal_size_limit).
 */
export const WAL_PAGES_LIMIT = 4000;
/**
 * A checkpoint still unanswered after this many COMMITs (or periodic runs) means the thread is stuck
 * or far behind: the service's connection goes back to SQLite's own checkpoints for good.
 */
export const UNANSWERED_LIMIT = { commits: 1000, runs: 10 };
const THREAD_FILE = 'wal-checkpoints.thread.cjs';
/** The thread holds one connection and a statement: small heaps are plenty. */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8 };

/** The compiled thread beside the running build (common/built-file.ts). */
export const threadFile = (entry?: string): string => builtFile('database', THREAD_FILE, entry);

interface Sqlite {
  name: string;
  memory: boolean;
  pragma(sql: string, options?: { simple: boolean }): unknown;
}

/**
 * SQLite's WAL checkpoints, off the event loop (docs/architecture.md#units-of-work).
 *
 * SQLite checkpoints on its own inside the COMMIT that takes the WAL past 1000 frames: the event loop
 * copies the pages into the database file and syncs it, which doubled a COMMIT's average time and
 * made the slowest ones (docs/benchmarks.md). Here the service's connection checkpoints never on its
 * own (`wal_autocheckpoint = 0`); a thread with a connection of its own runs PASSIVE checkpoints
 * instead, asked for every COMMITS_PER_CHECKPOINT commits of units and by a periodic job.
 *
 * The WAL stays bounded whatever the thread does: past WAL_PAGES_LIMIT the service's connection
 * checkpoints itself, and a thread that fails, exits or stops answering hands checkpoints back
 * to SQLite on that connection for good. Nothing of this runs for MySQL/MariaDB or `:memory:`.
 */
@Injectable()
export class WalCheckpoints implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WalCheckpoints');
  private readonly file: string | null;
  private db: Sqlite | null = null;
  private wal = { file: '', limitBytes: 0 };
  private thread: Worker | null = null;
  /** 'thread' while the thread checkpoints; 'sqlite' when SQLite does (MySQL, `:memory:`, no thread, fallback). */
  state: 'thread' | 'sqlite' = 'sqlite';
  /** Whether a checkpoint was asked for and not yet answered. */
  private asked = false;
  /** COMMITs since the last checkpoint was asked for; while one is unanswered, since it was. */
  private commits = 0;
  /** Periodic runs while a checkpoint is unanswered. */
  private runs = 0;
  /** Checkpoints the thread ran, and those the service's connection ran past the limit. */
  readonly counts = { thread: 0, limit: 0 };
  private readonly periodic = new PeriodicTask({
    ...JOBS.walCheckpoints,
    logger: this.logger,
    run: () => Promise.resolve(this.periodicRun()),
  });

  constructor(
    private readonly dataSource: DataSource,
    @Optional() @Inject(WAL_CHECKPOINT_OPTIONS) private readonly options: WalCheckpointOptions = {},
  ) {
    this.file = options.file === undefined ? threadFile() : options.file;
  }

  onModuleInit(): void {
    if (this.dataSource.options.type !== 'better-sqlite3') return;
    const db = (this.dataSource.driver as unknown as { databaseConnection: Sqlite }).databaseConnection;
    if (db.memory || this.file === null) return;
    if (!existsSync(this.file)) {
      this.logger.warn(`No checkpointing thread at ${this.file}: SQLite checkpoints inside COMMITs.`);
      return;
    }
    this.db = db;
    this.wal = {
      file: `${db.name}-wal`,
      limitBytes: WAL_PAGES_LIMIT * Number(db.pragma('page_size', { simple: true })),
    };
    db.pragma(`journal_size_limit = ${this.wal.limitBytes}`);
    const thread = new Worker(this.file, {
      workerData: { file: db.name } satisfies CheckpointThreadData,
      resourceLimits: THREAD_LIMITS,
    });
    thread.unref(); // never keeps the process up
    this.thread = thread;
    this.state = 'thread';
    db.pragma('wal_autocheckpoint = 0');
    thread.on('message', () => this.answered());
    thread.on('error', (error) => this.fallBack(error));
    thread.on('exit', (code) =>
      this.fallBack(new Error(`The checkpointing thread exited with code ${code}`)),
    );
  }

  onApplicationBootstrap(): void {
    if (this.state === 'thread') this.periodic.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.periodic.stop();
    const thread = this.thread;
    if (thread === null) return;
    this.thread = null;
    this.state = 'sqlite'; // the exit that follows is no failure
    await thread.terminate(); // (better-sqlite3 closes the thread's connection as the thread ends)
  }

  /**
   * A COMMIT of units has landed (UnitOfWork), and no transaction is open: checkpoints here when the
   * WAL is past its limit, and asks the thread for a checkpoint every COMMITS_PER_CHECKPOINT commits.
   */
  committed(): void {
    if (this.state !== 'thread') return;
    try {
      if ((statSync(this.wal.file, { throwIfNoEntry: false })?.size ?? 0) > this.wal.limitBytes)
        this.checkpointHere();
      this.commits++;
      if (this.asked) {
        if (this.commits >= UNANSWERED_LIMIT.commits)
          this.fallBack(new Error(`The checkpointing thread has not answered in ${this.commits} commits`));
        return;
      }
      if (this.commits >= COMMITS_PER_CHECKPOINT) this.ask();
    } catch (error) {
      // (The WAL file could not be measured, or the thread not asked: the units committed all the same.)
      this.fallBack(error as Error);
    }
  }

  /**
   * Past the limit: copies what the thread's checkpoints have not (while one of them runs, this one
   * finds it busy and copies nothing; the next COMMIT tries again).
   */
  private checkpointHere(): void {
    this.counts.limit++;
    try {
      this.db?.pragma('wal_checkpoint(PASSIVE)');
    } catch (error) {
      this.logger.warn(
        { err: error },
        'A WAL checkpoint past the limit failed; the next COMMIT tries again.',
      );
    }
  }

  private periodicRun(): void {
    if (this.state !== 'thread') return;
    if (!this.asked) return this.ask();
    if (++this.runs >= UNANSWERED_LIMIT.runs)
      this.fallBack(new Error(`The checkpointing thread has not answered in ${this.runs} periodic runs`));
  }

  private ask(): void {
    this.asked = true;
    this.commits = 0;
    this.runs = 0;
    this.thread?.postMessage('checkpoint');
  }

  private answered(): void {
    if (this.state !== 'thread') return;
    this.asked = false;
    this.counts.thread++;
  }

  /** The thread failed, exited or fell behind: SQLite checkpoints inside COMMITs again, as it did before. */
  private fallBack(error: Error): void {
    if (this.state !== 'thread') return;
    this.state = 'sqlite';
    this.logger.error(
      { err: error },
      'The checkpointing thread failed: SQLite checkpoints inside COMMITs from now on.',
    );
    try {
      this.db?.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT}`);
    } catch {
      // The connection is closed already (the service is stopping): nothing to checkpoint any more.
    }
    void this.periodic.stop();
    void this.thread?.terminate();
    this.thread = null;
  }
}
