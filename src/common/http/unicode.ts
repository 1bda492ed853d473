import type { FieldErrors } from './envelope.js';
import { label } from './validators.js';

// (ES2024: in every Node this service runs on, typed here because the project's lib is ES2023.)
const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

const UNPAIRED = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A key as it appears in a field path: unpaired surrogates spelled `\ud800`, so that the path is valid text. */
const shown = (key: string): string =>
  isWellFormed(key) ? key : key.replace(UNPAIRED, (unit) => `\\u${unit.charCodeAt(0).toString(16)}`);

const MAX_REPORTED = 20;

/**
 * Field errors for every string in `value` (a parsed JSON body, a DTO) that is not valid Unicode text:
 * one with an unpaired surrogate (`"\ud800"` in JSON) cannot be stored as it is: UTF-8, which both
 * databases store, has no code for it, and the drivers would write U+FFFD in its place. Keyed by the
 * field's path (`meta.tags.0`), at most 20. Walked without recursion: a decoded `meta` may nest
 * thousands deep.
 */
export function unpairedSurrogates(value: unknown): FieldErrors | null {
  const errors: FieldErrors = {};
  let count = 0;
  const report = (path: string, message: string) => {
    errors[path] = [message];
    count++;
  };
  // Depth first, children in order, so that errors (and the message, the first of them) follow the body.
  const pending: Array<{ item: unknown; path: string; badKey?: boolean }> = [{ item: value, path: '' }];
  while (pending.length > 0 && count < MAX_REPORTED) {
    const { item, path, badKey } = pending.pop() as (typeof pending)[number];
    if (badKey)
      report(path, `The ${path} field name must be valid Unicode text (it contains an unpaired surrogate).`);
    if (typeof item === 'string') {
      if (!isWellFormed(item))
        report(
          path,
          `The ${path.includes('.') ? path : label(path)} field must be valid Unicode text (it contains an unpaired surrogate).`,
        );
    } else if (item !== null && typeof item === 'object') {
      const entries = Object.entries(item as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        pending.push({
          item: child,
          path: path ? `${path}.${shown(key)}` : shown(key),
          badKey: !isWellFormed(key),
        });
      }
    }
  }
  return count > 0 ? errors : null;
}
