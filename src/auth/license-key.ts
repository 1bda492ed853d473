import type { Request } from 'express';

/** The license key: X-LICENSE-KEY, else a `license` query or body parameter (SPEC 7). */
export function licenseKeyOf(req: Request): string | null {
  const header = req.headers['x-license-key'];
  const candidates = [Array.isArray(header) ? header[0] : header, req.query?.license, (req.body as { license?: unknown } | undefined)?.license];
  for (const value of candidates) if (typeof value === 'string' && value.trim() !== '') return value.trim();
  return null;
}
