import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { threadFile as checkpointThread } from '../database/wal-checkpoints.js';
import { threadFile as signingThread } from '../gate/answer-signer.js';
import { builtFile } from './built-file.js';

describe('builtFile', () => {
  it('is beside the running build when the process runs dist/src/main.js, as npm start does', () => {
    expect(builtFile('gate', 'x.cjs', '/srv/lg/dist/src/main.js')).toBe('/srv/lg/dist/src/gate/x.cjs');
  });

  it('is under ./dist when the process runs something else (the tests)', () => {
    expect(builtFile('gate', 'x.cjs', '/srv/lg/node_modules/.bin/jest')).toBe(resolve('dist/src/gate/x.cjs'));
  });

  it.each([
    ['the signing thread', signingThread],
    ['the checkpointing thread', checkpointThread],
  ])('finds %s where npm start looks for it', (_, threadFile) => {
    // The signing thread was once looked for under the folder its code had left (payments/): found
    // missing, every answer was signed on the event loop. The build the tests run has each file.
    expect(existsSync(threadFile(resolve('dist/src/main.js')))).toBe(true);
  });
});
