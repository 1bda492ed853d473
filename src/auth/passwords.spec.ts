import { describe, expect, it, jest } from '@jest/globals';
import { hashPassword } from './passwords.js';

// The Argon2 addon cannot be loaded: a binary built for another libc, a broken install. This
// repository's transform does not hoist jest.mock above the imports: the mock is in place in time
// because passwords.ts loads the addon at the first password, not when it is imported.
let mockLoads = 0;
jest.mock('@node-rs/argon2', () => {
  mockLoads++;
  throw new Error('Cannot find native binding');
});

describe('passwords when the Argon2 addon cannot be loaded', () => {
  it('fail as themselves, and the addon is loaded again at the next password', async () => {
    for (let attempt = 1; attempt <= 2; attempt++) {
      await expect(hashPassword('correct horse battery staple')).rejects.toThrow(
        'Cannot find native binding',
      );
      expect(mockLoads).toBe(attempt);
    }
  });
});
