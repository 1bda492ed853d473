import { getMetadataStorage } from 'class-validator';
import { EnvironmentVariables, OPTIONAL_KEYS } from './app-config.js';

/** Every setting the service reads, in the schema's order, then those without a default. */
export function settingNames(): string[] {
  return [...Object.keys(new EnvironmentVariables()), ...OPTIONAL_KEYS];
}

/** What the schema's validators take for `key`, in words. */
function accepted(key: string): string {
  const rules = getMetadataStorage()
    .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
    .filter((m) => m.propertyName === key);
  const rule = (name: string) => rules.find((m) => m.name === name);
  const isIn = rule('isIn');
  if (isIn) return `one of ${(isIn.constraints[0] as string[]).join(', ')}`;
  if (rule('isBoolean')) return 'true or false';
  if (rule('isInt')) {
    const min = rule('min')?.constraints[0] as number | undefined;
    const max = rule('max')?.constraints[0] as number | undefined;
    if (min !== undefined && max !== undefined) return `an integer from ${min} to ${max}`;
    if (min !== undefined) return `an integer, at least ${min}`;
    return 'an integer';
  }
  const matches = rule('matches');
  if (matches && typeof matches.message === 'string') return matches.message;
  return 'text';
}

/**
 * `--help`: one line a setting, made from the schema (its names, defaults and validators), so that it
 * cannot drift from what start-up checks.
 */
export function settingsHelp(): string {
  const defaults = new EnvironmentVariables() as unknown as Record<
    string,
    string | number | boolean | undefined
  >;
  const names = settingNames();
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.map((name) => {
    const value = defaults[name];
    const shown = value === undefined ? 'unset' : `default ${String(value)}`;
    return `  ${name.padEnd(width)}  ${accepted(name)} (${shown})`;
  });
  return [
    'Usage: npm start (or node dist/src/main.js). Settings are read from the environment, and from .env when present:',
    ...lines,
    'Details: docs/operations.md and .env.example.',
  ].join('\n');
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const kept = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = kept;
    }
  }
  return row[b.length];
}

/** Prefixes that other software uses too: a variable of theirs is none of ours. */
const SHARED_PREFIXES = new Set(['NODE', 'HTTP', 'HTTPS', 'LOG', 'MAX', 'CACHE', 'COUNTRY', 'TRUST']);

/**
 * A warning for each variable that looks like one of ours but is not (DATABASE_PATH, LG_PORT): the
 * first word of a setting, or LG_ / LICENSEGATE_, with the nearest setting named. A misspelt setting
 * would otherwise be ignored in silence, its default used.
 */
export function unknownSettings(source: Record<string, string | undefined>): string[] {
  const names = settingNames();
  const known = new Set(names);
  const prefixes = new Set(
    names.map((n) => n.split('_')[0]).filter((p) => p !== '' && !SHARED_PREFIXES.has(p)),
  );
  prefixes.add('LG');
  prefixes.add('LICENSEGATE');
  return Object.keys(source)
    .filter((key) => !known.has(key) && key.includes('_') && prefixes.has(key.split('_')[0]))
    .sort()
    .map((key) => {
      const bare = key.replace(/^(LG|LICENSEGATE)_/, '');
      const nearest = names.reduce((best, name) =>
        distance(bare, name) < distance(bare, best) ? name : best,
      );
      return `${key} is not a setting LicenseGate reads (the nearest is ${nearest}); node dist/src/main.js --help lists them.`;
    });
}
