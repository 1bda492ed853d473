import { createConnection, createServer, Server, Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket;
  /** The server side is gone and the client was not told (see forget()). */
  forgotten: boolean;
}

/**
 * A TCP proxy between the service and a database server, to break the database the ways it breaks
 * in production without touching the shared server:
 * - `pass()`: bytes flow both ways (also: the server is back after `pause()` or `down()`);
 * - `pause()`: like SIGSTOP on the server — connections stay open and new ones are accepted, but
 *   nothing moves either way; what the client sent meanwhile (and its close) reaches the server when
 *   it passes again, as a stopped server's kernel buffers would deliver it;
 * - `down()`: like a kill — every open connection is closed and new ones are refused;
 * - `forget()`: like a server that restarted behind a load balancer or a NAT that lost its table —
 *   the open connections are gone on the server side without a word to the client, whose next
 *   packet on one gets a reset; new connections work.
 */
export class DbProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Pair>();
  private paused = false;
  private trigger: { pattern: RegExp; after: RegExp | null } | null = null;

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** A proxy on a free port of 127.0.0.1 to the server of `databaseUrl` (mysql://…). */
  static async start(databaseUrl: string): Promise<DbProxy> {
    const url = new URL(databaseUrl);
    const probe = createServer();
    const port = await new Promise<number>((resolve) =>
      probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)),
    );
    await new Promise((resolve) => probe.close(resolve));
    const proxy = new DbProxy(port, { host: url.hostname, port: Number(url.port || 3306) });
    await proxy.listen();
    return proxy;
  }

  /** `databaseUrl` with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  async pass(): Promise<void> {
    this.paused = false;
    this.trigger = null;
    for (const { client, upstream } of this.pairs) {
      client.resume();
      upstream.resume();
    }
    if (!this.server) await this.listen();
  }

  pause(): void {
    this.paused = true;
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream.pause();
    }
  }

  /**
   * Passes until a client sends a packet matching `pattern` (on a connection that sent `after`
   * earlier in the same transaction, when given), forwards that packet, then pauses: the server runs
   * the statement, and the client never hears back — a server stopped right after it read it.
   */
  pauseAfter(pattern: RegExp, after?: RegExp): void {
    this.trigger = { pattern, after: after ?? null };
  }

  async down(): Promise<void> {
    this.paused = false;
    const closed = this.stopListening();
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    await closed;
  }

  /** Returns how many open connections the server side dropped. */
  forget(): number {
    const open = [...this.pairs].filter((pair) => !pair.forgotten);
    for (const pair of open) {
      pair.forgotten = true;
      pair.upstream.destroy();
    }
    return open.length;
  }

  async close(): Promise<void> {
    await this.down();
  }

  private listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  private async stopListening(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  private accept(client: Socket): void {
    const upstream = createConnection(this.target);
    const pair: Pair = { client, upstream, forgotten: false };
    this.pairs.add(pair);
    if (this.paused) {
      client.pause();
      upstream.pause();
    }
    let history = '';
    client.on('data', (chunk: Buffer) => {
      if (pair.forgotten) return void client.resetAndDestroy();
      const text = chunk.toString('latin1');
      upstream.write(chunk);
      const trigger = this.trigger;
      if (trigger && trigger.pattern.test(text) && (trigger.after === null || trigger.after.test(history))) {
        this.trigger = null;
        this.pause();
      }
      // What this connection sent in its current transaction.
      history = /COMMIT|ROLLBACK|START TRANSACTION/.test(text) ? '' : history + text;
    });
    upstream.on('data', (chunk) => client.write(chunk));
    // A close passes on after the bytes before it, as the kernel would deliver them; unless the
    // connection was forgotten, whose client hears nothing until it sends.
    client.on('close', (hadError) => {
      this.pairs.delete(pair);
      if (hadError) upstream.destroy();
      else upstream.end();
    });
    upstream.on('close', (hadError) => {
      if (pair.forgotten) return;
      this.pairs.delete(pair);
      if (hadError) client.destroy();
      else client.end();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  }
}
