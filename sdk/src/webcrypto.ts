/**
 * The slice of WebCrypto the SDK uses, typed structurally so this package compiles with or without
 * the DOM lib (and with `@types/node`), and reached through `globalThis.crypto.subtle` only.
 */

/** Bytes as WebCrypto takes them. */
export type Bytes = Uint8Array | ArrayBuffer;

/** An opaque WebCrypto key handle. */
export interface KeyHandle {
  readonly type: string;
  readonly algorithm: unknown;
}

export interface Subtle {
  importKey(
    format: 'raw' | 'spki',
    keyData: Bytes,
    algorithm: unknown,
    extractable: boolean,
    usages: string[],
  ): Promise<KeyHandle>;
  deriveBits(algorithm: unknown, baseKey: KeyHandle, length: number): Promise<ArrayBuffer>;
  decrypt(algorithm: unknown, key: KeyHandle, data: Bytes): Promise<ArrayBuffer>;
  verify(algorithm: unknown, key: KeyHandle, signature: Bytes, data: Bytes): Promise<boolean>;
  digest(algorithm: string, data: Bytes): Promise<ArrayBuffer>;
}

/** `globalThis.crypto.subtle`, or a clear error where there is none (e.g. an insecure browser context). */
export function subtle(): Subtle {
  const c = (globalThis as unknown as { crypto?: { subtle?: Subtle } }).crypto;
  if (!c?.subtle) {
    throw new Error(
      '@licensegate/sdk needs WebCrypto (globalThis.crypto.subtle): Node >= 20, or a browser page served over HTTPS or from localhost.',
    );
  }
  return c.subtle;
}

/** UTF-8 encoding without depending on TextEncoder's typings. */
export function utf8(text: string): Uint8Array {
  const Encoder = (globalThis as unknown as { TextEncoder: new () => { encode(s: string): Uint8Array } })
    .TextEncoder;
  return new Encoder().encode(text);
}

/** UTF-8 decoding (invalid sequences become U+FFFD). */
export function fromUtf8(bytes: Uint8Array): string {
  const Decoder = (globalThis as unknown as { TextDecoder: new () => { decode(b: Uint8Array): string } })
    .TextDecoder;
  return new Decoder().decode(bytes);
}
