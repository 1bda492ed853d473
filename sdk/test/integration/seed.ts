/**
 * What the SDK's integration tests (browser build, packed tarball) call on a real LicenseGate
 * server: one paid project with a paid domain, a license, a revoked license, and paid-only
 * injectables (a snippet and a file) sealed with one secret. Plain data, so it can be handed to a
 * browser page or a child process as JSON.
 */
import { randomBytes } from 'node:crypto';
import {
  makeAccount,
  makeDomain,
  makeLicense,
  makeProject,
  uniqueToken,
} from '../../../test/factories/index.js';
import { expectSuccess } from '../../../test/utils/envelope.js';
import type { TestApp } from '../../../test/utils/test-app.js';

export const REDIRECT = 'https://pay.example.com/renew';

export interface SeededInjectable {
  slug: string;
  type: string;
  /** what a snippet decrypts to */
  text: string | null;
  /** what a file decrypts to: its name and its bytes in base64 */
  fileName: string | null;
  bytes: string | null;
}

export interface Seeded {
  baseUrl: string;
  projectId: number;
  /** the project's signing key: base64 of the raw 32 bytes, and SPKI PEM */
  publicKey: string;
  publicKeyPem: string;
  /** another project's public key (base64), which verifies none of this project's answers */
  otherPublicKey: string;
  secret: string;
  /** a paid domain of the project */
  domain: string;
  licenseKey: string;
  revokedLicenseKey: string;
  /** the paid-only, active injectables, in the order has-paid lists them */
  injectables: SeededInjectable[];
  /** an injectable that is not paid-only, which has-paid must leave out */
  freeSlug: string;
}

export async function seedProject(t: TestApp): Promise<Seeded> {
  const { key } = await makeAccount(t.app);
  const api = {
    get: (path: string) =>
      t.http().get(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key),
    post: (path: string) =>
      t.http().post(`/api/v1${path}`).set('Accept', 'application/json').set('X-API-KEY', key),
  };
  const project = await makeProject(t, key, { has_paid: true, default_redirect_url: REDIRECT });
  const domain = await makeDomain(t, key, project.id, { has_paid: true });
  // allow_configs: the fixtures ask for payloads from a project-level check without a domain (docs/decisions.md#runtime-checks).
  const license = await makeLicense(t, key, project.id, { allow_configs: true });
  const revoked = await makeLicense(t, key, project.id);
  expectSuccess(await api.post(`/project/${project.id}/licenses/${revoked.id}/revoke`));
  const signingKey = expectSuccess(await api.get(`/project/${project.id}/signing-key`));
  const other = await makeProject(t, key);
  const otherKey = expectSuccess(await api.get(`/project/${other.id}/signing-key`));
  const secret = `browser-${uniqueToken()}-pässwörd`;

  const text = `<b class="pro">☃ ${uniqueToken()}</b>`;
  const snippet = expectSuccess(
    await api.post(`/project/${project.id}/injectables`).send({
      slug: `snippet-${uniqueToken()}`,
      type: 'snippet',
      mode: 'inject',
      target_path: '#pro',
      content: text,
      secret,
      only_if_paid: true,
    }),
    201,
  );
  const bytes = Buffer.concat([Buffer.from([0, 255, 0, 128]), randomBytes(600)]);
  const fileName = 'pro-bündle.bin';
  const upload = api.post(`/project/${project.id}/injectables`);
  for (const [k, v] of Object.entries({
    slug: `file-${uniqueToken()}`,
    type: 'file',
    mode: 'write',
    secret,
    only_if_paid: 'true',
  }))
    upload.field(k, v);
  const file = expectSuccess(await upload.attach('file', bytes, fileName), 201);
  const free = expectSuccess(
    await api.post(`/project/${project.id}/injectables`).send({
      slug: `free-${uniqueToken()}`,
      type: 'snippet',
      mode: 'inject',
      content: 'free',
      secret,
      only_if_paid: false,
    }),
    201,
  );

  return {
    baseUrl: `${t.url}/api/v1`,
    projectId: project.id,
    publicKey: signingKey.public_key,
    publicKeyPem: signingKey.public_key_pem,
    otherPublicKey: otherKey.public_key,
    secret,
    domain: domain.domain,
    licenseKey: license.uuid,
    revokedLicenseKey: revoked.uuid,
    injectables: [
      { slug: snippet.slug, type: 'snippet', text, fileName: null, bytes: null },
      { slug: file.slug, type: 'file', text: null, fileName, bytes: bytes.toString('base64') },
    ],
    freeSlug: free.slug,
  };
}
