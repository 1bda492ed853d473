/**
 * @licensegate/sdk — runtime SDK for LicenseGate.
 * Zero dependencies: `globalThis.fetch` and `globalThis.crypto.subtle` only (Node >= 20, modern browsers).
 */
export { createClient, normalizeBaseUrl, parseRetryAfter } from './client.js';
export type {
  ClientOptions,
  DeactivateOptions,
  FetchInit,
  FetchLike,
  FetchResponseLike,
  HasPaidOptions,
  LicenseGateClient,
  StreamOptions,
} from './client.js';
export {
  contentHash,
  decrypt,
  decryptBlob,
  decryptFileName,
  decryptText,
  importPublicKey,
  sha256Hex,
  signedMessage,
  verify,
} from './crypto.js';
export type { PublicKeyInput } from './crypto.js';
export { DecryptionError, LicenseGateError } from './errors.js';
export type { FieldErrors, LicenseGateErrorCode, LicenseGateErrorInit } from './errors.js';
export { fileStore, localStorageStore, memoryStore } from './offline.js';
export type { TokenStore } from './offline.js';
export { answerProblem, answerText, newNonce, normalizeDomain, openOfflineToken } from './signed.js';
export type { AnswerParts, OfflineTokenPayload } from './signed.js';
export { fromBase64, fromHex, toBase64, toHex } from './base64.js';
export { LG1_SCRYPT, scrypt } from './scrypt.js';
export type { ScryptParams } from './scrypt.js';
export type {
  DeactivateResult,
  Entitlements,
  HasPaidResult,
  InjectableMode,
  InjectableType,
  PaidInjectable,
  SealedItem,
  SigningKey,
  StreamInjectable,
  UsageResult,
} from './types.js';
