// Which tenant is active for a signed-in user (links-10 and links-11), and whether a tenant switch
// (POST /auth/session/tenant) is allowed. Pure: the user's tenants (from the token's TENANTS_CLAIM)
// and what was asked -> a value with the rule that made it. gateway/auth/authenticator.ts carries
// it out.
import { isIdSyntax } from './syntax.js';

export interface ActiveTenant {
  active: string | null;
  rule: string;
}

/** A user's first tenant, or none: the active tenant when nothing else chooses one (a bearer token's). */
export const firstTenant = (tenants: readonly string[]): string | null => tenants[0] ?? null;

/**
 * At sign-in: the tenant whose link was followed (`linked`) becomes active when the user is a
 * member of it (links-10); a user of a provider shared by several tenants who is not a member
 * signs in all the same, into their own first tenant (links-11), and `member` is false.
 */
export function activeTenantAtSignIn(tenants: readonly string[], linked: string | undefined): ActiveTenant & { member: boolean } {
  if (linked === undefined) return { active: firstTenant(tenants), member: false, rule: 'no tenant link: the first tenant' };
  if (tenants.includes(linked)) return { active: linked, member: true, rule: 'links-10: the linked tenant, a member' };
  return { active: firstTenant(tenants), member: false, rule: 'links-11: the linked tenant, not a member: the first tenant' };
}

/** At refresh: the active tenant stays while the renewed tenants still hold it, else the first tenant. */
export function activeTenantAtRefresh(tenants: readonly string[], current: string | null | undefined): ActiveTenant {
  if (current && tenants.includes(current)) return { active: current, rule: 'still a member: unchanged' };
  return { active: firstTenant(tenants), rule: current ? 'no longer a member: the first tenant' : 'none active: the first tenant' };
}

export type TenantSwitch = { allow: true; tenant: string; rule: string } | { allow: false; status: 400 | 403; detail: string; rule: string };

/** POST /auth/session/tenant: a tenant id (400 otherwise) the user is a member of (403 otherwise). */
export function tenantSwitch(tenants: readonly string[], requested: unknown): TenantSwitch {
  if (!isIdSyntax(requested)) return { allow: false, status: 400, detail: 'tenant_id must be a tenant id', rule: 'not a tenant id' };
  if (!tenants.includes(requested)) return { allow: false, status: 403, detail: 'Not a member of this tenant', rule: 'links-11: not a member' };
  return { allow: true, tenant: requested, rule: 'a member' };
}
