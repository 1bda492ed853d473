import { KeyObject, sign } from 'node:crypto';

/** What an offline token vouches for (docs/decisions.md#signed-answers-and-offline-tokens). */
export interface OfflineTokenPayload {
  project_id: number;
  license_id: number;
  /** hex SHA-256 of the license key as sent */
  key_sha256: string;
  /** the host the answer was evaluated for; null for action=check_project */
  domain: string | null;
  has_paid: true;
  is_test_license: boolean;
  /** The license's plan code and effective entitlements, when it has a plan or entitlements of its own. */
  plan?: string | null;
  entitlements?: Record<string, boolean | number | string>;
  /** unix seconds */
  iat: number;
  exp: number;
}

/** `LG1.<base64url(payload JSON)>.<base64url(Ed25519 over "LG1-TOKEN\n" + the payload part)>`. */
export function offlineToken(key: KeyObject, payload: OfflineTokenPayload): string {
  const part = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  return `LG1.${part}.${sign(null, Buffer.from(`LG1-TOKEN\n${part}`, 'utf8'), key).toString('base64url')}`;
}
