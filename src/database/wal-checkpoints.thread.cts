import type { CheckpointAnswer, CheckpointThreadData } from './wal-checkpoints.js' with {
  'resolution-mode': 'import',
};

/*
 * The checkpointing thread of WalCheckpoints (wal-checkpoints.ts): a connection of its own to the
 * service's SQLite file, on which it runs a PASSIVE checkpoint each time it is asked, and answers
 * with the WAL's size and how much of it the checkpoint moved into the database file
 * (docs/architecture.md#units-of-work). A PASSIVE checkpoint takes no lock that the service's
 * connection waits on: its writes go on meanwhile.
 *
 * CommonJS, as answer-signer.thread.cts is: a thread started on an ES module loads Node's module
 * loader for it, a few MB of memory for the life of the process.
 */

/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, see above */
const threads = require('node:worker_threads') as typeof import('node:worker_threads');
const Database = require('better-sqlite3') as new (
  file: string,
  options: { fileMustExist: boolean },
) => {
  pragma(sql: string): unknown;
  prepare(sql: string): { get(): { busy: number; log: number; checkpointed: number } };
};
/* eslint-enable @typescript-eslint/no-require-imports */

const port = threads.parentPort;
if (port === null) throw new Error('wal-checkpoints.thread.cjs runs as a worker thread of WalCheckpoints.');
const data = threads.workerData as CheckpointThreadData;

const db = new Database(data.file, { fileMustExist: true });
// The service's own durability: the WAL is synced before its pages are copied, the file after.
db.pragma('synchronous = NORMAL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

port.on('message', () => {
  const row = checkpoint.get();
  port.postMessage({ log: row.log, checkpointed: row.checkpointed } satisfies CheckpointAnswer);
});
