import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A host name as LicenseGate stores and compares it: lowercased, trailing dot removed, IDN as
 * punycode. Returns null for anything that is not a plain host name (a scheme, port, path, IP
 * literal or wildcard).
 */
export function normalizeDomain(input: unknown): string | null {
  if (typeof input !== 'string') return null;
  let host = input.trim().toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '' || host.length > 253) return null;
  if (/[\s/:@*?#[\]\\]/.test(host) || isIP(host) !== 0) return null;
  const ascii = domainToASCII(host);
  if (!ascii || ascii.length > 253 || isIP(ascii) !== 0) return null;
  const labels = ascii.split('.');
  if (!labels.every((label) => LABEL.test(label))) return null;
  // A dotted name that ends in a number is an IPv4 literal in disguise (e.g. 1.2.3.0x4).
  if (labels.length > 1 && /^[0-9]+$/.test(labels[labels.length - 1])) return null;
  return ascii;
}

/** The host of an Origin or Referer value, or null. */
export function hostOfUrl(value: string | undefined): string | null {
  if (!value) return null;
  try {
    return new URL(value).hostname || null;
  } catch {
    return null;
  }
}
