import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options.js';
import { UnitOfWork } from './unit-of-work.js';
import {
  COMMITS_PER_CHECKPOINT,
  UNANSWERED_LIMIT,
  WAL_PAGES_LIMIT,
  WalCheckpointOptions,
  WalCheckpoints,
} from './wal-checkpoints.js';

/** A row this size takes a few pages: every unit adds several frames to the WAL. */
const ROW = 'x'.repeat(16_000);
const PAGE = 4096;

describe('WalCheckpoints: SQLite checkpoints on a thread of their own, the WAL bounded', () => {
  const dirs: string[] = [];
  const opened: Array<{ ds: DataSource; checkpoints: WalCheckpoints }> = [];
  afterEach(async () => {
    for (const { ds, checkpoints } of opened.splice(0)) {
      await checkpoints.onApplicationShutdown();
      if (ds.isInitialized) await ds.destroy();
    }
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    jest.restoreAllMocks();
  });

  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'lg-wal-'));
    dirs.push(dir);
    return dir;
  };

  /** The service's database on a file: its connection, units of work, checkpoints. */
  async function open(file: string, options: WalCheckpointOptions = {}) {
    const ds = await new DataSource(dataSourceOptions(`sqlite:${file}`, { service: true })).initialize();
    await ds.query('CREATE TABLE IF NOT EXISTS notes (id integer PRIMARY KEY, text text NOT NULL)');
    const checkpoints = new WalCheckpoints(ds, options);
    checkpoints.onModuleInit();
    checkpoints.onApplicationBootstrap();
    const unit = new UnitOfWork(ds, checkpoints);
    unit.onModuleInit();
    opened.push({ ds, checkpoints });
    const sqlite = (
      ds.driver as unknown as { databaseConnection: { pragma(sql: string, o?: object): unknown } }
    ).databaseConnection;
    let largestWal = 0;
    let next = 1;
    /** `n` units one after the other, each a row of ROW; notes the WAL file's largest size meanwhile. */
    const write = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const id = next++;
        await unit.run((manager) => manager.query('INSERT INTO notes (id, text) VALUES (?, ?)', [id, ROW]));
        largestWal = Math.max(largestWal, statSync(`${file}-wal`).size);
      }
    };
    return {
      ds,
      checkpoints,
      write,
      largestWal: () => largestWal,
      autocheckpoint: () => sqlite.pragma('wal_autocheckpoint', { simple: true }),
    };
  }

  /** A stand-in for the thread: `body` runs on each message, with `parentPort` in scope. */
  function fakeThread(body: string): string {
    const file = join(tempDir(), 'thread.cjs');
    writeFileSync(
      file,
      `const { parentPort } = require('node:worker_threads');\nparentPort.on('message', () => { ${body} });\n`,
    );
    return file;
  }

  /** Resolves with the first error line WalCheckpoints logs. */
  const errorLogged = () => {
    const error = jest.spyOn(Logger.prototype, 'error');
    const first = new Promise<[{ err: Error }, string]>((resolve) =>
      error.mockImplementation((fields, message) => resolve([fields as { err: Error }, message as string])),
    );
    return { first, error };
  };

  /** Units that write far more than the limit: left alone, the WAL would hold all of it. */
  const UNITS = 5000;
  /**
   * The limit, plus what units write while a checkpoint of the thread runs (the connection's own
   * finds it busy and waits for the next COMMIT): in this tight loop, up to about a quarter of the limit.
   */
  const bound = 2 * WAL_PAGES_LIMIT * PAGE;
  /** The tests that write UNITS rows (some 80 MB): about 10 s on a quiet machine, far more beside other suites. */
  const HEAVY_MS = 120_000;

  it(
    'keeps the WAL under its limit while units write far more, and none of it is lost across a restart',
    async () => {
      const file = join(tempDir(), 'db.sqlite');
      const db = await open(file);
      expect(db.checkpoints.state).toBe('thread');
      expect(db.autocheckpoint()).toBe(0);
      await db.write(UNITS);
      expect(UNITS * ROW.length).toBeGreaterThan(2 * bound);
      // Whether the thread keeps up or the connection checkpoints past the limit depends on the machine's
      // timing (the next test forces the latter): either way the WAL stays bounded.
      expect(db.largestWal()).toBeLessThan(bound);
      expect(db.checkpoints.counts.thread).toBeGreaterThan(0);
      expect(db.checkpoints.state).toBe('thread');

      // Stopped as the service stops: the thread, then the connection (the last one removes the WAL).
      await db.checkpoints.onApplicationShutdown();
      expect(db.checkpoints.state).toBe('sqlite');
      await db.ds.destroy();
      expect(existsSync(`${file}-wal`)).toBe(false);
      const again = await open(file);
      expect(await again.ds.query('SELECT COUNT(*) AS n, MAX(id) AS last FROM notes')).toEqual([
        { n: UNITS, last: UNITS },
      ]);
    },
    HEAVY_MS,
  );

  it(
    'checkpoints on the service connection what the thread leaves past the limit',
    async () => {
      const file = join(tempDir(), 'db.sqlite');
      // A thread that answers at once, and copies nothing.
      const db = await open(file, {
        file: fakeThread('parentPort.postMessage({ log: 0, checkpointed: 0 });'),
      });
      await db.write(UNITS);
      expect(db.checkpoints.counts.limit).toBeGreaterThan(0);
      expect(db.largestWal()).toBeLessThan(bound);
      expect(db.checkpoints.state).toBe('thread');
      expect(db.autocheckpoint()).toBe(0);
    },
    HEAVY_MS,
  );

  it(
    'hands checkpoints back to SQLite for good when the thread fails, and says so once',
    async () => {
      const file = join(tempDir(), 'db.sqlite');
      const logged = errorLogged();
      const db = await open(file, { file: fakeThread("throw new Error('the disk is on fire');") });
      await db.write(COMMITS_PER_CHECKPOINT); // the thread is asked, and fails
      const [fields, message] = await logged.first;
      expect(message).toBe('The checkpointing thread failed: SQLite checkpoints inside COMMITs from now on.');
      expect(fields.err.message).toBe('the disk is on fire');
      expect(db.checkpoints.state).toBe('sqlite');
      expect(db.autocheckpoint()).toBe(1000);
      await db.write(UNITS);
      expect(db.largestWal()).toBeLessThan(bound);
      expect(logged.error).toHaveBeenCalledTimes(1);
      expect(await db.ds.query('SELECT COUNT(*) AS n FROM notes')).toEqual([
        { n: UNITS + COMMITS_PER_CHECKPOINT },
      ]);
    },
    HEAVY_MS,
  );

  it('hands checkpoints back to SQLite when the thread stops answering', async () => {
    const file = join(tempDir(), 'db.sqlite');
    const logged = errorLogged();
    const db = await open(file, { file: fakeThread('/* never answers */') });
    await db.write(COMMITS_PER_CHECKPOINT + UNANSWERED_LIMIT.commits - 1);
    expect(db.checkpoints.state).toBe('thread');
    await db.write(1);
    expect(db.checkpoints.state).toBe('sqlite');
    const [fields] = await logged.first;
    expect(fields.err.message).toBe(
      `The checkpointing thread has not answered in ${UNANSWERED_LIMIT.commits} commits`,
    );
    expect(db.autocheckpoint()).toBe(1000);
  });

  it('leaves checkpoints to SQLite without a thread to run them, and for :memory:', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const absent = join(tempDir(), 'absent.cjs');
    const db = await open(join(tempDir(), 'db.sqlite'), { file: absent });
    expect(db.checkpoints.state).toBe('sqlite');
    expect(db.autocheckpoint()).toBe(1000);
    expect(warn).toHaveBeenCalledWith(
      `No checkpointing thread at ${absent}: SQLite checkpoints inside COMMITs.`,
    );

    const memory = await new DataSource(dataSourceOptions('sqlite::memory:')).initialize();
    const checkpoints = new WalCheckpoints(memory);
    opened.push({ ds: memory, checkpoints });
    checkpoints.onModuleInit();
    expect(checkpoints.state).toBe('sqlite');
  });
});
