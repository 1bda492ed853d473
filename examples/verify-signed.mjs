// Verifies a signed has-paid answer and its offline token with nothing but node:crypto (Node >= 20).
// See README.md.
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';

const { LICENSEGATE_URL, LICENSE_KEY, SERVICE_DOMAIN, PUBLIC_KEY, PROJECT_ID } = process.env;
// A service that accepts the connection and never answers must not hang the caller.
const TIMEOUT_MS = Number(process.env.TIMEOUT_MS || 10_000);
const MAX_SKEW_SECONDS = 300;
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

/** The project's key as published by GET /project/{id}/signing-key: `public_key_pem`, or `public_key` (raw, base64). */
function publicKey(text) {
  if (!text) throw new Error('PUBLIC_KEY is required');
  if (text.includes('-----BEGIN')) return createPublicKey(text);
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(text, 'base64').toString('base64url') },
    format: 'jwk',
  });
}

try {
  if (!LICENSEGATE_URL || !LICENSE_KEY || !PROJECT_ID)
    throw new Error('LICENSEGATE_URL, LICENSE_KEY and PROJECT_ID are required');
  const key = publicKey(PUBLIC_KEY);
  const base = new URL(LICENSEGATE_URL.replace(/\/+$/, '').replace(/(\/api\/v1)?$/, '/api/v1'));

  // 1. Ask, with a fresh nonce, for the answer and an offline token.
  const nonce = randomBytes(16).toString('base64url');
  const url = new URL(`${base.pathname}/project/has-paid`, base);
  url.searchParams.set('include', 'token');
  if (!SERVICE_DOMAIN) url.searchParams.set('action', 'check_project');
  const headers = { Accept: 'application/json', 'X-LICENSE-KEY': LICENSE_KEY, 'X-Service-Nonce': nonce };
  if (SERVICE_DOMAIN) headers['X-Service-Domain'] = SERVICE_DOMAIN;
  if (!(TIMEOUT_MS > 0)) throw new Error('TIMEOUT_MS must be a positive number of milliseconds');
  let res;
  let body;
  try {
    // The signal covers the body too: headers followed by a body that never comes is no answer either.
    res = await fetch(url, { method: 'POST', headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
    body = Buffer.from(await res.arrayBuffer());
  } catch (err) {
    if (err?.name === 'TimeoutError')
      throw new Error(`${base.href.replace(/\/$/, '')} did not answer within ${TIMEOUT_MS} ms`, {
        cause: err,
      });
    throw new Error(
      `could not reach ${base.href.replace(/\/$/, '')}: ${err?.cause?.message ?? err?.message}`,
      { cause: err },
    );
  }

  // 2. The signature covers the date, our nonce, the request, the key and domain we sent, and the body's bytes.
  const date = res.headers.get('x-service-date');
  const signature = res.headers.get('x-service-signature');
  if (!date || !signature?.startsWith('v1,'))
    throw new Error(`the answer (HTTP ${res.status}) is not signed`);
  const text = [
    'LG1-ANSWER',
    date,
    nonce,
    `POST ${url.pathname}${url.search}`,
    sha256(LICENSE_KEY),
    SERVICE_DOMAIN ?? '',
    sha256(body),
  ].join('\n');
  if (!verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(signature.slice(3), 'base64'))) {
    throw new Error("the answer's signature does not verify: altered in transit, or another project's key");
  }
  if (Math.abs(Date.now() - Date.parse(date)) > MAX_SKEW_SECONDS * 1000)
    throw new Error(`the answer's date ${date} is more than ${MAX_SKEW_SECONDS} s from this clock`);
  const answer = JSON.parse(body.toString('utf8'));
  console.log(
    `OK: signed answer verified (HTTP ${res.status}, signed at ${date}): ${JSON.stringify(answer.data)}`,
  );
  if (res.status !== 200) throw new Error(`refused: ${answer.message}`);

  // 3. The token: LG1.<payload>.<signature over "LG1-TOKEN\n" + payload>, for this project, key and domain.
  const token = answer.data.token;
  if (!answer.data.has_paid) {
    console.log('Not paid: no offline token.');
  } else if (!token) {
    console.log("Paid, but no offline token: the project's offline_grace_hours is 0.");
  } else {
    const [version, payloadPart, tokenSignature] = token.split('.');
    if (
      version !== 'LG1' ||
      !verify(
        null,
        Buffer.from(`LG1-TOKEN\n${payloadPart}`, 'utf8'),
        key,
        Buffer.from(tokenSignature, 'base64url'),
      )
    ) {
      throw new Error("the offline token's signature does not verify");
    }
    const payload = JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8'));
    if (String(payload.project_id) !== String(PROJECT_ID))
      throw new Error(`the offline token is for project ${payload.project_id}, not ${PROJECT_ID}`);
    if (payload.key_sha256 !== sha256(LICENSE_KEY))
      throw new Error('the offline token is for another license key');
    if (payload.exp * 1000 <= Date.now()) throw new Error('the offline token has expired');
    console.log(
      `OK: offline token verified: license ${payload.license_id}, domain ${payload.domain ?? '(project check)'}, valid until ${new Date(payload.exp * 1000).toISOString()}`,
    );
  }
} catch (err) {
  console.error(`licensegate: ${err.message}`);
  process.exitCode = 1;
}
