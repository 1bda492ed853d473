/** Injectable types and modes the service knows; kept open for forward compatibility. */
export type InjectableType = 'snippet' | 'html' | 'script' | 'style' | 'file' | (string & {});
export type InjectableMode = 'inject' | 'write' | 'replace' | 'append' | 'prepend' | (string & {});

/** A paid-only injectable as `POST /project/has-paid?include=injectables` returns it, fields as sent. */
export interface PaidInjectable {
  id: number;
  slug: string;
  title: string | null;
  type: InjectableType;
  mode: InjectableMode;
  target_path: string | null;
  /** base64 of the encrypted LG1 blob */
  content: string;
  /** base64 of the encrypted original file name (type `file`), else null */
  file_path: string | null;
  is_active: boolean;
  only_if_paid: boolean;
  meta: Record<string, unknown>;
  /**
   * Not sent by has-paid: filled in by `client.withSignatures()`
   * from the injectable stream, null when the stream had no matching item.
   */
  signature?: string | null;
}

/** One item of `GET /injectable/stream`, fields as sent. */
export interface StreamInjectable {
  slug: string;
  type: InjectableType;
  mode: InjectableMode;
  /** base64 of the encrypted LG1 blob */
  encrypted_content: string;
  file_path: string | null;
  target_path: string | null;
  /** base64 Ed25519 signature */
  signature: string;
  meta: Record<string, unknown>;
}

/** Anything carrying an encrypted payload: a stream item, a has-paid item or a full management record. */
export interface SealedItem {
  slug?: string;
  type?: string;
  mode?: string;
  target_path?: string | null;
  encrypted_content?: string | null;
  content?: string | null;
  file_path?: string | null;
  content_hash?: string | null;
  signature?: string | null;
}

/** The answer of `client.hasPaid()`. */
export interface HasPaidResult {
  hasPaid: boolean;
  isTestLicense: boolean;
  /** the project's `default_redirect_url` when `hasPaid` is false, else null */
  redirectUrl: string | null;
  /** the active paid-only injectables; empty unless `includeInjectables` and `hasPaid` */
  injectables: PaidInjectable[];
  /** true when the service could not be reached and the answer comes from a stored offline token */
  offline: boolean;
  /** when answering offline: when the token expires (then the client fails closed); else null */
  expiresAt: Date | null;
  /**
   * While a payment grace runs (the vendor's payment provider reported a failed or cancelled payment):
   * when the gate closes unless paid again; `hasPaid` is true until then. Null otherwise (and offline).
   */
  graceUntil: Date | null;
  /**
   * The license's plan code (null: entitlements of its own, no plan). Present only when the service
   * sent it: for a license with a plan or entitlements of its own.
   */
  plan?: string | null;
  /** The license's effective entitlements when paid, `{}` when unpaid; present with `plan`. */
  entitlements?: Entitlements;
}

/** What a license is entitled to: code → boolean, integer or string (`meter.*` integers are monthly quotas). */
export type Entitlements = Record<string, boolean | number | string>;

/** The answer of `client.record()`: the meter this UTC month, after the call. */
export interface UsageResult {
  meter: string;
  used: number;
  limit: number;
  remaining: number;
  /** The start of the next UTC month, when the meter starts again. */
  resetsAt: Date | null;
}

/** The answer of `client.deactivate()`. */
export interface DeactivateResult {
  /** Activations of the host that were deleted: 0 when the license had none there. */
  deactivated: number;
}

/** `GET /project/{id}/signing-key` data; either key form is enough. */
export interface SigningKey {
  algorithm?: string;
  public_key?: string;
  public_key_pem?: string;
}
