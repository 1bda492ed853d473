import { Clock } from '../../src/common/time.js';

/** A Clock that stands still until a test moves it. */
export class ManualClock extends Clock {
  constructor(private ms = Date.UTC(2026, 0, 15, 12, 0, 0)) {
    super();
  }

  override nowMs(): number {
    return this.ms;
  }

  set(at: Date | string): void {
    this.ms = new Date(at).getTime();
  }

  advance(ms: number): void {
    this.ms += ms;
  }
}
