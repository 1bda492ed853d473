import { createServer, IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got. */
export interface Hit {
  n: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Ms since epoch when the request body was fully received */
  at: number;
  id: string;
}
export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Never answer (the connection stays open until the sender gives up or the receiver closes) */
  hang?: boolean;
  /** Answer by hand (e.g. a body cut off) */
  custom?: (res: ServerResponse) => void;
}
export type Script = (hit: Hit) => Answer;

/** A Standard Webhooks event as delivered. */
export interface WebhookEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, any>;
}

export interface Receiver {
  hits: Hit[];
  port: number;
  url: string;
  script: Script;
  ids: () => string[];
  events: () => WebhookEvent[];
  /** The events of one type, in the order received. */
  of: (type: string) => WebhookEvent[];
  /** Each hit's Standard Webhooks signature checked with `secret`: the messages of those that fail. */
  badSignatures: (secret: string) => string[];
  /** Requests open right now, and the most that were ever open at once. */
  open: number;
  maxOpen: number;
  close: () => Promise<void>;
}

/** A real HTTP server on 127.0.0.1 recording every request and answering per `script` (200 by default). */
export async function startReceiver(script: Script = () => ({ status: 200 })): Promise<Receiver> {
  const hits: Hit[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    rx.open++;
    rx.maxOpen = Math.max(rx.maxOpen, rx.open);
    res.on('close', () => rx.open--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hit: Hit = {
        n: hits.length + 1,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
        id: String(req.headers['webhook-id'] ?? ''),
      };
      hits.push(hit);
      let answer: Answer;
      try {
        answer = rx.script(hit);
      } catch {
        answer = { status: 500 };
      }
      if (answer.hang) {
        hanging.push(res);
        return;
      }
      if (answer.custom) {
        answer.custom(res);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end('ok');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const events = () => hits.map((h) => JSON.parse(h.body) as WebhookEvent);
  const rx: Receiver = {
    hits,
    port,
    url: `http://127.0.0.1:${port}/hook`,
    script,
    ids: () => hits.map((h) => h.id),
    events,
    of: (type) => events().filter((e) => e.type === type),
    badSignatures: (secret) =>
      hits.flatMap((h) => {
        try {
          new Webhook(secret).verify(h.body, h.headers as Record<string, string>);
          return [];
        } catch (error) {
          return [(error as Error).message];
        }
      }),
    open: 0,
    maxOpen: 0,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return rx;
}
