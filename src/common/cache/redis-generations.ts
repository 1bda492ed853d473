import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { invalidationDelay } from '../../metrics/metrics.js';
import { ProjectGenerations } from './generations.js';
import { RedisService, within } from './redis.js';

/** How often the subscriber connection is pinged, and how late its answer may be before nothing cached is trusted. */
const PING_MS = 100;
const LEASE_MS = 500;
/** How long a write waits, at most, for its bump to be published while the subscriber is up (and any call for Redis). */
const BUMP_DEADLINE_MS = 1000;

// One round trip: bump the shared number (gen:<project>, or gen:epoch after a failure) and tell every instance.
const INCR_AND_PUBLISH = `redis.call('INCR', KEYS[1]) return redis.call('PUBLISH', KEYS[2], ARGV[1])`;

/**
 * The generations with REDIS_URL: a bump is an INCR and a PUBLISH after the commit, and every
 * instance, subscribed on a connection of its own, bumps its copy when the message arrives; the
 * writing instance bumps its copy before publishing. shared() is the number Redis keeps (gen:<project>,
 * plus a global epoch that is bumped after a failure), read with the cached value.
 *
 * Pub/sub delivers at most once, so an instance trusts its copy only while it is sure it missed
 * nothing: from the moment its subscription is confirmed, and while the connection answers. When the
 * subscriber connection closes current() answers null at once and callers read the database; when it
 * is subscribed again every project starts a new generation, so nothing cached before the gap is
 * served after it. A ping on the subscriber connection every PING_MS proves it still delivers: Redis
 * answers a ping after every message published before it, so while an answer is more than LEASE_MS
 * late (a Redis that hangs without closing anything) nothing is trusted either, and once it comes
 * every message before it has been applied. A bump this instance could not publish within
 * BUMP_DEADLINE_MS (its command connection failed while the subscriber stayed up) is made good as soon
 * as Redis answers it: it then publishes a message that makes every instance drop everything.
 */
export class RedisGenerations extends ProjectGenerations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ProjectGenerations');
  /** Nothing is trusted before the subscription is confirmed, nor while it is silent. */
  private trusted = false;
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
  private readonly client: Redis;

  constructor(private readonly redis: RedisService) {
    super();
    if (!redis.client) throw new Error('RedisGenerations needs a Redis client (REDIS_URL)');
    this.client = redis.client;
    this.channel = redis.key('generations');
  }

  /** Null while not subscribed, or while the subscription has been silent for LEASE_MS. */
  current(projectId: number): number | null {
    return this.trusted ? this.known(projectId) : null;
  }

  async shared(projectId: number): Promise<string | null> {
    const client = this.client;
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

  async bump(projectId: number): Promise<void> {
    this.changed(projectId);
    // Every instance is to drop everything as soon as Redis answers anyway.
    if (this.mustRecover) return;
    const client = this.client;
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
    const subscriber = this.client.duplicate({
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
    this.trusted = false;
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

  /** `<instance> <project> <sent at>`, or `<instance> * <sent at>` for every project. */
  private apply(message: string): void {
    const [from, what, sentAt] = message.split(' ');
    if (what === '*') this.forgetAll();
    else if (from !== this.instance) this.changed(Number(what));
    const delay = Date.now() - Number(sentAt);
    if (delay >= 0) invalidationDelay.observe(delay / 1000);
  }

  private tick(): void {
    const subscriber = this.subscriber;
    const client = this.client;
    if (this.mustRecover && client.status === 'ready' && !this.recovering) {
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
