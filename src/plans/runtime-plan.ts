import type { LicenseEntity } from '../licenses/license.entity.js';
import { effectiveEntitlements, type Entitlements } from './entitlements.js';
import type { PlanEntity } from './plan.entity.js';

/** What the runtime answers of a license's plan: its code and the effective entitlements. */
export interface RuntimePlan {
  code: string | null;
  entitlements: Entitlements;
}

/**
 * The runtime view of a license's plan, made once when the license is loaded (the runtime lookup
 * caches it with the license, and a plan edit, a write to the project, reloads it). Null for a
 * license with neither a plan nor entitlements of its own: its answers stay as they were.
 */
export function runtimePlan(license: LicenseEntity, plan: PlanEntity | null): RuntimePlan | null {
  const own = plan && plan.project_id === license.project_id ? plan : null;
  if (!own && license.entitlements === null) return null;
  return {
    code: own?.code ?? null,
    entitlements: effectiveEntitlements(own?.entitlements, license.entitlements),
  };
}

/**
 * A license on a plan takes the plan's limits where it leaves its own null. Applied to the copy the
 * runtime lookup loaded, so every limit the gate enforces (max_domains, max_subdomains_per_domain,
 * max_usage_per_day) and its refusal messages read the limit in force.
 */
export function applyPlanLimits(license: LicenseEntity, plan: PlanEntity | null): void {
  if (!plan || plan.project_id !== license.project_id) return;
  license.max_domains ??= plan.max_domains;
  license.max_subdomains_per_domain ??= plan.max_subdomains_per_domain;
  license.max_usage_per_day ??= plan.max_usage_per_day;
}

/**
 * `data.plan` and `data.entitlements` of a has-paid answer: the plan code and the effective
 * entitlements when it is paid (a grace included); null and `{}` when unpaid, which grants nothing.
 * Added last, after is_test_license.
 */
export function addPlan<T extends object>(
  result: T,
  plan: RuntimePlan | null | undefined,
  paid: boolean,
): T & { plan?: string | null; entitlements?: Entitlements } {
  if (!plan) return result;
  return Object.assign(
    result,
    paid ? { plan: plan.code, entitlements: plan.entitlements } : { plan: null, entitlements: {} },
  );
}
