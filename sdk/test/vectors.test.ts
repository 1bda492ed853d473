import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  answerProblem,
  importPublicKey,
  openOfflineToken,
  sha256Hex,
  type OfflineTokenPayload,
} from '../src/index.js';

/*
 * sdk/vectors/vectors.json: signed answers and offline tokens written by the service's own signing
 * code (scripts/sdk-vectors.mjs, checked current in CI). The PHP and Python SDKs judge the same file
 * alike; here the JS SDK does.
 */

interface AnswerVector {
  name: string;
  method: string;
  target: string;
  domain: string;
  nonce: string;
  status: number;
  date: string | null;
  signature: string | null;
  body: string;
  expect: 'ok' | 'unsigned' | 'signature' | 'date';
}
interface TokenVector {
  name: string;
  domain: string | null;
  token: string;
  expect: 'ok' | 'signature' | 'project' | 'license' | 'domain' | 'expired';
}
interface Vectors {
  now: number;
  max_skew_seconds: number;
  project_id: number;
  license_key: string;
  key_sha256: string;
  public_key: string;
  public_key_pem: string;
  other_public_key: string;
  paid_result: {
    has_paid: boolean;
    grace_until: string;
    plan: string;
    entitlements: Record<string, unknown>;
  };
  answers: AnswerVector[];
  tokens: TokenVector[];
}

const vectors = JSON.parse(readFileSync(join(__dirname, '..', 'vectors', 'vectors.json'), 'utf8')) as Vectors;
const encoder = new TextEncoder();

/** The answer's verdict in the vectors' words, from the SDK's own check. */
async function judgeAnswer(v: AnswerVector, publicKey = vectors.public_key): Promise<string> {
  const problem = await answerProblem(
    v.signature,
    {
      date: v.date ?? '',
      nonce: v.nonce,
      method: v.method,
      target: v.target,
      licenseKey: vectors.license_key,
      domain: v.domain,
      body: encoder.encode(v.body),
    },
    await importPublicKey(publicKey),
    vectors.max_skew_seconds,
    vectors.now * 1000,
  );
  if (problem === null) return 'ok';
  if (problem === 'the answer is not signed') return 'unsigned';
  if (problem.includes('does not verify')) return 'signature';
  if (problem.includes('date')) return 'date';
  return `unexpected: ${problem}`;
}

/** The token's verdict in the vectors' words: what the client's offline mode decides. */
async function judgeToken(v: TokenVector): Promise<string> {
  const payload: OfflineTokenPayload | null = await openOfflineToken(
    v.token,
    await importPublicKey(vectors.public_key_pem),
  );
  if (!payload) return 'signature';
  if (payload.project_id !== vectors.project_id) return 'project';
  if (payload.key_sha256 !== (await sha256Hex(encoder.encode(vectors.license_key)))) return 'license';
  if (payload.domain !== v.domain) return 'domain';
  return payload.exp > vectors.now ? 'ok' : 'expired';
}

describe('the shared vectors (sdk/vectors/vectors.json)', () => {
  it('hold every case the SDKs must agree on', () => {
    expect(vectors.answers.map((v) => v.expect).sort()).toEqual(
      ['date', 'ok', 'ok', 'ok', 'ok', 'signature', 'signature', 'signature', 'unsigned'].sort(),
    );
    expect(new Set(vectors.tokens.map((v) => v.expect))).toEqual(
      new Set(['ok', 'signature', 'project', 'license', 'domain', 'expired']),
    );
  });

  it.each(vectors.answers.map((v) => [v.name, v] as const))('answer %s', async (_name, v) => {
    expect(await judgeAnswer(v)).toBe(v.expect);
  });

  it('no answer verifies with the other project key', async () => {
    for (const v of vectors.answers.filter((a) => a.expect === 'ok'))
      expect(await judgeAnswer(v, vectors.other_public_key)).toBe('signature');
  });

  it.each(vectors.tokens.map((v) => [v.name, v] as const))('token %s', async (_name, v) => {
    expect(await judgeToken(v)).toBe(v.expect);
  });

  it('the paid answer carries the result every SDK reads from it', () => {
    const paid = vectors.answers.find((v) => v.name === 'paid') as AnswerVector;
    const data = (JSON.parse(paid.body) as { data: Record<string, unknown> }).data;
    expect(data).toMatchObject(vectors.paid_result);
    expect(data.token).toBe(vectors.tokens.find((t) => t.name === 'valid')?.token);
  });
});
