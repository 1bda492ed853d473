import { Logger } from '@nestjs/common';

export interface PeriodicTaskOptions {
  /** Names the task in its log lines: "could not <name>: …", "<name> works again". */
  name: string;
  logger: Logger;
  everyMs: number;
  /** Delay before the first run (default: everyMs). */
  firstAfterMs?: number;
  run: () => Promise<void>;
  /**
   * The first failure's line as [fields, message], and the recovery's, where the defaults above say
   * less than the task knows (a database failure's codes, say).
   */
  lines?: { failing: (error: unknown) => [object, string]; recovered: string };
}

/**
 * One periodic job of the process (flushes, dispatcher, schedulers, pruning), owning what each of
 * them needs alike: one run at a time, a run asked for while one is under way runs once right after
 * it, the first failure logged and then the recovery (not a line per tick while a dependency is
 * away), and a stop that waits for the run under way. Timers are unref'd: they never keep the process up.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private failing = false;

  constructor(private readonly options: PeriodicTaskOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(this.options.firstAfterMs ?? this.options.everyMs);
  }

  /**
   * Runs the task now, or once more right after the run under way; resolves when a run that began
   * after this call has ended. Never rejects: failures are logged.
   */
  runNow(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running.then(() => this.running ?? undefined);
    }
    this.running = this.loop();
    return this.running;
  }

  /** Stops the timer and waits for the run under way; a later runNow() still works (final flushes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        clearTimeout(this.timer);
        try {
          await this.options.run();
          if (this.failing)
            this.options.logger.log(this.options.lines?.recovered ?? `${this.options.name} works again`);
          this.failing = false;
        } catch (error) {
          if (!this.failing) this.options.logger.warn(...this.failureLine(error));
          this.failing = true;
        }
      } while (this.again);
    } finally {
      this.running = null;
      if (!this.stopped) this.schedule(this.options.everyMs);
    }
  }

  private failureLine(error: unknown): [unknown, ...unknown[]] {
    if (this.options.lines) return this.options.lines.failing(error);
    return [`could not ${this.options.name}: ${error instanceof Error ? error.message : String(error)}`];
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.runNow(), ms);
    this.timer.unref();
  }
}
