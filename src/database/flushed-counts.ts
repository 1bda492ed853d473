import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { sqlDatetime } from '../common/time.js';
import { isCommitOutcomeUnknown, isUniqueViolation } from './db-errors.js';
import { UnitOfWork } from './unit-of-work.js';

/** usage_flushes rows only matter until their flush is settled; a day is ample, pruned every 10 minutes. */
const FLUSH_IDS_KEPT_MS = 24 * 3600_000;
const PRUNE_IDS_EVERY_MS = 600_000;

/** Counts taken from `pending` for one flush, under the id that makes sending them again harmless. */
interface FlushBatch {
  id: string;
  counts: Array<[string, number]>;
}

/**
 * Counts taken in memory (a Map increment per call) and added to the database in flushes, exactly once
 * whatever the database does (docs/architecture.md#counters-usage-and-activations):
 *
 * - each flush runs in one unit of work that first inserts its id into usage_flushes, then `write`s
 *   the counts (the caller's upserts, adding to what other instances wrote);
 * - a flush that certainly did not commit puts its counts back, to go with the next one;
 * - a flush whose COMMIT went unanswered may or may not be stored: it is sent again under the same
 *   id before anything else, and the id, found already there, tells that it landed.
 *
 * Used by the usage counts (gate/usage-flush.ts) and the runtime answers' analytics
 * (analytics/analytics-counts.service.ts).
 */
export class FlushedCounts {
  private readonly pending = new Map<string, number>();
  /** A batch whose COMMIT got no answer: it may be stored or not, until sent again. */
  private unsettled: FlushBatch | null = null;
  private prunedIds = 0;

  constructor(
    private readonly unit: UnitOfWork,
    /** Adds `counts` (key → n) to the database, inside the flush's unit of work. */
    private readonly write: (manager: EntityManager, counts: Array<[string, number]>) => Promise<void>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The hot path: one Map increment. */
  add(key: string, n = 1): void {
    this.pending.set(key, (this.pending.get(key) ?? 0) + n);
  }

  /** Counts waiting to be written (an unanswered flush's included). */
  get size(): number {
    return this.pending.size + (this.unsettled?.counts.length ?? 0);
  }

  /**
   * Writes what was counted: the unanswered flush first (under its own id), then the rest. Rejects
   * when the database did not take it; the counts are kept for the next flush either way.
   */
  async flush(): Promise<void> {
    if (this.unsettled) {
      await this.send(this.unsettled);
      this.unsettled = null;
    }
    if (this.pending.size === 0) return;
    const batch: FlushBatch = { id: randomUUID(), counts: [...this.pending] };
    this.pending.clear();
    await this.send(batch);
  }

  private async send(batch: FlushBatch): Promise<void> {
    try {
      await this.unit.run(async (manager) => {
        try {
          await manager.query('INSERT INTO usage_flushes (id, created_at) VALUES (?, ?)', [
            batch.id,
            sqlDatetime(this.now()),
          ]);
        } catch (error) {
          // Sent before, and its COMMIT did land: nothing more to write.
          if (isUniqueViolation(error)) return;
          throw error;
        }
        await this.write(manager, batch.counts);
        if (this.now() - this.prunedIds > PRUNE_IDS_EVERY_MS) {
          await manager.query('DELETE FROM usage_flushes WHERE created_at < ?', [
            sqlDatetime(this.now() - FLUSH_IDS_KEPT_MS),
          ]);
          this.prunedIds = this.now();
        }
      });
    } catch (error) {
      if (isCommitOutcomeUnknown(error)) {
        this.unsettled = batch;
      } else if (batch !== this.unsettled) {
        // Certainly not written (the transaction never committed): back with the counts taken since.
        for (const [key, n] of batch.counts) this.add(key, n);
      }
      throw error;
    }
  }
}
