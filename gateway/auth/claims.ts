// Who the realm's tokens say the user is: the claims the gateway reads (OAUTH_ROLES_CLAIM,
// OAUTH_GROUPS_CLAIM, OAUTH_TENANTS_CLAIM, email, name), from tokens already verified by
// gateway/auth/authenticator.ts. Whether those roles make a chat admin is policies/admin-scoping.ts.
import type { JWTPayload } from 'jose';
import type { Settings } from '../../config/settings.js';

/** Where the roles, groups and tenants are (OAUTH_ROLES_CLAIM, OAUTH_GROUPS_CLAIM, OAUTH_TENANTS_CLAIM). */
export type ClaimNames = Pick<Settings['oidc'], 'rolesClaim' | 'groupsClaim' | 'tenantsClaim'>;
import type { SessionUser } from './session-cookie.js';
import { firstTenant } from '../../policies/tenancy.js';

/** A claim by name, or by dotted path (`realm_access.roles`); a literal dotted name wins. */
function claimAt(claims: Record<string, unknown> | undefined, path: string): unknown {
  if (!claims) return undefined;
  if (path in claims) return claims[path];
  let v: unknown = claims;
  for (const part of path.split('.')) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** An array of strings, or a comma-separated string. */
function stringList(v: unknown): string[] {
  const raw = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',') : [];
  return raw
    .filter((x): x is string => typeof x === 'string')
    .map((s) => s.trim())
    .filter(Boolean);
}

const union = (...lists: string[][]) => [...new Set(lists.flat())];
const firstString = (...vs: unknown[]) => vs.find((v): v is string => typeof v === 'string' && v.trim() !== '')?.trim();

/**
 * The user from verified claims. Roles: OAUTH_ROLES_CLAIM in the ID token, userinfo and access
 * token, plus the access token's `realm_access.roles` (where Keycloak puts realm roles by default).
 * No email: not an identity (the chat front-end keys its users by email).
 */
export function userFromClaims(
  o: ClaimNames,
  sources: { id?: JWTPayload; userinfo?: Record<string, unknown>; access?: JWTPayload },
): SessionUser | { error: string } {
  const { id, userinfo, access } = sources;
  const all = [id, userinfo, access].filter((c): c is Record<string, unknown> => !!c);
  const subs = new Set(all.map((c) => c.sub).filter((s) => typeof s === 'string'));
  if (subs.size !== 1) return { error: subs.size ? 'the tokens name different subjects' : 'no subject' };
  const email = firstString(...all.map((c) => c.email));
  if (!email) return { error: 'no email claim' };
  return {
    sub: [...subs][0] as string,
    email,
    name: firstString(...all.map((c) => c.name), ...all.map((c) => c.preferred_username)) ?? email,
    roles: union(...all.map((c) => stringList(claimAt(c, o.rolesClaim))), stringList(claimAt(access, 'realm_access.roles'))),
    groups: union(...all.map((c) => stringList(claimAt(c, o.groupsClaim)))),
    tenants: union(...all.map((c) => stringList(claimAt(c, o.tenantsClaim)))),
  };
}

export const defaultTenant = (u: SessionUser): string | null => firstTenant(u.tenants);
