// Writes sdk/vectors/vectors.json — signed answers and offline tokens every SDK must judge alike
// (docs/sdk-formats.md) — with the service's own signing code from dist/, or with --check fails when
// the committed file differs from what that code writes now. Run after `npm run build`.
//
// Deterministic: fixed key pairs (Ed25519 signatures depend only on the key and the text), fixed
// times, fixed nonces. The answers go through AnswerSigning exactly as on the runtime routes: a real
// HTTP request whose response's end() it wraps, with the project's key opened from its sealed form.
import 'reflect-metadata';
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'sdk/vectors/vectors.json');
const check = process.argv.includes('--check');

if (!existsSync(join(root, 'dist/src/gate/answer-signing.js'))) {
  process.stderr.write('dist/ is missing: run `npm run build` first.\n');
  process.exit(1);
}
const { AnswerSigning } = await import('../dist/src/gate/answer-signing.js');
const { AnswerSigner } = await import('../dist/src/gate/answer-signer.js');
const { offlineToken } = await import('../dist/src/gate/offline-token.js');
const { sealSecret } = await import('../dist/src/common/crypto/crypto.js');

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** An Ed25519 key pair from a fixed 32-byte seed (PKCS#8 DER: a fixed prefix, then the seed). */
function keyPair(label) {
  const seed = createHash('sha256').update(`licensegate sdk vectors: ${label}`).digest();
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  return {
    privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    raw: spki.subarray(spki.length - 32).toString('base64'),
  };
}

const APP_KEY = Buffer.alloc(32, 7);
const PROJECT = { id: 7, keys: keyPair('project 7') };
const OTHER = { id: 8, keys: keyPair('project 8') };
const LICENSE_KEY = '0b5f7c1e-1111-4222-8333-444455556666';
const OTHER_LICENSE_KEY = '9d0a2b3c-5555-4666-8777-888899990000';
const DOMAIN = 'shop.example.com';
/** The clock every case is judged at: 2026-12-01T10:00:00Z. */
const NOW = Date.parse('2026-12-01T10:00:00Z') / 1000;
const MAX_SKEW = 300;
const NONCE = 'vectors-nonce-0123456789abcdef';
const NOT_OUR_NONCE = 'vectors-nonce-someone-elses-0001';

const projects = new Map(
  [PROJECT, OTHER].map((p) => [p.id, { id: p.id, signing_public_key: p.keys.publicPem }]),
);
const sealed = new Map([PROJECT, OTHER].map((p) => [p.id, sealSecret(APP_KEY, p.keys.privatePem)]));
// The libsodium thread and node:crypto make the same bytes; the event loop's needs no thread to stop.
const signer = new AnswerSigner({ file: null });
const signing = new AnswerSigning(
  { sealedSigningKey: async (id) => sealed.get(id) ?? null },
  { appKey: APP_KEY },
  signer,
);

const realNow = Date.now;
/** What the runtime route would do with `answer`: arm on the request, bind the project's key, end. */
const server = createServer((req, res) => {
  const answer = JSON.parse(Buffer.from(String(req.headers['x-vector']), 'base64').toString('utf8'));
  const pending = signing.arm(req, res);
  void Promise.resolve(
    pending && answer.signer ? signing.bind(pending, projects.get(answer.signer)) : null,
  ).then(() => {
    res.statusCode = answer.status;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(answer.body);
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;

/** One signed answer as the client receives it. */
function fetchAnswer({ method, target: path, domain, nonce, status, body, signer: signedBy, at }) {
  return new Promise((resolve, reject) => {
    Date.now = () => at * 1000;
    const headers = {
      'X-LICENSE-KEY': LICENSE_KEY,
      // What the answer is to be; base64, as header values are ASCII.
      'X-Vector': Buffer.from(JSON.stringify({ status, body, signer: signedBy })).toString('base64'),
    };
    if (domain !== '') headers['X-Service-Domain'] = domain;
    if (nonce !== null) headers['X-Service-Nonce'] = nonce;
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        Date.now = realNow;
        resolve({
          status: res.statusCode,
          date: res.headers['x-service-date'] ?? null,
          signature: res.headers['x-service-signature'] ?? null,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const envelope = (status, message, data) => JSON.stringify({ status, message, data, errors: null });
const TOKEN_IAT = NOW - 3600;
const tokenPayload = (over = {}) => ({
  project_id: PROJECT.id,
  license_id: 42,
  key_sha256: sha256(LICENSE_KEY),
  domain: DOMAIN,
  has_paid: true,
  is_test_license: false,
  iat: TOKEN_IAT,
  exp: TOKEN_IAT + 72 * 3600,
  ...over,
});
const projectKey = createPrivateKey(PROJECT.keys.privatePem);
const otherKey = createPrivateKey(OTHER.keys.privatePem);
const paidToken = offlineToken(projectKey, tokenPayload());

const ENTITLEMENTS = {
  'feature.reports': true,
  'feature.export': false,
  seats: 5,
  'meter.api_calls': 10000,
  support: 'priority',
  empty: '',
  zero: 0,
};
const HAS_PAID = '/api/v1/project/has-paid?include=token';
const request_ = { method: 'POST', target: HAS_PAID, domain: DOMAIN, nonce: NONCE, at: NOW - 2 };
const paidBody = envelope('success', 'Success', {
  has_paid: true,
  is_test_license: false,
  grace_until: '2026-12-04T10:00:00Z',
  plan: 'pro',
  entitlements: ENTITLEMENTS,
  token: paidToken,
});
const unpaidBody = envelope('success', 'Success', {
  has_paid: false,
  is_test_license: false,
  redirect_url: 'https://pay.example.com/renew?from=café',
  plan: null,
  entitlements: {},
});
const refusedBody = envelope('error', 'This license has been revoked.', {
  redirect_url: 'https://pay.example.com/renew',
});

/**
 * Answers: `expect` is `ok` (accept), `unsigned` (no signature headers), `signature` (does not
 * verify with the project's key over what this client sent and received) or `date` (verifies, but
 * its date is more than max_skew_seconds from `now`).
 */
const answerCases = [
  {
    name: 'paid',
    about: 'A paid answer with grace, plan, entitlements and a token.',
    body: paidBody,
    expect: 'ok',
  },
  {
    name: 'unpaid',
    about: 'An unpaid answer (non-ASCII bytes in the body).',
    body: unpaidBody,
    expect: 'ok',
  },
  {
    name: 'refused',
    about: 'A refusal is signed too: the 403 is authentic.',
    status: 403,
    body: refusedBody,
    expect: 'ok',
  },
  {
    name: 'deactivate',
    about: 'Another route, no domain sent: the domain line is empty.',
    target: '/api/v1/license/deactivate',
    domain: '',
    body: envelope('success', 'Success', { deactivated: 1 }),
    expect: 'ok',
  },
  {
    name: 'body_tampered',
    about: 'has_paid false turned into true after signing.',
    body: unpaidBody,
    tamper: (b) => b.replace('"has_paid":false', '"has_paid":true'),
    expect: 'signature',
  },
  {
    name: 'nonce_not_ours',
    about: "Signed for another request's nonce (a replayed answer).",
    body: paidBody,
    signedNonce: NOT_OUR_NONCE,
    expect: 'signature',
  },
  {
    name: 'stale_date',
    about: 'Signed ten minutes before now: outside the 300 s skew.',
    body: paidBody,
    at: NOW - 600,
    expect: 'date',
  },
  {
    name: 'other_project_key',
    about: "Signed with another project's key.",
    body: paidBody,
    signer: OTHER.id,
    expect: 'signature',
  },
  {
    name: 'unsigned',
    about: 'No X-Service-Date / X-Service-Signature.',
    body: paidBody,
    unsigned: true,
    expect: 'unsigned',
  },
];

const answers = [];
for (const c of answerCases) {
  const sent = {
    ...request_,
    ...(c.target ? { target: c.target } : {}),
    ...('domain' in c ? { domain: c.domain } : {}),
  };
  const got = await fetchAnswer({
    ...sent,
    nonce: c.unsigned ? null : (c.signedNonce ?? sent.nonce),
    status: c.status ?? 200,
    body: c.body,
    signer: c.unsigned ? null : (c.signer ?? PROJECT.id),
    at: c.at ?? sent.at,
  });
  answers.push({
    name: c.name,
    about: c.about,
    method: sent.method,
    target: sent.target,
    domain: sent.domain,
    nonce: sent.nonce,
    status: got.status,
    date: got.date,
    signature: got.signature,
    body: c.tamper ? c.tamper(got.body) : got.body,
    expect: c.expect,
  });
}
server.close();

/** A token whose payload part is `part` but whose signature is `token`'s. */
const swapPayload = (token, payload) =>
  `LG1.${Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')}.${token.split('.')[2]}`;

/**
 * Tokens, judged for project_id, the license key and `domain` at `now`: `expect` is `ok`, `signature`
 * (malformed or does not verify with the project's key), `project`, `license`, `domain` (verifies but
 * is another's) or `expired` (exp <= now).
 */
const tokens = [
  {
    name: 'valid',
    about: "A paid answer's token for this domain.",
    domain: DOMAIN,
    token: paidToken,
    expect: 'ok',
  },
  {
    name: 'valid_check_project',
    about: 'A project-level check: domain null.',
    domain: null,
    token: offlineToken(projectKey, tokenPayload({ domain: null, is_test_license: true })),
    expect: 'ok',
  },
  {
    name: 'expired',
    about: 'exp passed an hour ago.',
    domain: DOMAIN,
    token: offlineToken(projectKey, tokenPayload({ iat: NOW - 73 * 3600, exp: NOW - 3600 })),
    expect: 'expired',
  },
  {
    name: 'expires_now',
    about: 'exp equal to now is expired.',
    domain: DOMAIN,
    token: offlineToken(projectKey, tokenPayload({ exp: NOW })),
    expect: 'expired',
  },
  {
    name: 'other_project_key',
    about: "Signed with another project's key.",
    domain: DOMAIN,
    token: offlineToken(otherKey, tokenPayload()),
    expect: 'signature',
  },
  {
    name: 'payload_tampered',
    about: 'exp pushed a year on, signature kept.',
    domain: DOMAIN,
    token: swapPayload(paidToken, tokenPayload({ exp: NOW + 365 * 86400 })),
    expect: 'signature',
  },
  {
    name: 'malformed',
    about: 'Not three parts.',
    domain: DOMAIN,
    token: `LG1.${paidToken.split('.')[1]}`,
    expect: 'signature',
  },
  {
    name: 'other_project',
    about: "Signed with this key but naming another project (the key's project is what counts).",
    domain: DOMAIN,
    token: offlineToken(projectKey, tokenPayload({ project_id: OTHER.id })),
    expect: 'project',
  },
  {
    name: 'other_license',
    about: "Another license key's token.",
    domain: DOMAIN,
    token: offlineToken(projectKey, tokenPayload({ key_sha256: sha256(OTHER_LICENSE_KEY) })),
    expect: 'license',
  },
  {
    name: 'other_domain',
    about: "Another domain's token.",
    domain: DOMAIN,
    token: offlineToken(projectKey, tokenPayload({ domain: 'other.example.com' })),
    expect: 'domain',
  },
];

const vectors = {
  about:
    "Signed answers and offline tokens written by the service's own signing code (scripts/sdk-vectors.mjs); every SDK judges them alike. Formats: docs/sdk-formats.md.",
  now: NOW,
  max_skew_seconds: MAX_SKEW,
  project_id: PROJECT.id,
  license_key: LICENSE_KEY,
  key_sha256: sha256(LICENSE_KEY),
  public_key: PROJECT.keys.raw,
  public_key_pem: PROJECT.keys.publicPem,
  other_public_key: OTHER.keys.raw,
  paid_result: {
    has_paid: true,
    grace_until: '2026-12-04T10:00:00Z',
    plan: 'pro',
    entitlements: ENTITLEMENTS,
  },
  answers,
  tokens,
};
const text = `${JSON.stringify(vectors, null, 2)}\n`;

if (!check) {
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
  process.exit(0);
}
const committed = existsSync(target) ? readFileSync(target, 'utf8') : null;
if (committed === text) {
  process.stdout.write('sdk/vectors/vectors.json is up to date.\n');
  process.exit(0);
}
process.stderr.write(
  committed === null
    ? 'sdk/vectors/vectors.json is missing: run `npm run sdk:vectors` and commit the result.\n'
    : "sdk/vectors/vectors.json differs from what the service's signing code writes now: run `npm run sdk:vectors` and commit the result.\n",
);
process.exit(1);
