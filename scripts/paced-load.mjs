// Requests at a steady rate (an open load), for `npm run bench`'s latency at a stated rate.
//
// autocannon measures a closed loop: N connections each send their next request when the last one is
// answered, so at saturation a request's latency is mostly the queue of the N before it (Little's
// law: 50 connections at 5,000 answers/s is 10 ms each, however fast one answer is made). Its
// `overallRate` does not pace either: each connection sends its share of a second at once, then
// waits for the next second. What a user sizing the service asks is the other question: carrying
// R calls a second, how long does a call wait? Here request i is due at start + i / R, whether or not
// the ones before it were answered; it goes out on the first free connection of `connections`
// (kept alive), and its latency is counted from the moment it was due, so the time it waited for a
// free connection counts too (no coordinated omission). Requests are rendered once (like
// autocannon's) and parsed with no more than the status line and Content-Length, so the generator
// takes little of the cores it shares with the server.
import { connect } from 'node:net';

/**
 * @param {object} o
 * @param {number} o.port
 * @param {{ method: string, path: string, headers: Record<string, string>, body?: string }[]} o.requests
 *   walked in turn; a body's `[<id>]` becomes a fresh id in every request
 * @param {number} o.rate requests per second
 * @param {number} o.duration seconds
 * @param {number} o.connections at most this many requests in flight
 * @returns {Promise<{ sent: number, answered: number, non2xx: number, errors: number, rate: number,
 *   p50: number, p90: number, p99: number, max: number, late: number }>} latencies in ms; `late`: the
 *   share of requests that found every connection busy when due
 */
export async function paced({ port, requests, rate, duration, connections }) {
  const rendered = requests.map(render);
  const total = Math.round(rate * duration);
  const latencies = new Float64Array(total);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  let late = 0;
  let sent = 0;
  let id = 0;
  const waiting = []; // due times of requests that found no free connection
  const idle = [];
  const conns = [];
  const start = performance.now() + 50;
  let done;
  const finished = new Promise((r) => (done = r));

  const settle = () => {
    if (answered + errors === total) done();
  };
  const open = () => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const conn = { socket, due: 0, buffer: null, need: -1, status: 0, connected: false };
    conns.push(conn);
    socket.on('connect', () => {
      conn.connected = true;
      release(conn);
    });
    socket.on('data', (chunk) => onData(conn, chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      // Nothing listening (or refusing): the run ends here, every call not answered an error,
      // rather than opening connection after connection until the timeout.
      if (!conn.connected) {
        errors = total - answered;
        return done();
      }
      if (conn.due > 0) {
        errors++;
        conn.due = 0;
        settle();
      }
      if (sent < total || waiting.length > 0) open();
    });
    return conn;
  };
  const send = (conn, due) => {
    conn.due = due;
    conn.buffer = null;
    conn.need = -1;
    conn.socket.write(rendered[sent % rendered.length](() => `${process.pid}-${id++}`));
    sent++;
  };
  const release = (conn) => {
    conn.due = 0;
    const due = waiting.shift();
    if (due !== undefined) send(conn, due);
    else idle.push(conn);
  };
  const onData = (conn, chunk) => {
    conn.buffer = conn.buffer === null ? chunk : Buffer.concat([conn.buffer, chunk]);
    if (conn.need < 0) {
      const end = conn.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = conn.buffer.toString('latin1', 0, end);
      conn.status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      conn.need = end + 4 + (length ? Number(length[1]) : 0);
    }
    if (conn.buffer.length < conn.need) return;
    const latency = performance.now() - conn.due;
    if (answered < total) latencies[answered] = latency;
    answered++;
    if (conn.status < 200 || conn.status > 299) non2xx++;
    settle();
    release(conn);
  };

  for (let i = 0; i < connections; i++) open();
  const tick = () => {
    const now = performance.now();
    // Every request due by now goes out (a late timer sends the few it missed together, counted
    // from when each was due).
    while (sent + waiting.length < total) {
      const due = start + ((sent + waiting.length) * 1000) / rate;
      if (due > now) break;
      const conn = idle.pop();
      if (conn) send(conn, due);
      else {
        late++;
        waiting.push(due);
      }
    }
    if (sent + waiting.length < total) setTimeout(tick, 1);
  };
  setTimeout(tick, Math.max(0, start - performance.now()));
  const timeout = setTimeout(done, (duration + 30) * 1000);
  await finished;
  const elapsed = (performance.now() - start) / 1000;
  clearTimeout(timeout);
  sent = total; // no more connections are opened as these close
  waiting.length = 0;
  for (const conn of conns) conn.socket.destroy();
  const sorted = latencies.subarray(0, Math.min(answered, total)).sort();
  const at = (q) =>
    sorted.length
      ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10
      : NaN;
  return {
    sent,
    answered,
    non2xx,
    errors,
    rate: answered / elapsed,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: sorted.length ? Math.round(sorted[sorted.length - 1] * 10) / 10 : NaN,
    late: late / total,
  };
}

/** A request rendered to bytes once; with `[<id>]` in its body, a function of a fresh id per call. */
function render({ method, path, headers, body }) {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body === undefined) {
    const bytes = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);
    return () => bytes;
  }
  if (!body.includes('[<id>]')) {
    const bytes = Buffer.from(
      `${lines.join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    return () => bytes;
  }
  const head = lines.join('\r\n');
  return (nextId) => {
    const filled = body.replaceAll('[<id>]', nextId());
    return `${head}\r\ncontent-length: ${Buffer.byteLength(filled)}\r\n\r\n${filled}`;
  };
}
