import { describe, expect, it } from '@jest/globals';
import { loadedWhenUsed } from './lazy-module.js';

describe('loadedWhenUsed', () => {
  it('loads at the first use only, once for callers that ask together', async () => {
    let loads = 0;
    const library = loadedWhenUsed(async () => ({ n: ++loads }));
    expect(loads).toBe(0);
    const [a, b] = await Promise.all([library(), library()]);
    expect(a).toBe(b);
    expect(await library()).toBe(a);
    expect(loads).toBe(1);
  });

  it('forgets a load that failed: the next use loads again', async () => {
    let loads = 0;
    const library = loadedWhenUsed(async () => {
      if (++loads === 1) throw new Error('Cannot find module');
      return 'loaded';
    });
    await expect(library()).rejects.toThrow('Cannot find module');
    expect(await library()).toBe('loaded');
    expect(await library()).toBe('loaded');
    expect(loads).toBe(2);
  });
});
