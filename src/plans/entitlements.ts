/**
 * Entitlements (docs/plans.md): what a plan, or a license over it, grants, as `{code: value}`. A
 * value is a boolean, an integer 0–2147483647 or a string of at most 200 characters; an integer whose
 * code starts with `meter.` is a quota per UTC calendar month (meters.ts).
 */
export type EntitlementValue = boolean | number | string;
export type Entitlements = Record<string, EntitlementValue>;

export const PLAN_CODE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const ENTITLEMENT_CODE = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const MAX_ENTITLEMENTS = 100;
export const MAX_ENTITLEMENT_INT = 2_147_483_647;
export const MAX_ENTITLEMENT_CHARS = 200;
export const METER_PREFIX = 'meter.';

export const PLAN_CODE_INVALID =
  'The code must be 1 to 64 lowercase letters, digits, "_" or "-", starting with a letter or digit.';

function valueAllowed(value: unknown): boolean {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 && value <= MAX_ENTITLEMENT_INT;
  return typeof value === 'string' && [...value].length <= MAX_ENTITLEMENT_CHARS;
}

/** What is wrong with a sent `entitlements` value, naming the key at fault; null when nothing is. */
export function entitlementsProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'The entitlements field must be a JSON object.';
  const keys = Object.keys(value);
  if (keys.length > MAX_ENTITLEMENTS)
    return `The entitlements field must not have more than ${MAX_ENTITLEMENTS} keys.`;
  for (const key of keys) {
    if (!ENTITLEMENT_CODE.test(key))
      return `The entitlements key "${key.slice(0, 80)}" must be 1 to 64 lowercase letters, digits, "_", "." or "-", starting with a letter or digit.`;
    if (!valueAllowed((value as Record<string, unknown>)[key]))
      return `The entitlements value of "${key}" must be true or false, an integer from 0 to ${MAX_ENTITLEMENT_INT}, or a string of at most ${MAX_ENTITLEMENT_CHARS} characters.`;
  }
  return null;
}

/** The plan's entitlements overridden key by key by the license's. */
export function effectiveEntitlements(
  plan: Entitlements | null | undefined,
  overrides: Entitlements | null | undefined,
): Entitlements {
  return { ...(plan ?? {}), ...(overrides ?? {}) };
}

/** The meters among entitlements: integer values whose code starts with `meter.`. */
export function metersOf(entitlements: Entitlements): Array<[string, number]> {
  return Object.entries(entitlements).filter(
    (entry): entry is [string, number] => entry[0].startsWith(METER_PREFIX) && typeof entry[1] === 'number',
  );
}
