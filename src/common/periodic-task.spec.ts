import { Logger } from '@nestjs/common';
import { PeriodicTask } from './periodic-task.js';

function recordingLogger() {
  const lines: string[] = [];
  const logger = new Logger('test');
  jest.spyOn(logger, 'warn').mockImplementation((line: string) => void lines.push(`warn ${line}`));
  jest.spyOn(logger, 'log').mockImplementation((line: string) => void lines.push(`log ${line}`));
  return { logger, lines };
}

describe('PeriodicTask', () => {
  it('runs one at a time, and a run asked for during one runs once right after it', async () => {
    const { logger } = recordingLogger();
    let active = 0;
    let most = 0;
    let runs = 0;
    let release!: () => void;
    const task = new PeriodicTask({
      name: 'count',
      logger,
      everyMs: 60_000,
      run: async () => {
        active++;
        most = Math.max(most, active);
        runs++;
        if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
        active--;
      },
    });
    const first = task.runNow();
    const second = task.runNow();
    const third = task.runNow();
    release();
    await Promise.all([first, second, third]);
    expect(runs).toBe(2);
    expect(most).toBe(1);
  });

  it('logs the first failure, none while it keeps failing, then the recovery once', async () => {
    const { logger, lines } = recordingLogger();
    let fail = true;
    const task = new PeriodicTask({
      name: 'flush the counts',
      logger,
      everyMs: 60_000,
      run: () => (fail ? Promise.reject(new Error('database is away')) : Promise.resolve()),
    });
    await task.runNow();
    await task.runNow();
    await task.runNow();
    fail = false;
    await task.runNow();
    await task.runNow();
    expect(lines).toEqual([
      'warn could not flush the counts: database is away',
      'log flush the counts works again',
    ]);
  });

  it('logs its own lines for the failure and the recovery when it has them', async () => {
    const lines: unknown[][] = [];
    const logger = new Logger('test');
    jest.spyOn(logger, 'warn').mockImplementation((...line: unknown[]) => void lines.push(['warn', ...line]));
    jest.spyOn(logger, 'log').mockImplementation((...line: unknown[]) => void lines.push(['log', ...line]));
    let fail = true;
    const task = new PeriodicTask({
      name: 'send the notices',
      logger,
      everyMs: 60_000,
      run: () =>
        fail ? Promise.reject(Object.assign(new Error('gone'), { code: 'ECONNREFUSED' })) : Promise.resolve(),
      lines: {
        failing: (error) => [{ code: (error as { code: string }).code }, 'Notices failing; trying on'],
        recovered: 'Notices work again',
      },
    });
    await task.runNow();
    await task.runNow();
    fail = false;
    await task.runNow();
    expect(lines).toEqual([
      ['warn', { code: 'ECONNREFUSED' }, 'Notices failing; trying on'],
      ['log', 'Notices work again'],
    ]);
  });

  it('runs on its timer once started, and not after stop', async () => {
    jest.useFakeTimers();
    try {
      const { logger } = recordingLogger();
      let runs = 0;
      const task = new PeriodicTask({
        name: 'tick',
        logger,
        everyMs: 1000,
        firstAfterMs: 10,
        run: () => {
          runs++;
          return Promise.resolve();
        },
      });
      task.start();
      await jest.advanceTimersByTimeAsync(10);
      expect(runs).toBe(1);
      await jest.advanceTimersByTimeAsync(1000);
      expect(runs).toBe(2);
      await task.stop();
      await jest.advanceTimersByTimeAsync(5000);
      expect(runs).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
