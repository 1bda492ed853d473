// Entitlements as the console edits them: one `code = value` a line. Checked here by the API's rules
// (docs/plans.md) before anything is sent, so a mistake is shown beside the field, naming the code.
import { ApiFailure } from './api';

export type Entitlements = Record<string, boolean | number | string>;

const CODE = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const MAX_KEYS = 100;
const MAX_INT = 2147483647;
const MAX_CHARS = 200;

/** `code = value` lines, in the object's order: what the editor shows. */
export function formatEntitlements(entitlements: Entitlements | null | undefined): string {
  return Object.entries(entitlements ?? {})
    .map(([code, value]) => `${code} = ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`)
    .join('\n');
}

/**
 * The editor's text as entitlements: `true`/`false` are booleans, digits an integer, anything else a
 * string (quotes optional). Throws an ApiFailure on `field`, naming the line's code, as the API would.
 */
export function parseEntitlements(text: string, field = 'entitlements'): Entitlements {
  const fail = (message: string) => new ApiFailure(message, 422, { [field]: [message] });
  const out: Entitlements = {};
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  for (const [i, line] of lines.entries()) {
    const at = line.indexOf('=');
    if (at < 0) throw fail(`Line ${i + 1} must read "code = value".`);
    const code = line.slice(0, at).trim();
    const raw = line.slice(at + 1).trim();
    if (!CODE.test(code))
      throw fail(
        `The entitlements key "${code}" must be 1 to 64 lowercase letters, digits, "_", "." or "-", starting with a letter or digit.`,
      );
    let value: boolean | number | string;
    if (raw === 'true' || raw === 'false') value = raw === 'true';
    else if (/^\d+$/.test(raw)) value = Number(raw);
    else value = /^".*"$/.test(raw) ? (JSON.parse(raw) as string) : raw;
    if (
      (typeof value === 'number' && value > MAX_INT) ||
      (typeof value === 'string' && [...value].length > MAX_CHARS)
    )
      throw fail(
        `The entitlements value of "${code}" must be true or false, an integer from 0 to ${MAX_INT}, or a string of at most ${MAX_CHARS} characters.`,
      );
    out[code] = value;
  }
  if (Object.keys(out).length > MAX_KEYS)
    throw fail(`The entitlements field must not have more than ${MAX_KEYS} keys.`);
  return out;
}
