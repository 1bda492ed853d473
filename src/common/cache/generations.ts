import { Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { DataSource, type EntityManager } from 'typeorm';
import { PeriodicTask } from '../periodic-task.js';
import { randomBytes } from 'node:crypto';
import { invalidationDelay } from '../../metrics/metrics.js';
import { RedisService, within } from './redis.js';

/*
 * Cache generations: how every cache of this service stays fresh (docs/architecture.md#caches-and-generations).
 *
 * Each project has a generation, a number that every write to the project (or to anything in it:
 * domains, licenses, injectables, activations, its webhook settings) bumps right after it commits. A
 * cached value that depends on a project's rows is kept together with the generation it was loaded
 * under, and served only while that generation is still the current one: the first read after a
 * write reloads.
 *
 * The one rule every cache follows: read the generation BEFORE the rows. A write that commits while
 * a load is under way bumps the generation after its commit; the load, which may have read the rows
 * from before the write, is then filed under a generation that is already stale and never served.
 * Reading the generation after the rows would file pre-write rows under the post-write generation.
 *
 * Who bumps: ProjectChanges.run(project, …) (project-changes/), once, after the commit of every change
 * it records (every write under /project/{project} goes through it, and so do the runtime's freed
 * activations), and also after a change that failed, in case its COMMIT landed unanswered; inside the
 * unit it also adds one to the project's change counter (recordChange). A new kind of write that goes
 * through it needs nothing more.
 *
 * Two kinds of generation, for two kinds of cache:
 *
 * - current(project), for caches in this process (the runtime lookups, payload pages, activations):
 *   answered from memory, without any I/O, so a warm runtime call touches neither the database nor
 *   Redis. Without Redis this process sees every write it makes itself at once, and another
 *   instance's within a second: it reads the change counters that every write bumps in its own
 *   transaction (UNSHARED_MAX_AGE_MS: 5 s at most, also while they cannot be read). With REDIS_URL, a bump is published on
 *   a Redis channel (INCR and PUBLISH in one script, after the commit) and every instance, subscribed
 *   on a connection of its own, bumps its copy when the message arrives: other instances see a write
 *   as soon as the message reaches them (docs/decisions.md#caching gives the bound we measure), the
 *   writing instance at once (it bumps its copy before publishing).
 *
 *   Pub/sub delivers at most once, so an instance trusts its copy only while it is sure it missed
 *   nothing: from the moment its subscription is confirmed, and while the connection answers. When
 *   the subscriber connection closes (Redis stopped, restarted, the connection was killed) current()
 *   answers null at once and callers read the database; when it is subscribed again every project
 *   starts a new generation (a floor above every number handed out before), so nothing cached before
 *   the gap is served after it. A ping on the subscriber connection every PING_MS proves it still
 *   delivers: Redis answers a ping after every message published before it, so while an answer is
 *   more than LEASE_MS late (a Redis that hangs without closing anything) nothing is trusted either,
 *   and once it comes every message before it has been applied. A bump this instance could not
 *   publish within BUMP_DEADLINE_MS (its command connection failed while the subscriber stayed up) is
 *   made good as soon as Redis answers it: it then publishes a message that makes every instance drop
 *   everything.
 *
 * - shared(project), for the management read cache, whose entries live in Redis and are shared by
 *   every instance (cache/read-cache.ts): the number Redis keeps (gen:<project>, plus a global epoch
 *   that is bumped after a failure), read with the cached value, one round trip each.
 */

/**
 * Without Redis no instance hears another's writes (several instances on one MySQL, or on one SQLite
 * file, the CLI beside the server). Every write to a project adds one to its `change_seq` in the
 * write's own transaction (ProjectGenerations.recordChange), and each instance reads the counters of
 * the projects it has cached something of every CHANGES_POLL_MS: a project whose counter moved starts
 * a new generation there. Nothing cached is served longer than this after a write another instance
 * committed: while the counters cannot be read (the database away), every project starts a new
 * generation this long after the last read that worked began (docs/security.md).
 */
export const UNSHARED_MAX_AGE_MS = 5000;
/** A project's change counter as the drivers give it (MySQL: a BIGINT comes as a string). */
type Counter = { change_seq: number | string };

/** Without Redis: how often the watched projects' change counters are read. */
const CHANGES_POLL_MS = 1000;
/** Projects whose counters one statement reads. */
const CHANGES_CHUNK = 500;
/** Projects watched at most; past it, every project starts a new generation and is watched afresh. */
const MAX_WATCHED = 100_000;

/** How often the subscriber connection is pinged, and how late its answer may be before nothing cached is trusted. */
const PING_MS = 100;
const LEASE_MS = 500;
/** How long a write waits, at most, for its bump to be published while the subscriber is up (and any call for Redis). */
const BUMP_DEADLINE_MS = 1000;

// One round trip: bump the shared number (gen:<project>, or gen:epoch after a failure) and tell every instance.
const INCR_AND_PUBLISH = `redis.call('INCR', KEYS[1]) return redis.call('PUBLISH', KEYS[2], ARGV[1])`;

@Injectable()
export class ProjectGenerations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ProjectGenerations');
  /** Stamps come from one clock: every change takes the next number, so none is ever handed out twice. */
  private clock = 0;
  /** Every project's generation is at least this; raised when what this process knew can no longer be trusted. */
  private floor = 0;
  private readonly changedAt = new Map<number, number>();
  /** Without Redis this process sees every write; with it, see `trust()`. */
  private trusted: boolean;
  private subscriber: Redis | null = null;
  private subscribed = false;
  /** When the unanswered ping on the subscriber connection was sent (0: none is). */
  private pingSentAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** A bump, or this instance's view of Redis, failed: make every instance drop everything at Redis's next answer. */
  private mustRecover = false;
  private recovering: Promise<void> | null = null;
  /** This instance's messages are told apart from the others' (it bumped its own copy already). */
  private readonly instance = randomBytes(6).toString('hex');
  private readonly channel: string;
  private firstTrust: () => void = () => undefined;
  /** Without Redis: when every project starts a new generation next (see UNSHARED_MAX_AGE_MS). */
  private readonly unshared: boolean;
  private rollAt = 0;
  /**
   * Without Redis: the projects this process has cached something of, each with its change_seq as
   * last read (undefined: not read yet).
   */
  private readonly watched = new Map<number, number | undefined>();
  /** Without Redis, and with a database to read (the app; not the unit tests): reads the change counters. */
  private readonly changes: PeriodicTask | null;
  /** When the change counters are read next (on the first call from then on). */
  private readAt = 0;
  /** The clock the age bound is kept on; tests move it. */
  now: () => number = Date.now;

  constructor(
    private readonly redis: RedisService,
    @Optional() private readonly dataSource?: DataSource,
  ) {
    this.trusted = redis.client === null;
    this.unshared = redis.client === null;
    this.channel = redis.key('generations');
    this.changes =
      this.unshared && dataSource
        ? new PeriodicTask({
            name: "read the projects' change counters",
            logger: this.logger,
            everyMs: CHANGES_POLL_MS, // never started: runNow() from unsharedCheck
            run: () => this.readChanges(),
          })
        : null;
  }

  /**
   * The project's generation as this process knows it, without waiting; null while it cannot be
   * trusted (with Redis: not subscribed, or the subscription silent for LEASE_MS). Null means: do not
   * serve from the cache, and do not keep what you load.
   */
  current(projectId: number): number | null {
    if (!this.trusted) return null;
    if (this.unshared) this.unsharedCheck(projectId);
    const changed = this.changedAt.get(projectId);
    return changed !== undefined && changed > this.floor ? changed : this.floor;
  }

  /**
   * Without Redis: what was loaded under a generation read more than UNSHARED_MAX_AGE_MS after the
   * last read of the change counters that worked began is stale (the generation was read before the
   * rows, so no entry outlives the bound, even while the counters cannot be read); and the counters
   * are read again when the last read is CHANGES_POLL_MS old. Driven by the calls and the clock they
   * read, not by a timer: nothing is served between calls, and tests move the clock. One clock read
   * per call, no I/O on the call itself.
   */
  private unsharedCheck(projectId: number): void {
    const now = this.now();
    if (now >= this.rollAt) {
      if (this.rollAt !== 0) this.forgetAll();
      this.rollAt = now + UNSHARED_MAX_AGE_MS;
    }
    if (!this.changes) return;
    if (!this.watched.has(projectId)) this.watch(projectId);
    if (now >= this.readAt) {
      this.readAt = now + CHANGES_POLL_MS;
      void this.changes.runNow();
    }
  }

  /**
   * A project seen for the first time: its counter is read at the next poll, and whatever was cached
   * of it before then starts a new generation there (its rows may predate that read).
   */
  private watch(projectId: number): void {
    if (this.watched.size >= MAX_WATCHED) {
      this.watched.clear();
      this.forgetAll();
    }
    this.watched.set(projectId, undefined);
  }

  /**
   * Without Redis: reads the project's change counter now when this process has not read it yet, and
   * starts the project a new generation. A load calls it before it reads the generation its rows go
   * under (GenerationCache, shared(), payments/runtime-lookup.service.ts): what it loads is then vouched for by this read, and
   * the next read of every counter does not take it for stale, as it must take anything cached of a
   * project before its counter was first read.
   */
  observe(projectId: number): Promise<void> | undefined {
    if (!this.changes || this.watched.get(projectId) !== undefined) return undefined;
    return this.firstRead(projectId);
  }

  private async firstRead(projectId: number): Promise<void> {
    const [row] = await (this.dataSource as DataSource).query<Counter[]>(
      'SELECT change_seq FROM projects WHERE id = ?',
      [projectId],
    );
    if (this.watched.get(projectId) !== undefined) return; // a read of every counter came first
    if (!this.watched.has(projectId)) this.watch(projectId);
    this.watched.set(projectId, row === undefined ? -1 : Number(row.change_seq));
    this.changedAt.set(projectId, ++this.clock);
  }

  /**
   * Reads the watched projects' change counters: a project whose counter moved since the last read
   * (or that is read for the first time, or is gone) starts a new generation. Every write committed
   * before the read began is then known, so nothing need be dropped for age until UNSHARED_MAX_AGE_MS
   * after it.
   */
  private async readChanges(): Promise<void> {
    const started = this.now();
    const ids = [...this.watched.keys()];
    for (let i = 0; i < ids.length; i += CHANGES_CHUNK) {
      const chunk = ids.slice(i, i + CHANGES_CHUNK);
      const rows = await (this.dataSource as DataSource).query<Array<Counter & { id: number | string }>>(
        `SELECT id, change_seq FROM projects WHERE id IN (${chunk.map(() => '?').join(', ')})`,
        chunk,
      );
      const read = new Map(rows.map((row) => [Number(row.id), Number(row.change_seq)]));
      for (const id of chunk) {
        if (!this.watched.has(id)) continue; // everything started over meanwhile
        const seq = read.get(id) ?? -1;
        if (this.watched.get(id) === seq) continue;
        this.watched.set(id, seq);
        this.changedAt.set(id, ++this.clock);
      }
    }
    this.rollAt = Math.max(this.rollAt, started + UNSHARED_MAX_AGE_MS);
  }

  /**
   * Records a write to the project in the write's own transaction (`manager`), before its commit:
   * instances without Redis learn of it from the counter (readChanges). Gives the counter's new value,
   * for bump() after the commit.
   */
  async recordChange(manager: EntityManager, projectId: number): Promise<number | undefined> {
    await manager.query('UPDATE projects SET change_seq = change_seq + 1 WHERE id = ?', [projectId]);
    if (!this.changes) return undefined;
    const [row] = await manager.query<Counter[]>('SELECT change_seq FROM projects WHERE id = ?', [projectId]);
    return row === undefined ? undefined : Number(row.change_seq);
  }

  /** The generation kept in Redis for caches that live there (cache/read-cache.ts); null when Redis does not answer. */
  async shared(projectId: number): Promise<string | null> {
    const client = this.redis.client;
    if (!client) {
      await this.observe(projectId);
      return String(this.current(projectId));
    }
    try {
      if (this.mustRecover) await this.recover(client);
      const [epoch, generation] = await within(
        BUMP_DEADLINE_MS,
        client.mget(this.redis.key('gen:epoch'), this.redis.key(`gen:${projectId}`)),
      );
      return `${epoch ?? 0}.${generation ?? 0}`;
    } catch {
      this.mustRecover = true;
      return null;
    }
  }

  /**
   * Call after a write to the project has committed (or may have); `seq`: its change counter as the
   * write left it (recordChange), so that this process's next read of the counters does not take its
   * own write for another's.
   */
  async bump(projectId: number, seq?: number): Promise<void> {
    this.changedAt.set(projectId, ++this.clock);
    if (seq !== undefined && this.watched.has(projectId)) this.watched.set(projectId, seq);
    const client = this.redis.client;
    // Without Redis, or when every instance is to drop everything as soon as Redis answers anyway.
    if (!client || this.mustRecover) return;
    const deadline = Date.now() + BUMP_DEADLINE_MS;
    for (;;) {
      try {
        const keys = [this.redis.key(`gen:${projectId}`), this.channel];
        await within(
          deadline - Date.now(),
          client.eval(INCR_AND_PUBLISH, 2, ...keys, `${this.instance} ${projectId} ${Date.now()}`),
        );
        return;
      } catch (error) {
        // Our subscriber is up, so others may be listening: their copies are stale until we are heard.
        // A command connection that dropped alone comes back within a few hundred ms.
        if (this.subscribed && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        this.mustRecover = true;
        this.logger.warn(`could not bump generation of project ${projectId}: ${(error as Error).message}`);
        return;
      }
    }
  }

  async onModuleInit(): Promise<void> {
    const client = this.redis.client;
    if (!client) return;
    const subscriber = client.duplicate({
      autoResubscribe: false,
      connectionName: this.redis.key('generations'),
    });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // RedisService logs the state of Redis; this connection follows it
    subscriber.on('close', () => this.distrust());
    subscriber.on('ready', () => void this.subscribe(subscriber));
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.apply(message);
    });
    this.timer = setInterval(() => this.tick(), PING_MS);
    this.timer.unref();
    // The first requests are answered from the database until the subscription is confirmed.
    await new Promise<void>((resolve) => {
      this.firstTrust = resolve;
      setTimeout(resolve, 3000).unref();
    });
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.changes?.stop();
    this.trusted = this.redis.client === null;
    await this.subscriber?.quit().catch(() => undefined);
  }

  private async subscribe(subscriber: Redis): Promise<void> {
    try {
      await subscriber.subscribe(this.channel);
    } catch {
      return; // the connection failed again; its next 'ready' tries again
    }
    // Messages published before the subscription may have been missed: start over.
    this.forgetAll();
    this.subscribed = true;
    this.pingSentAt = 0;
    this.trusted = true;
    this.firstTrust();
  }

  private distrust(): void {
    this.subscribed = false;
    this.trusted = false;
    this.pingSentAt = 0;
  }

  /** Every project gets a generation above any handed out so far. */
  private forgetAll(): void {
    this.floor = ++this.clock;
    this.changedAt.clear();
  }

  /** `<instance> <project> <sent at>`, or `<instance> * <sent at>` for every project. */
  private apply(message: string): void {
    const [from, what, sentAt] = message.split(' ');
    if (what === '*') this.forgetAll();
    else if (from !== this.instance) this.changedAt.set(Number(what), ++this.clock);
    const delay = Date.now() - Number(sentAt);
    if (delay >= 0) invalidationDelay.observe(delay / 1000);
  }

  private tick(): void {
    const subscriber = this.subscriber;
    const client = this.redis.client;
    if (this.mustRecover && client?.status === 'ready' && !this.recovering) {
      this.recovering = this.recover(client)
        .catch(() => undefined)
        .finally(() => (this.recovering = null));
    }
    if (!subscriber || !this.subscribed) return;
    if (this.pingSentAt !== 0) {
      if (Date.now() - this.pingSentAt > LEASE_MS) this.trusted = false;
      return;
    }
    const sentAt = Date.now();
    this.pingSentAt = sentAt;
    subscriber.ping().then(
      () => {
        if (this.pingSentAt !== sentAt) return;
        // Every message published before this ping has been applied: what we hold is current again.
        this.pingSentAt = 0;
        this.trusted = this.subscribed;
      },
      () => undefined, // the connection failed: 'close' distrusts
    );
  }

  private async recover(client: Redis): Promise<void> {
    await within(
      BUMP_DEADLINE_MS,
      client.eval(
        INCR_AND_PUBLISH,
        2,
        this.redis.key('gen:epoch'),
        this.channel,
        `${this.instance} * ${Date.now()}`,
      ),
    );
    this.mustRecover = false;
    this.logger.warn(
      'Redis answers again: every instance drops what it cached, so nothing cached before the failure is served',
    );
  }
}
