/** The roles of a membership, from most to least able (docs/security.md#roles). */
export const ROLES = ['owner', 'admin', 'developer', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
