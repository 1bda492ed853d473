// The least a license check does per call (npm run bench, the bare pair's third server): a
// node:http server given, as JSON in argv[2], the answer has-paid gave ({status, headers, body}) and
// the license keys of the bench's pool (`keys`). Per call it reads the request to its end, as any
// server must, then: it hashes the X-LICENSE-KEY header (SHA-256), finds the key in a Map, counts
// the call in a per-license window, makes a request id, builds the envelope with JSON.stringify and
// writes it with the same headers, the id and the remaining allowance filled in (the window's reset
// stays as sent). An unknown key gets a 403 envelope. It checks no domain, activation or day count,
// and has no middleware, framework or database: what is left between this and the service is the
// gate's rules and how the service is built (docs/benchmarks.md#the-runtime-check-against-a-bare-server).
import { hash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const { status, headers, body, keys } = JSON.parse(process.argv[2]);
const port = Number(process.argv[3]);
const sample = JSON.parse(body);
const LIMIT = Number(headers['x-ratelimit-limit-runtime']);
// Only a success with the runtime allowance's headers is rebuilt here; anything else would not be the same bytes.
if (status !== 200 || sample.status !== 'success' || !Number.isInteger(LIMIT))
  throw new Error(`floor-server: cannot rebuild this answer (${status}, ${body})`);
const data = sample.data;
const WINDOW_MS = 60_000;

const licenses = new Map(keys.map((key) => [hash('sha256', key, 'hex'), { hits: 0, resetAt: 0 }]));
// The headers every answer sends as they are, as writeHead's flat list, made once.
const fixed = Object.entries(headers)
  .filter(([name]) => !['x-request-id', 'x-ratelimit-remaining-runtime', 'content-length'].includes(name))
  .flat();
const unknown = JSON.stringify({
  status: 'error',
  message: 'Invalid license key.',
  data: { redirect_url: null },
  errors: null,
});

createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const sent = req.headers['x-license-key'];
    const license = typeof sent === 'string' ? licenses.get(hash('sha256', sent, 'hex')) : undefined;
    const out = [...fixed, 'x-request-id', randomUUID()];
    if (license === undefined) {
      res.writeHead(403, [...out, 'content-length', String(Buffer.byteLength(unknown))]);
      return res.end(unknown);
    }
    const now = Date.now();
    if (license.resetAt <= now) {
      license.hits = 0;
      license.resetAt = now + WINDOW_MS;
    }
    license.hits++;
    const json = JSON.stringify({ status: 'success', message: 'Success', data, errors: null });
    out.push('x-ratelimit-remaining-runtime', String(Math.max(0, LIMIT - license.hits)));
    out.push('content-length', String(Buffer.byteLength(json)));
    res.writeHead(status, out);
    res.end(json);
  });
}).listen(port, '127.0.0.1', () => process.send?.('ready'));
